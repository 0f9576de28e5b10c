// The profile page: name, given and family name, picture; the e-mail address and its change.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SessionContext } from '../../src/domain/session.js';
import { type AccountContext, Form, missing, PageQuery, refusal, text } from './context.js';
import type { FormErrors } from './layout.js';
import * as views from './views.js';

/** The service's field names (and the first-party API's) to the form's. */
const PROFILE_FIELDS: Record<string, string> = {
  name: 'name',
  givenName: 'given_name',
  given_name: 'given_name',
  familyName: 'family_name',
  family_name: 'family_name',
  picture: 'picture',
};

export function registerProfilePages(context: AccountContext) {
  const { app, loginPath, csrfToken, signedIn, signedInPost, done, meta, page, me } = context;

  async function render(
    request: FastifyRequest,
    reply: FastifyReply,
    ctx: SessionContext,
    o: { status?: number; errors?: FormErrors; values?: Record<string, string>; newEmail?: string; m?: string } = {},
  ) {
    const profile = await me().profile(ctx.user.id);
    const body = views.profilePage({
      loginPath,
      csrf: csrfToken(request, reply),
      email: profile.email,
      status: views.statusMessage(o.m),
      profile,
      errors: o.errors,
      ...(o.values && { values: o.values }),
      ...(o.newEmail !== undefined && { newEmail: o.newEmail }),
    });
    return page(reply, body, o.status ?? 200);
  }

  app.get('/', { schema: { querystring: PageQuery } }, async (request, reply) => {
    const ctx = await signedIn(request, reply, '');
    if (!ctx) return reply;
    return render(request, reply, ctx, { ...(request.query.m && { m: request.query.m }) });
  });

  app.post('/profile', { schema: { body: Form } }, async (request, reply) => {
    const ctx = await signedInPost(request, request.body, reply, '');
    if (!ctx) return reply;
    const form = request.body;
    const values: Record<string, string> = {};
    const change: Record<string, string | null> = {};
    // A field the form did not send stays as it is; an empty one is cleared.
    for (const [field, key] of [
      ['name', 'name'],
      ['given_name', 'givenName'],
      ['family_name', 'familyName'],
      ['picture', 'picture'],
    ] as const) {
      if (form[field] === undefined) continue;
      values[field] = text(form, field);
      change[key] = values[field].trim() || null;
    }
    try {
      await me().updateProfile(ctx.user.id, change, meta(request));
    } catch (error) {
      const { status, errors } = refusal(reply, error, 'profile', { fields: PROFILE_FIELDS });
      return render(request, reply, ctx, { status, errors, values });
    }
    return done(reply, '', 'profile-saved');
  });

  app.post('/email', { schema: { body: Form } }, async (request, reply) => {
    const ctx = await signedInPost(request, request.body, reply, '');
    if (!ctx) return reply;
    const newEmail = text(request.body, 'new_email').trim();
    const password = text(request.body, 'password');
    const empty = missing('email', [
      ['new_email', !newEmail, 'Enter the new e-mail address'],
      ['password', !password, 'Enter your current password'],
    ]);
    if (empty) return render(request, reply, ctx, { status: 400, errors: empty, newEmail });
    try {
      await me().requestEmailChange(ctx.user.id, { newEmail, password }, meta(request));
    } catch (error) {
      const { status, errors } = refusal(reply, error, 'email', {
        codes: { INVALID_PASSWORD: 'password', EMAIL_TAKEN: 'new_email' },
        fields: { newEmail: 'new_email', email: 'new_email', new_email: 'new_email', password: 'password' },
      });
      return render(request, reply, ctx, { status, errors, newEmail });
    }
    return done(reply, '', 'email-sent');
  });
}
