// What the admin web's route modules share: the form schemas and readers, the notices, and the context built
// once per plugin instance (config, CSRF, page helpers, the admin checks).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import type { Config } from '../../src/config.js';
import type { FieldProblem } from '../../src/errors.js';
import type { SessionContext } from '../../src/domain/session.js';
import { hasSecondFactor } from '../../src/domain/mfa.js';
import { createCsrf } from '../infra/browser-session.js';
import { sendPage } from '../pages/kit.js';
import * as views from './views.js';

/** The plugin's Fastify instance (TypeBox type provider). */
export type App = Parameters<FastifyPluginAsyncTypebox>[0];

export const Form = Type.Record(
  Type.String({ maxLength: 64 }),
  Type.Union([Type.String({ maxLength: 20000 }), Type.Array(Type.String({ maxLength: 2048 }), { maxItems: 100 })]),
);
export type FormBody = Record<string, string | string[]>;
export const ListQuery = Type.Object({
  q: Type.Optional(Type.String({ maxLength: 200 })),
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
  done: Type.Optional(Type.String({ maxLength: 32 })),
});

const NOTICES: Record<string, string> = {
  created: 'Created.',
  saved: 'Saved.',
  enabled: 'Enabled.',
  disabled: 'Disabled.',
  deleted: 'Deleted.',
  verified: 'E-mail address marked as verified.',
  'sessions-revoked': 'Every session of this user was revoked.',
  'grants-revoked': 'Every grant of this user was revoked.',
  rotated: 'Keys rotated: the next key is now current.',
  'secret-revoked': 'Client secret revoked: it no longer authenticates.',
  'factor-removed': 'Second factor removed; every session of this user ended and the user was told by mail.',
  'factors-reset': 'Every second factor removed; every session of this user ended and the user was told by mail.',
  'key-rotated': 'New key made: register the public key below at the provider; the old one no longer signs.',
  unlinked: 'Identity unlinked: it no longer signs in to this account.',
};

export const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
export const lines = (v: string | string[] | undefined) =>
  (first(v) ?? '')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);
export const many = (v: string | string[] | undefined) => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
export const optional = (v: string | string[] | undefined) => (first(v) ?? '').trim() || null;

/** Service problems ("redirectUris.2", "clientName") onto form fields ("redirectUris", line numbers kept). */
export function fieldErrors(problems: FieldProblem[] | undefined): views.Errors {
  const errors: views.Errors = {};
  for (const p of problems ?? []) {
    const [name, index] = p.field.split(/[./]/);
    const message = index !== undefined && /^\d+$/.test(index) ? `Line ${Number(index) + 1}: ${p.message}` : p.message;
    if (name && !errors[name]) errors[name] = message;
  }
  return errors;
}

export interface Admin {
  ctx: SessionContext;
  frame: views.Frame;
  actor: { actor: string; ip: string };
}

export type AdminContext = ReturnType<typeof createAdminContext>;

/** The context of one admin web plugin instance, shared by its route modules. */
export function createAdminContext(app: App, config: Config, adminPath: string) {
  const csrf = createCsrf(config);
  const signIn = (returnTo: string) => `${config.loginUrl}/sign-in?return_to=${encodeURIComponent(returnTo)}`;
  const abs = (path: string) => `${config.adminUrl}${path}`;

  const page = sendPage;
  const see = (reply: FastifyReply, location: string) => reply.code(303).header('location', location).send();

  /**
   * The signed-in admin, or undefined after answering: sign-in redirect (back to `returnPath`), 403 for
   * a non-admin, under ADMIN_MFA=required an admin whose session lacks a second factor (to enrol one, or to give
   * it: adminMfa), or (fresh) a new sign-in when the password is older than ADMIN_FRESHNESS.
   */
  async function requireAdmin(
    request: FastifyRequest,
    reply: FastifyReply,
    options: { returnPath?: string; fresh?: boolean } = {},
  ): Promise<Admin | undefined> {
    const returnPath = options.returnPath ?? request.url.slice(adminPath.length);
    const ctx = await app.currentSession(request);
    if (!ctx) {
      see(reply, signIn(abs(returnPath)));
      return undefined;
    }
    if (ctx.user.role !== 'admin') {
      page(
        reply,
        views.messagePage(adminPath, {
          title: 'Not an administrator',
          message: `You are signed in as ${ctx.user.email}, which is not an administrator account.`,
          link: { href: signIn(abs(returnPath)), text: 'Sign in with another account' },
        }),
        403,
      );
      return undefined;
    }
    if (!(await adminMfa(ctx, reply, returnPath))) return undefined;
    if (options.fresh && Date.now() - new Date(ctx.session.auth_time).getTime() > config.ttl.adminFreshness * 1000) {
      see(reply, `${signIn(abs(returnPath))}&prompt=login`);
      return undefined;
    }
    const done = (request.query as { done?: string } | undefined)?.done;
    return {
      ctx,
      frame: {
        adminPath,
        csrf: csrf.token(request, reply),
        email: ctx.user.email,
        loginUrl: config.loginUrl,
        notice: done ? NOTICES[done] : undefined,
      },
      actor: { actor: `admin:${ctx.user.email}`, ip: request.ip },
    };
  }

  /**
   * ADMIN_MFA=required (issue 34): an administrator's session must have a second factor (amr "mfa"). One who holds
   * none goes to enrol it on the sign-in methods page, one who holds a factor but signed in without it goes to the
   * second-factor page, which steps the session up; both come back to `returnPath`. False after answering.
   * The admin API (a bearer token, not a session) is not concerned.
   */
  async function adminMfa(ctx: SessionContext, reply: FastifyReply, returnPath: string): Promise<boolean> {
    if (config.mfa.admin !== 'required' || ctx.session.amr.includes('mfa')) return true;
    const back = encodeURIComponent(abs(returnPath));
    const enrolled = hasSecondFactor(await app.services.factors.summary(ctx.user.id));
    see(
      reply,
      enrolled
        ? `${config.loginUrl}/second-factor?return_to=${back}`
        : `${config.loginUrl}/account/sign-in-methods?return_to=${back}`,
    );
    return false;
  }

  /** Every POST: CSRF (double submit + Origin), then the admin check. */
  async function requireAdminPost(
    request: FastifyRequest,
    reply: FastifyReply,
    options: { returnPath: string; fresh?: boolean },
  ) {
    csrf.check(request, first((request.body as FormBody | undefined)?.csrf));
    return requireAdmin(request, reply, options);
  }

  return { app, config, adminPath, csrf, signIn, abs, page, see, requireAdmin, requireAdminPost };
}
