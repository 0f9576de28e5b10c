import t from 'tap';
import type { InjectOptions as Inject } from 'fastify';
import { sql } from 'kysely';
import { adminHeaders, buildTestApp } from '../helpers/app.js';
import { appendAuditEvent, listAuditEvents } from '../../db/repositories/audit.js';
import { hashToken } from '../../src/oauth/tokens.js';
import { obtainCode, obtainTokens, tokenRequest } from '../helpers/flow.js';
import { linkIn, startSmtp } from '../helpers/smtp.js';

const PASSWORD_TOO_COMMON_MESSAGE =
  'This password is one of the most common ones, which attackers try first; choose another';

// One app (and one database) for the whole file; every subtest makes the users it needs under its own e-mails.
const { app, database, logs } = await buildTestApp(t);
/** The provider's own verification (any argon2id cost: the parameters are in the hash). */
const verifyPassword = (hashed: string, password: string) => app.services.passwords.verify(hashed, password);

const BASE = '/api/admin/users';
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const EMAIL_PATTERN = 'must match pattern "^[^\\s@]+@[^\\s@]+$"';
const HTTP_NOT_LOOPBACK = 'http is allowed only for loopback hosts (localhost, 127.0.0.1, [::1]); use https';

let counter = 0;
/** An e-mail address of its own for each caller: the subtests share one database. */
const uniqueEmail = (label: string, domain = 'example.com') => `${label}-${process.pid}-${++counter}@${domain}`;

const admin = (options: Inject) => app.inject({ ...options, headers: { ...adminHeaders, ...options.headers } });

async function createUser(body: Record<string, unknown> = {}) {
  const res = await admin({ method: 'POST', url: BASE, payload: { email: uniqueEmail('user'), ...body } });
  if (res.statusCode !== 201) throw new Error(`create failed: ${res.statusCode} ${res.body}`);
  return res.json();
}

async function countRows(table: 'users' | 'audit_events') {
  const row = await database.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

async function storedHash(id: string) {
  const row = await database.db
    .selectFrom('users')
    .select('password_hash')
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
  return row.password_hash;
}

/** The user as the API shows it, for a created one with these fields (timestamps taken from `body`). */
function expectedUser(body: { id: string; createdAt: string; updatedAt: string }, fields: Record<string, unknown>) {
  return {
    id: body.id,
    email: fields.email,
    name: null,
    givenName: null,
    familyName: null,
    picture: null,
    emailVerified: false,
    permissions: [],
    disabled: false,
    role: 'user',
    hasPassword: false,
    createdAt: body.createdAt,
    updatedAt: body.updatedAt,
    ...fields,
  };
}

/** Every user of the list, page by page, asserting each page holds at most `limit` items. */
async function walk(tt: Pick<typeof t, 'equal' | 'ok'>, query: Record<string, string>, limit: number, maxPages = 200) {
  const seen: Array<{ id: string; email: string }> = [];
  let cursor: string | undefined;
  for (let page = 0; page < maxPages; page++) {
    const params = new URLSearchParams({ ...query, limit: String(limit), ...(cursor ? { cursor } : {}) });
    const res = await admin({ method: 'GET', url: `${BASE}?${params}` });
    tt.equal(res.statusCode, 200, `page ${page} is 200`);
    const body = res.json();
    tt.ok(body.items.length <= limit, `page ${page} holds at most ${limit} items`);
    seen.push(...body.items);
    if (body.nextCursor === undefined) return seen;
    cursor = body.nextCursor;
  }
  throw new Error(`the list did not end within ${maxPages} pages`);
}

t.test('authentication', async (t) => {
  t.test('no Authorization header is 401 with a Bearer challenge', async (t) => {
    const res = await app.inject({ method: 'GET', url: BASE });
    t.equal(res.statusCode, 401);
    t.same(res.json(), { error: 'UNAUTHORIZED', message: 'Send Authorization: Bearer <ADMIN_API_TOKEN>' });
    t.equal(res.headers['www-authenticate'], 'Bearer realm="admin"');
    t.equal(res.headers['cache-control'], 'no-store');
  });

  t.test('every user route requires the token, and a refused request changes nothing', async (t) => {
    const existing = await createUser({ name: 'Guarded' });
    const routes: Inject[] = [
      { method: 'GET', url: BASE },
      { method: 'POST', url: BASE, payload: { email: uniqueEmail('sneaky'), password: 'password123' } },
      { method: 'GET', url: `${BASE}/${existing.id}` },
      { method: 'GET', url: `${BASE}/${encodeURIComponent(existing.email)}` },
      { method: 'PATCH', url: `${BASE}/${existing.id}`, payload: { password: 'hijacked-pass' } },
      { method: 'POST', url: `${BASE}/${existing.id}/disable` },
      { method: 'POST', url: `${BASE}/${existing.id}/enable` },
      { method: 'DELETE', url: `${BASE}/${existing.id}` },
    ];
    const before = await countRows('users');
    for (const route of routes) {
      for (const headers of [
        {},
        { authorization: 'Bearer wrong' },
        { authorization: `Basic ${adminHeaders.authorization.slice(7)}` },
      ]) {
        const res = await app.inject({ ...route, headers });
        t.equal(res.statusCode, 401, `${route.method} ${route.url} with ${JSON.stringify(headers)}`);
        t.equal(res.json().error, 'UNAUTHORIZED');
        t.match(res.headers['www-authenticate'], /^Bearer realm="admin"/);
      }
    }
    t.equal(await countRows('users'), before);
    t.same((await admin({ method: 'GET', url: `${BASE}/${existing.id}` })).json(), existing);
  });

  t.test('lowercase bearer with the right token works', async (t) => {
    const res = await app.inject({
      method: 'GET',
      url: `${BASE}?limit=1`,
      headers: { authorization: adminHeaders.authorization.replace('Bearer', 'bearer') },
    });
    t.equal(res.statusCode, 200);
  });

  t.test('when ADMIN_API_TOKEN is unset (empty) the user routes do not exist', async (t) => {
    const { app: closed } = await buildTestApp(t, { env: { ADMIN_API_TOKEN: '' }, database });
    for (const [method, url] of [
      ['GET', BASE],
      ['POST', BASE],
      ['GET', `${BASE}/alice%40x.com`],
      ['PATCH', `${BASE}/some-id`],
    ] as const) {
      const res = await closed.inject({ method, url, headers: adminHeaders });
      t.equal(res.statusCode, 404, `${method} ${url}`);
      t.same(res.json(), { error: 'NOT_FOUND', message: `No route ${method} ${url}` });
    }
  });
});

t.test('creating users', async (t) => {
  t.test('with only an e-mail address: 201, a UUID id, Location, no password', async (t) => {
    const email = uniqueEmail('minimal');
    const res = await admin({ method: 'POST', url: BASE, payload: { email } });
    t.equal(res.statusCode, 201);
    t.equal(res.headers['cache-control'], 'no-store');
    const body = res.json();
    t.match(body.id, UUID);
    t.same(body, expectedUser(body, { email }));
    t.match(body.createdAt, ISO);
    t.equal(body.updatedAt, body.createdAt);
    t.equal(res.headers.location, `${BASE}/${body.id}`);
    t.equal(await storedHash(body.id), null);

    const fetched = await admin({ method: 'GET', url: res.headers.location as string });
    t.equal(fetched.statusCode, 200);
    t.same(fetched.json(), body);
  });

  t.test('with a password and every field: the password is hashed and never returned', async (t) => {
    const email = uniqueEmail('full');
    const password = 'correct horse battery staple';
    const fields = {
      email,
      name: 'Ada Lovelace',
      givenName: 'Ada',
      familyName: 'Lovelace',
      picture: 'https://cdn.example.com/ada.png',
      emailVerified: true,
      permissions: ['billing:read', 'admin'],
      disabled: false,
    };
    const res = await admin({ method: 'POST', url: BASE, payload: { ...fields, password } });
    t.equal(res.statusCode, 201);
    const body = res.json();
    t.same(body, expectedUser(body, { ...fields, hasPassword: true }));
    t.notOk('password' in body);
    t.notOk('passwordHash' in body);
    t.notOk(res.body.includes(password), 'the password is nowhere in the response');

    const hash = await storedHash(body.id);
    t.type(hash, 'string');
    t.not(hash, password);
    t.match(hash, /^\$argon2id\$/);
    t.ok(await verifyPassword(hash!, password), 'the stored hash verifies the password');
    t.notOk(await verifyPassword(hash!, 'wrong password'), 'and only that one');
    t.notOk(logs.text().includes(password), 'the password is never logged');
  });

  t.test('a user can be created disabled', async (t) => {
    const created = await createUser({ disabled: true });
    t.equal(created.disabled, true);
  });

  t.test('passwords of exactly 8 and 128 characters are accepted', async (t) => {
    for (const password of ['a'.repeat(8), 'b'.repeat(128)]) {
      const created = await createUser({ password });
      t.equal(created.hasPassword, true);
      t.ok(await verifyPassword((await storedHash(created.id))!, password));
    }
  });

  t.test('http pictures on loopback hosts are accepted (development)', async (t) => {
    const created = await createUser({ picture: 'http://localhost:3000/me.png' });
    t.equal(created.picture, 'http://localhost:3000/me.png');
  });

  t.test('e-mail addresses are unique case-insensitively: 409 EMAIL_TAKEN changes nothing', async (t) => {
    const tag = `${process.pid}-${++counter}`;
    const first = await createUser({ email: `Alice-${tag}@X.com`, password: 'first-password' });
    const users = await countRows('users');
    const events = await countRows('audit_events');

    for (const email of [`alice-${tag}@x.com`, `Alice-${tag}@X.com`, `ALICE-${tag}@x.COM`]) {
      const res = await admin({ method: 'POST', url: BASE, payload: { email, password: 'second-password' } });
      t.equal(res.statusCode, 409, email);
      t.same(res.json(), { error: 'EMAIL_TAKEN', message: `A user with the e-mail address ${email} already exists` });
      t.equal(res.headers['cache-control'], 'no-store');
      t.notOk(res.headers.location);
    }
    t.equal(await countRows('users'), users, 'no user row added');
    t.equal(await countRows('audit_events'), events, 'no audit event added');
    t.same((await admin({ method: 'GET', url: `${BASE}/${first.id}` })).json(), first, 'the first user is untouched');
    t.ok(await verifyPassword((await storedHash(first.id))!, 'first-password'), 'with its own password');
  });

  t.test('the Location of a created user is its URL even when the request had a query string', async (t) => {
    const res = await admin({ method: 'POST', url: `${BASE}?trace=1`, payload: { email: uniqueEmail('query') } });
    t.equal(res.statusCode, 201);
    t.equal(res.headers.location, `${BASE}/${res.json().id}`);
  });
});

t.test('invalid user input is 400 VALIDATION_ERROR naming the field', async (t) => {
  const cases: Array<{
    name: string;
    payload: Record<string, unknown>;
    details: Array<{ field: string; message: string }>;
  }> = [
    {
      name: 'a missing e-mail address',
      payload: { password: 'password123' },
      details: [{ field: 'email', message: 'is required' }],
    },
    {
      name: 'an e-mail address without @',
      payload: { email: 'alice.example.com' },
      details: [{ field: 'email', message: EMAIL_PATTERN }],
    },
    {
      name: 'an e-mail address with white space',
      payload: { email: 'alice smith@example.com' },
      details: [{ field: 'email', message: EMAIL_PATTERN }],
    },
    {
      name: 'an e-mail address with two @',
      payload: { email: 'a@b@example.com' },
      details: [{ field: 'email', message: EMAIL_PATTERN }],
    },
    {
      name: 'a password shorter than 8 characters',
      payload: { email: 'short@example.com', password: '1234567' },
      details: [{ field: 'password', message: 'must not have fewer than 8 characters' }],
    },
    {
      name: 'a password longer than 128 characters',
      payload: { email: 'long@example.com', password: 'x'.repeat(129) },
      details: [{ field: 'password', message: 'must not have more than 128 characters' }],
    },
    {
      name: 'a common password (operators are refused one too)',
      payload: { email: 'common@example.com', password: ' Password123 ' },
      details: [{ field: 'password', message: PASSWORD_TOO_COMMON_MESSAGE }],
    },
    {
      name: 'a null password',
      payload: { email: 'nullpw@example.com', password: null },
      details: [{ field: 'password', message: 'must be string' }],
    },
    {
      name: 'an unknown field',
      payload: { email: 'unknown@example.com', isAdmin: true },
      details: [{ field: 'isAdmin', message: 'is not a known field' }],
    },
    {
      name: 'a password hash smuggled in',
      payload: { email: 'hash@example.com', passwordHash: '$argon2id$v=19$...' },
      details: [{ field: 'passwordHash', message: 'is not a known field' }],
    },
    {
      name: 'a picture that is http on a public host',
      payload: { email: 'pic@example.com', picture: 'http://cdn.example.com/me.png' },
      details: [{ field: 'picture', message: HTTP_NOT_LOOPBACK }],
    },
    {
      name: 'a picture that is not a URL',
      payload: { email: 'pic2@example.com', picture: 'me.png' },
      details: [{ field: 'picture', message: 'must be an absolute URL' }],
    },
    {
      name: 'a picture with a javascript: URL',
      payload: { email: 'pic3@example.com', picture: 'javascript:alert(1)' },
      details: [
        { field: 'picture', message: 'scheme javascript: is not allowed; use https (or http on a loopback host)' },
      ],
    },
    {
      name: 'a permission with white space',
      payload: { email: 'perm@example.com', permissions: ['read all'] },
      details: [{ field: 'permissions.0', message: 'must match pattern "^\\S+$"' }],
    },
    {
      name: 'duplicate permissions',
      payload: { email: 'perm2@example.com', permissions: ['read', 'read'] },
      details: [{ field: 'permissions', message: 'must not have duplicate items' }],
    },
    {
      name: 'an empty name',
      payload: { email: 'name@example.com', name: '' },
      details: [{ field: 'name', message: 'must not have fewer than 1 characters' }],
    },
    {
      name: 'emailVerified that is not a boolean',
      payload: { email: 'ver@example.com', emailVerified: 'true' },
      details: [{ field: 'emailVerified', message: 'must be boolean' }],
    },
  ];

  for (const c of cases) {
    t.test(`rejects ${c.name}`, async (t) => {
      const before = await countRows('users');
      const res = await admin({ method: 'POST', url: BASE, payload: c.payload });
      t.equal(res.statusCode, 400);
      t.same(res.json(), {
        error: 'VALIDATION_ERROR',
        message:
          c.details.length === 1
            ? `${c.details[0]!.field}: ${c.details[0]!.message}`
            : `${c.details.length} fields are invalid`,
        details: c.details,
      });
      t.equal(res.headers['cache-control'], 'no-store');
      t.equal(await countRows('users'), before, 'nothing was stored');
    });
  }

  t.test('a validation error never echoes the password', async (t) => {
    const password = 'tiny';
    const res = await admin({ method: 'POST', url: BASE, payload: { email: 'not-an-email', password } });
    t.equal(res.statusCode, 400);
    t.same(res.json(), {
      error: 'VALIDATION_ERROR',
      message: '2 fields are invalid',
      details: [
        { field: 'email', message: EMAIL_PATTERN },
        { field: 'password', message: 'must not have fewer than 8 characters' },
      ],
    });
    t.notOk(res.body.includes(`"${password}"`));
  });

  t.test('a malformed JSON body is 400 INVALID_JSON', async (t) => {
    const res = await admin({
      method: 'POST',
      url: BASE,
      headers: { 'content-type': 'application/json' },
      payload: '{"email":',
    });
    t.equal(res.statusCode, 400);
    t.same(res.json(), {
      error: 'INVALID_JSON',
      message: "Body is not valid JSON but content-type is set to 'application/json'",
    });
  });

  t.test('a body larger than 16 KiB is 413 PAYLOAD_TOO_LARGE', async (t) => {
    const res = await admin({
      method: 'POST',
      url: BASE,
      payload: { email: uniqueEmail('big'), name: 'x'.repeat(17 * 1024) },
    });
    t.equal(res.statusCode, 413);
    t.same(res.json(), { error: 'PAYLOAD_TOO_LARGE', message: 'The body is larger than 16384 bytes' });
  });
});

t.test('reading one user', async (t) => {
  t.test('by id', async (t) => {
    const created = await createUser({ name: 'By Id' });
    const res = await admin({ method: 'GET', url: `${BASE}/${created.id}` });
    t.equal(res.statusCode, 200);
    t.same(res.json(), created);
    t.equal(res.headers['cache-control'], 'no-store');
  });

  t.test('by e-mail address, in any case', async (t) => {
    const tag = `${process.pid}-${++counter}`;
    const created = await createUser({ email: `Bob-${tag}@Example.com` });
    for (const ref of [`Bob-${tag}@Example.com`, `bob-${tag}@example.com`, `BOB-${tag}@EXAMPLE.COM`]) {
      const res = await admin({ method: 'GET', url: `${BASE}/${encodeURIComponent(ref)}` });
      t.equal(res.statusCode, 200, ref);
      t.same(res.json(), created);
    }
    const raw = await admin({ method: 'GET', url: `${BASE}/bob-${tag}@example.com` });
    t.equal(raw.statusCode, 200, 'an unencoded @ works too');
  });

  t.test('an unknown user is 404 USER_NOT_FOUND', async (t) => {
    for (const ref of ['00000000-0000-4000-8000-000000000000', 'nobody@example.com', 'not-a-uuid']) {
      const res = await admin({ method: 'GET', url: `${BASE}/${encodeURIComponent(ref)}` });
      t.equal(res.statusCode, 404, ref);
      t.same(res.json(), { error: 'USER_NOT_FOUND', message: `No user ${ref}` });
      t.equal(res.headers['cache-control'], 'no-store');
    }
  });

  t.test('an e-mail search pattern is not a wildcard lookup', async (t) => {
    await createUser({ email: uniqueEmail('wild') });
    const res = await admin({ method: 'GET', url: `${BASE}/${encodeURIComponent('%@example.com')}` });
    t.equal(res.statusCode, 404);
  });
});

t.test('updating users', async (t) => {
  t.test('setting a password: hasPassword becomes true and the stored hash verifies', async (t) => {
    const created = await createUser();
    t.equal(created.hasPassword, false);
    const password = 'a brand new passphrase';
    const res = await admin({ method: 'PATCH', url: `${BASE}/${created.id}`, payload: { password } });
    t.equal(res.statusCode, 200);
    const body = res.json();
    t.same(body, { ...created, hasPassword: true, updatedAt: body.updatedAt });
    t.notOk(res.body.includes(password));
    t.ok(await verifyPassword((await storedHash(created.id))!, password));
    t.equal(res.headers['cache-control'], 'no-store');
  });

  t.test('changing a password replaces the old one', async (t) => {
    const created = await createUser({ password: 'old-password-1' });
    const res = await admin({ method: 'PATCH', url: `${BASE}/${created.id}`, payload: { password: 'new-password-2' } });
    t.equal(res.statusCode, 200);
    const hash = (await storedHash(created.id))!;
    t.ok(await verifyPassword(hash, 'new-password-2'));
    t.notOk(await verifyPassword(hash, 'old-password-1'));
  });

  t.test('a too-short password on PATCH is 400 and keeps the old one', async (t) => {
    const created = await createUser({ password: 'kept-password' });
    const res = await admin({ method: 'PATCH', url: `${BASE}/${created.id}`, payload: { password: 'short' } });
    t.equal(res.statusCode, 400);
    t.same(res.json(), {
      error: 'VALIDATION_ERROR',
      message: 'password: must not have fewer than 8 characters',
      details: [{ field: 'password', message: 'must not have fewer than 8 characters' }],
    });
    t.ok(await verifyPassword((await storedHash(created.id))!, 'kept-password'));
  });

  t.test('a common password on PATCH is 400 and keeps the old one; a good one is set', async (t) => {
    const created = await createUser({ password: 'kept-password' });
    const res = await admin({ method: 'PATCH', url: `${BASE}/${created.id}`, payload: { password: 'iloveyou' } });
    t.equal(res.statusCode, 400);
    t.same(res.json(), {
      error: 'VALIDATION_ERROR',
      message: `password: ${PASSWORD_TOO_COMMON_MESSAGE}`,
      details: [{ field: 'password', message: PASSWORD_TOO_COMMON_MESSAGE }],
    });
    t.ok(await verifyPassword((await storedHash(created.id))!, 'kept-password'));
    const good = 'iloveyou, said the operator';
    const ok = await admin({ method: 'PATCH', url: `${BASE}/${created.id}`, payload: { password: good } });
    t.equal(ok.statusCode, 200, 'a password that merely contains a common one is fine');
    t.ok(await verifyPassword((await storedHash(created.id))!, good));
  });

  t.test('verifying the e-mail address', async (t) => {
    const created = await createUser();
    const res = await admin({ method: 'PATCH', url: `${BASE}/${created.id}`, payload: { emailVerified: true } });
    t.equal(res.statusCode, 200);
    t.same(res.json(), { ...created, emailVerified: true, updatedAt: res.json().updatedAt });
    t.equal((await admin({ method: 'GET', url: `${BASE}/${created.id}` })).json().emailVerified, true);
  });

  t.test('permissions are replaced, not merged', async (t) => {
    const created = await createUser({ permissions: ['a', 'b'] });
    const res = await admin({ method: 'PATCH', url: `${BASE}/${created.id}`, payload: { permissions: ['c'] } });
    t.equal(res.statusCode, 200);
    t.same(res.json().permissions, ['c']);
    const cleared = await admin({ method: 'PATCH', url: `${BASE}/${created.id}`, payload: { permissions: [] } });
    t.same(cleared.json().permissions, []);
  });

  t.test('null clears the name fields and the picture', async (t) => {
    const created = await createUser({
      name: 'Full Name',
      givenName: 'Full',
      familyName: 'Name',
      picture: 'https://cdn.example.com/p.png',
    });
    const res = await admin({
      method: 'PATCH',
      url: `${BASE}/${created.id}`,
      payload: { name: null, givenName: null, familyName: null, picture: null },
    });
    t.equal(res.statusCode, 200);
    const body = res.json();
    t.same(body, {
      ...created,
      name: null,
      givenName: null,
      familyName: null,
      picture: null,
      updatedAt: body.updatedAt,
    });
  });

  t.test('PATCH changes the given fields only and moves updatedAt', async (t) => {
    const created = await createUser({ name: 'Before', permissions: ['keep'] });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const email = uniqueEmail('renamed');
    const res = await admin({ method: 'PATCH', url: `${BASE}/${created.id}`, payload: { name: 'After', email } });
    t.equal(res.statusCode, 200);
    const body = res.json();
    t.same(body, { ...created, name: 'After', email, updatedAt: body.updatedAt });
    t.match(body.updatedAt, ISO);
    t.ok(Date.parse(body.updatedAt) > Date.parse(created.updatedAt));
    t.equal(body.createdAt, created.createdAt);
    t.equal(
      (await admin({ method: 'GET', url: `${BASE}/${encodeURIComponent(created.email)}` })).statusCode,
      404,
      'the old e-mail is gone',
    );
    t.same((await admin({ method: 'GET', url: `${BASE}/${encodeURIComponent(email)}` })).json(), body);
  });

  t.test('PATCH by e-mail address works', async (t) => {
    const created = await createUser();
    const res = await admin({
      method: 'PATCH',
      url: `${BASE}/${encodeURIComponent(created.email.toUpperCase())}`,
      payload: { name: 'Via e-mail' },
    });
    t.equal(res.statusCode, 200);
    t.equal(res.json().id, created.id);
    t.equal(res.json().name, 'Via e-mail');
  });

  t.test('a user may change the case of their own e-mail address', async (t) => {
    const created = await createUser({ email: uniqueEmail('case') });
    const res = await admin({
      method: 'PATCH',
      url: `${BASE}/${created.id}`,
      payload: { email: created.email.toUpperCase() },
    });
    t.equal(res.statusCode, 200);
    t.equal(res.json().email, created.email.toUpperCase());
  });

  t.test("changing the e-mail to another user's (any case) is 409 and changes nothing", async (t) => {
    const taken = await createUser();
    const mover = await createUser({ name: 'Mover' });
    const events = await countRows('audit_events');
    const email = taken.email.toUpperCase();
    const res = await admin({ method: 'PATCH', url: `${BASE}/${mover.id}`, payload: { email, name: 'Changed too' } });
    t.equal(res.statusCode, 409);
    t.same(res.json(), { error: 'EMAIL_TAKEN', message: `A user with the e-mail address ${email} already exists` });
    t.same((await admin({ method: 'GET', url: `${BASE}/${mover.id}` })).json(), mover, 'neither field changed');
    t.equal(await countRows('audit_events'), events, 'no audit event');
  });

  t.test('an empty PATCH body is 400', async (t) => {
    const created = await createUser();
    const res = await admin({ method: 'PATCH', url: `${BASE}/${created.id}`, payload: {} });
    t.equal(res.statusCode, 400);
    t.same(res.json(), {
      error: 'VALIDATION_ERROR',
      message: '(body): must not have fewer than 1 properties',
      details: [{ field: '(body)', message: 'must not have fewer than 1 properties' }],
    });
  });

  t.test('invalid PATCH values are 400 and leave the user unchanged', async (t) => {
    const created = await createUser({ name: 'Stable' });
    for (const [payload, field, message] of [
      [{ email: 'nope' }, 'email', EMAIL_PATTERN],
      [{ picture: 'http://cdn.example.com/x.png' }, 'picture', HTTP_NOT_LOOPBACK],
      [{ id: '00000000-0000-4000-8000-000000000000' }, 'id', 'is not a known field'],
      [{ hasPassword: false }, 'hasPassword', 'is not a known field'],
      [{ email: null }, 'email', 'must be string'],
    ] as const) {
      const res = await admin({ method: 'PATCH', url: `${BASE}/${created.id}`, payload });
      t.equal(res.statusCode, 400, JSON.stringify(payload));
      t.same(res.json(), { error: 'VALIDATION_ERROR', message: `${field}: ${message}`, details: [{ field, message }] });
    }
    t.same((await admin({ method: 'GET', url: `${BASE}/${created.id}` })).json(), created);
  });

  t.test('PATCH of an unknown user is 404', async (t) => {
    for (const ref of ['00000000-0000-4000-8000-000000000000', 'nobody@example.com']) {
      const res = await admin({ method: 'PATCH', url: `${BASE}/${encodeURIComponent(ref)}`, payload: { name: 'x' } });
      t.equal(res.statusCode, 404, ref);
      t.same(res.json(), { error: 'USER_NOT_FOUND', message: `No user ${ref}` });
    }
  });

  t.test('disable and enable switch disabled and nothing else', async (t) => {
    const created = await createUser({ password: 'toggle-password' });
    const disabled = await admin({ method: 'POST', url: `${BASE}/${created.id}/disable` });
    t.equal(disabled.statusCode, 200);
    t.same(disabled.json(), { ...created, disabled: true, updatedAt: disabled.json().updatedAt });
    t.equal(disabled.headers['cache-control'], 'no-store');
    t.equal((await admin({ method: 'GET', url: `${BASE}/${created.id}` })).json().disabled, true);

    const enabled = await admin({ method: 'POST', url: `${BASE}/${encodeURIComponent(created.email)}/enable` });
    t.equal(enabled.statusCode, 200, 'by e-mail address too');
    t.same(enabled.json(), { ...created, disabled: false, updatedAt: enabled.json().updatedAt });
    t.ok(await verifyPassword((await storedHash(created.id))!, 'toggle-password'), 'the password is kept');
  });

  t.test('disable and enable of an unknown user are 404', async (t) => {
    for (const action of ['disable', 'enable']) {
      const res = await admin({ method: 'POST', url: `${BASE}/00000000-0000-4000-8000-000000000000/${action}` });
      t.equal(res.statusCode, 404, action);
      t.same(res.json(), { error: 'USER_NOT_FOUND', message: 'No user 00000000-0000-4000-8000-000000000000' });
    }
  });
});

t.test('deleting users', async (t) => {
  t.test('DELETE is 204 with an empty body, then the user is gone', async (t) => {
    const created = await createUser();
    const res = await admin({ method: 'DELETE', url: `${BASE}/${created.id}` });
    t.equal(res.statusCode, 204);
    t.equal(res.body, '');
    t.equal(res.headers['cache-control'], 'no-store');
    for (const ref of [created.id, encodeURIComponent(created.email)]) {
      const gone = await admin({ method: 'GET', url: `${BASE}/${ref}` });
      t.equal(gone.statusCode, 404);
      t.equal(gone.json().error, 'USER_NOT_FOUND');
    }
    t.same((await admin({ method: 'GET', url: `${BASE}?q=${encodeURIComponent(created.email)}` })).json(), {
      items: [],
    });
  });

  t.test('DELETE by e-mail address works', async (t) => {
    const created = await createUser();
    const res = await admin({ method: 'DELETE', url: `${BASE}/${encodeURIComponent(created.email)}` });
    t.equal(res.statusCode, 204);
    t.equal((await admin({ method: 'GET', url: `${BASE}/${created.id}` })).statusCode, 404);
  });

  t.test('DELETE of an unknown user is 404, also the second time', async (t) => {
    const created = await createUser();
    t.equal((await admin({ method: 'DELETE', url: `${BASE}/${created.id}` })).statusCode, 204);
    const again = await admin({ method: 'DELETE', url: `${BASE}/${created.id}` });
    t.equal(again.statusCode, 404);
    t.same(again.json(), { error: 'USER_NOT_FOUND', message: `No user ${created.id}` });
  });

  t.test('a deleted user’s e-mail address can be used again', async (t) => {
    const created = await createUser();
    await admin({ method: 'DELETE', url: `${BASE}/${created.id}` });
    const again = await admin({ method: 'POST', url: BASE, payload: { email: created.email } });
    t.equal(again.statusCode, 201);
    t.not(again.json().id, created.id);
  });
});

t.test('listing users', async (t) => {
  t.test('limit and nextCursor walk every matching user once, ordered by e-mail case-insensitively', async (t) => {
    const tag = `pg${process.pid}x${++counter}`;
    const locals = ['carol', 'Alice', 'bob', 'dave', 'Eve', 'alan', 'Bert', 'zed', '0-first', '_under'];
    const emails = [];
    for (const local of locals)
      emails.push((await createUser({ email: `${local}.${tag}@paging.example` })).email as string);
    const expected = [...emails].sort((a, b) => (a.toLowerCase() < b.toLowerCase() ? -1 : 1));

    for (const limit of [1, 3, 4, 50]) {
      const seen = (await walk(t, { q: tag }, limit)).map((u) => u.email);
      t.same(seen, expected, `limit ${limit}: all, once, in order`);
    }
  });

  t.test('walking the whole list with no search sees every user exactly once', async (t) => {
    const seen = (await walk(t, {}, 6)).map((u) => u.id);
    t.equal(new Set(seen).size, seen.length, 'no duplicates');
    const stored = await database.db.selectFrom('users').select('id').execute();
    t.same(new Set(seen), new Set(stored.map((r) => r.id)));
  });

  t.test('the last page has no nextCursor', async (t) => {
    const tag = `last${process.pid}x${++counter}`;
    const a = await createUser({ email: `a.${tag}@example.com` });
    const b = await createUser({ email: `b.${tag}@example.com` });
    const first = await admin({ method: 'GET', url: `${BASE}?q=${tag}&limit=1` });
    t.same(first.json().items, [a]);
    t.type(first.json().nextCursor, 'string');
    const second = await admin({ method: 'GET', url: `${BASE}?q=${tag}&limit=1&cursor=${first.json().nextCursor}` });
    t.same(second.json(), { items: [b] });
    t.same((await admin({ method: 'GET', url: `${BASE}?q=${tag}&limit=2` })).json(), { items: [a, b] });
  });

  t.test('q searches e-mail and name case-insensitively, and the exact id', async (t) => {
    const tag = `srch${process.pid}x${++counter}`;
    const byEmail = await createUser({ email: `${tag}@Search.example` });
    const byName = await createUser({ name: `Grace ${tag.toUpperCase()} Hopper` });
    const other = await createUser({ name: 'Someone else' });

    const res = await admin({ method: 'GET', url: `${BASE}?q=${tag.toUpperCase()}` });
    t.equal(res.statusCode, 200);
    t.same(new Set(res.json().items.map((u: { id: string }) => u.id)), new Set([byEmail.id, byName.id]));

    t.same((await admin({ method: 'GET', url: `${BASE}?q=${other.id}` })).json(), { items: [other] }, 'by id');
    t.same((await admin({ method: 'GET', url: `${BASE}?q=${tag}-nothing` })).json(), { items: [] });
  });

  t.test('q treats % and _ literally', async (t) => {
    const tag = `lit${process.pid}x${++counter}`;
    const under = await createUser({ email: `${tag}_a@example.com` });
    await createUser({ email: `${tag}ba@example.com` });
    t.same((await admin({ method: 'GET', url: `${BASE}?q=${encodeURIComponent(`${tag}_`)}` })).json(), {
      items: [under],
    });
    t.same((await admin({ method: 'GET', url: `${BASE}?q=${encodeURIComponent(`${tag}%a`)}` })).json(), { items: [] });
  });

  t.test('bad list parameters are 400', async (t) => {
    for (const [query, field, message] of [
      ['limit=0', 'querystring.limit', 'must be >= 1'],
      ['limit=1000', 'querystring.limit', 'must be <= 200'],
      ['page=2', 'querystring.page', 'is not a known field'],
      ['cursor=!!!', 'cursor', 'is not a cursor this API returned'],
    ] as const) {
      const res = await admin({ method: 'GET', url: `${BASE}?${query}` });
      t.equal(res.statusCode, 400, query);
      t.same(
        res.json(),
        { error: 'VALIDATION_ERROR', message: `${field}: ${message}`, details: [{ field, message }] },
        query,
      );
    }
  });
});

t.test('audit trail', async (t) => {
  t.test('create, update, disable and delete are recorded with actor admin-api', async (t) => {
    const created = await createUser();
    await admin({ method: 'PATCH', url: `${BASE}/${created.id}`, payload: { name: 'Audited', emailVerified: true } });
    await admin({ method: 'POST', url: `${BASE}/${created.id}/disable` });
    await admin({ method: 'DELETE', url: `${BASE}/${created.id}` });

    // Issue 31, item 7a: the deletion keeps the user's events under a pseudonym, which user.deleted names
    // (they used to keep the user id).
    t.same(await listAuditEvents(database.db, { userId: created.id }), [], 'no event names the user id any more');
    const pseudonym = (await listAuditEvents(database.db, { type: 'user.deleted' })).at(-1)!.user_id!;
    t.match(pseudonym, /^deleted-user:[0-9a-f-]{36}$/);
    const events = await listAuditEvents(database.db, { userId: pseudonym });
    t.same(
      events.map((e) => ({
        type: e.type,
        actor: e.actor,
        user_id: e.user_id,
        client_id: e.client_id,
        ip: e.ip,
        detail: e.detail,
      })),
      [
        { type: 'user.created', actor: 'admin-api', user_id: pseudonym, client_id: null, ip: '127.0.0.1', detail: {} },
        {
          type: 'user.updated',
          actor: 'admin-api',
          user_id: pseudonym,
          client_id: null,
          ip: '127.0.0.1',
          detail: { fields: ['name', 'emailVerified'] },
        },
        {
          type: 'user.updated',
          actor: 'admin-api',
          user_id: pseudonym,
          client_id: null,
          ip: '127.0.0.1',
          detail: { fields: ['disabled'] },
        },
        { type: 'user.deleted', actor: 'admin-api', user_id: pseudonym, client_id: null, ip: '127.0.0.1', detail: {} },
      ],
    );
  });

  t.test('a deleted user keeps its security events under a pseudonym, without personal data', async (t) => {
    // Issue 31, item 7a: the operator's deletion behaves as the user's own (DELETE /api/me).
    const created = await createUser();
    const email = (await admin({ method: 'GET', url: `${BASE}/${created.id}` })).json().email as string;
    const other = 'someone-else@example.org';
    await appendAuditEvent(database.db, {
      type: 'email_change.requested',
      actor: 'self',
      userId: created.id,
      ip: '192.0.2.7',
      detail: { newEmail: other, superseded: 0 },
    });
    await appendAuditEvent(database.db, {
      type: 'user.email_changed',
      actor: 'self',
      userId: created.id,
      detail: { previousEmail: email, newEmail: other },
    });
    await appendAuditEvent(database.db, { type: 'x.odd', userId: created.id, detail: { note: `was ${email}` } });
    // An action the user took as an administrator of the admin web.
    await appendAuditEvent(database.db, { type: 'application.created', actor: `admin:${email}`, clientId: 'c1' });
    t.equal((await admin({ method: 'DELETE', url: `${BASE}/${created.id}` })).statusCode, 204);

    const pseudonym = (await listAuditEvents(database.db, { type: 'user.deleted' })).at(-1)!.user_id!;
    const kept = await listAuditEvents(database.db, { userId: pseudonym });
    t.same(
      kept.map((e) => [e.type, e.ip, e.detail]),
      [
        ['user.created', '127.0.0.1', {}],
        ['email_change.requested', '192.0.2.7', { superseded: 0 }],
        ['user.email_changed', null, {}],
        ['x.odd', null, { personalDataRemoved: true }],
        ['user.deleted', '127.0.0.1', {}],
      ],
      'every event kept, under the pseudonym, without addresses',
    );
    const all = JSON.stringify(await listAuditEvents(database.db)).toLowerCase();
    t.notOk(all.includes(email.toLowerCase()), 'no event anywhere mentions the address');
    t.notOk(all.includes(other), 'nor the address of the e-mail change');
    t.same(
      (await listAuditEvents(database.db, { type: 'application.created' })).filter((e) => e.client_id === 'c1')[0]
        ?.actor,
      `admin:${pseudonym}`,
      'the actions taken as an administrator name the pseudonym',
    );
  });

  t.test('a password change is audited by field name, never by value', async (t) => {
    const initial = 'initial-secret-pw';
    const password = 'S3cret-Audit-Passphrase';
    const created = await createUser({ password: initial });
    const res = await admin({ method: 'PATCH', url: `${BASE}/${created.id}`, payload: { password } });
    t.equal(res.statusCode, 200);

    const events = await listAuditEvents(database.db, { userId: created.id });
    t.same(
      events.map((e) => [e.type, e.detail]),
      [
        ['user.created', {}],
        ['user.updated', { fields: ['password'] }],
      ],
    );
    const everything = JSON.stringify(events);
    t.notOk(everything.includes(password), 'the new password is not in the audit trail');
    t.notOk(everything.includes(initial), 'nor the first one');
    t.notOk(everything.includes((await storedHash(created.id))!), 'nor its hash');
    t.notOk(logs.text().includes(password), 'nor in the logs');
  });

  t.test('refused requests leave no audit event', async (t) => {
    const created = await createUser();
    const before = (await listAuditEvents(database.db, { userId: created.id })).length;
    await admin({ method: 'PATCH', url: `${BASE}/${created.id}`, payload: { password: 'short' } });
    await admin({ method: 'PATCH', url: `${BASE}/${created.id}`, payload: {} });
    await app.inject({ method: 'DELETE', url: `${BASE}/${created.id}` });
    t.equal((await listAuditEvents(database.db, { userId: created.id })).length, before);
  });
});

t.test('transactions: a failure halfway leaves nothing behind', async (t) => {
  // A CHECK constraint on the audit table makes the audit insert (the second statement of each change) fail.
  async function withBrokenAudit(condition: string, fn: () => Promise<void>) {
    const name = `test_block_${process.pid}_${++counter}`;
    await sql
      .raw(`alter table audit_events add constraint ${name} check (${condition}) not valid`)
      .execute(database.db);
    try {
      await fn();
    } finally {
      await sql.raw(`alter table audit_events drop constraint ${name}`).execute(database.db);
    }
  }

  t.test('a create whose audit event fails stores no user', async (t) => {
    const email = uniqueEmail('tx-create');
    const users = await countRows('users');
    // The new id is unknown beforehand: block every user.created while this (sequential) subtest runs.
    await withBrokenAudit(`type <> 'user.created'`, async () => {
      const res = await admin({ method: 'POST', url: BASE, payload: { email, password: 'tx-password' } });
      t.equal(res.statusCode, 500);
      t.same(res.json(), { error: 'INTERNAL_ERROR', message: 'An unexpected error occurred' });
    });
    t.equal(await countRows('users'), users);
    t.equal((await admin({ method: 'GET', url: `${BASE}/${encodeURIComponent(email)}` })).statusCode, 404);
    const retry = await admin({ method: 'POST', url: BASE, payload: { email } });
    t.equal(retry.statusCode, 201, 'the e-mail address is still free');
  });

  t.test('an update whose audit event fails changes nothing', async (t) => {
    const created = await createUser({ name: 'Original', password: 'original-pw' });
    await withBrokenAudit(`type <> 'user.updated' or user_id is distinct from '${created.id}'`, async () => {
      const res = await admin({
        method: 'PATCH',
        url: `${BASE}/${created.id}`,
        payload: { name: 'Changed', password: 'changed-pw' },
      });
      t.equal(res.statusCode, 500);
      t.equal((await admin({ method: 'POST', url: `${BASE}/${created.id}/disable` })).statusCode, 500);
    });
    t.same((await admin({ method: 'GET', url: `${BASE}/${created.id}` })).json(), created);
    t.ok(await verifyPassword((await storedHash(created.id))!, 'original-pw'), 'the old password still works');
  });

  t.test('a delete whose audit event fails keeps the user', async (t) => {
    const created = await createUser();
    await withBrokenAudit(`type <> 'user.deleted' or user_id not like 'deleted-user:%'`, async () => {
      t.equal((await admin({ method: 'DELETE', url: `${BASE}/${created.id}` })).statusCode, 500);
    });
    t.same((await admin({ method: 'GET', url: `${BASE}/${created.id}` })).json(), created);
    t.same(
      (await listAuditEvents(database.db, { userId: created.id })).map((e) => e.type),
      ['user.created'],
    );
  });
});

t.test('e-mail addresses beyond ASCII', async (t) => {
  t.test('accented capitals: unique and found case-insensitively', async (t) => {
    const tag = `${process.pid}x${++counter}`;
    const created = await createUser({ email: `Émile.${tag}@Société.example` });
    const lower = `émile.${tag}@société.example`;
    const res = await admin({ method: 'GET', url: `${BASE}/${encodeURIComponent(lower)}` });
    t.equal(res.statusCode, 200);
    t.same(res.json(), created);
    const dup = await admin({ method: 'POST', url: BASE, payload: { email: lower } });
    t.equal(dup.statusCode, 409);
    t.same(dup.json(), { error: 'EMAIL_TAKEN', message: `A user with the e-mail address ${lower} already exists` });
  });

  // These users break the whole-list walks above (the cursor never moves past them), so they are removed again.
  async function createRemovable(tt: Pick<typeof t, 'teardown'>, email: string) {
    const created = await createUser({ email });
    tt.teardown(async () => {
      await admin({ method: 'DELETE', url: `${BASE}/${created.id}` });
    });
    return created;
  }

  t.test('a user is found by exactly the e-mail address they were created with', async (t) => {
    const tag = `${process.pid}x${++counter}`;
    for (const email of [`ΟΔΟΣ.${tag}@example.gr`, `İlker.${tag}@example.tr`]) {
      const created = await createRemovable(t, email);
      const res = await admin({ method: 'GET', url: `${BASE}/${encodeURIComponent(email)}` });
      t.equal(res.statusCode, 200, email);
      t.same(res.json(), created);
    }
  });

  t.test('paging ends and shows each user once whatever letters the e-mail addresses use', async (t) => {
    const tag = `sig${process.pid}x${++counter}`;
    const emails = [`ΟΔΟΣ@${tag}.example`, `ΟΔΟΣa@${tag}.example`, `ΟΔΟΣb@${tag}.example`];
    for (const email of emails) await createRemovable(t, email);
    const seen = (await walk(t, { q: tag }, 1, 10)).map((u) => u.email);
    t.same(new Set(seen), new Set(emails));
    t.equal(seen.length, emails.length);
  });
});

t.test('role: admin via the admin API, validated', async (t) => {
  const email = uniqueEmail('role');
  const created = await admin({ method: 'POST', url: BASE, payload: { email, role: 'admin' } });
  t.equal(created.statusCode, 201);
  t.equal(created.json().role, 'admin');
  const demoted = await admin({ method: 'PATCH', url: `${BASE}/${created.json().id}`, payload: { role: 'user' } });
  t.equal(demoted.json().role, 'user');
  const bad = await admin({ method: 'PATCH', url: `${BASE}/${created.json().id}`, payload: { role: 'root' } });
  t.equal(bad.statusCode, 400);
  t.equal(bad.json().error, 'VALIDATION_ERROR');
});

// Issue 12, items 3 and 4: account changes by an operator revoke. An app of its own, with a real SMTP
// server, a registered application and real code flows, so that every kind of credential exists.
t.test('account changes by an operator revoke what the user held', async (t) => {
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  const { app: idp, database: idpDb } = await buildTestApp(t, { env: { SMTP_URL: smtp.url } });
  const op = (options: Inject) => idp.inject({ ...options, headers: { ...adminHeaders, ...options.headers } });
  const redirectUri = 'https://rp.example/callback';
  const rp = await idp.services.applications.create(
    { clientName: 'Revocation RP', redirectUris: [redirectUri] },
    { actor: 'test' },
  );
  const json = (url: string, payload: unknown) =>
    idp.inject({
      method: 'POST',
      url,
      payload: JSON.stringify(payload),
      headers: { 'content-type': 'application/json' },
    });
  const me = (token: string) =>
    idp.inject({ method: 'GET', url: '/api/external/me', headers: { authorization: `Bearer ${token}` } });
  const home = (jar: Record<string, string>) => idp.inject({ method: 'GET', url: '/login/', cookies: jar });
  const refresh = (token: string) =>
    tokenRequest(idp, { grant_type: 'refresh_token', refresh_token: token, client_id: rp.clientId });
  const settle = async () => {
    await idp.services.recovery.drain();
    await idp.services.mailer.drain();
  };
  const mailsTo = (email: string, subject: string) => smtp.mails.filter((m) => m.to === email && m.subject === subject);
  const detailOf = (e: { detail: unknown }) =>
    (typeof e.detail === 'string' ? JSON.parse(e.detail) : e.detail) as Record<string, unknown>;

  /**
   * A user holding everything: a session, session-bound and offline tokens, an unexchanged code and a
   * live reset link.
   */
  async function userHoldingEverything(label: string) {
    const email = uniqueEmail(label);
    const password = 'first-password-1';
    const user = await idp.services.users.create({ email, password, emailVerified: true }, { actor: 'test' });
    const flow = { clientId: rp.clientId, redirectUri, email, password, scope: 'openid email offline_access' };
    const { tokens, jar } = await obtainTokens(idp, flow);
    const rotated = await refresh(tokens.refresh_token!);
    if (rotated.statusCode !== 200) throw new Error(`refresh failed: ${rotated.body}`);
    const offline = rotated.json() as { access_token: string; refresh_token: string };
    const pending = await obtainCode(idp, flow, jar);
    const before = mailsTo(email, 'Reset your password').length;
    await json('/api/auth/request-password-reset', { email, redirectTo: '/login/reset-password' });
    await settle();
    const resetLink = linkIn(mailsTo(email, 'Reset your password')[before]!);
    const resetToken = decodeURIComponent(new URL(resetLink).pathname.split('/').pop()!);
    return { user, email, password, jar, tokens, offline, pending, resetLink, resetToken };
  }

  /** Asserts that nothing the user held works any more. */
  async function assertAllDead(
    tt: Pick<typeof t, 'equal' | 'match'>,
    held: Awaited<ReturnType<typeof userHoldingEverything>>,
    what: string,
  ) {
    const signedOut = await home(held.jar);
    tt.equal(signedOut.statusCode, 303, `${what}: the old session cookie no longer signs in`);
    tt.equal(signedOut.headers.location, '/login/sign-in');
    for (const [kind, token] of [
      ['session-bound', held.tokens.access_token],
      ['offline', held.offline.access_token],
    ] as const) {
      const res = await me(token);
      tt.equal(res.statusCode, 401, `${what}: the ${kind} access token is 401 on /api/external/me`);
      tt.equal(res.json().error, 'UNAUTHORIZED');
    }
    const refreshed = await refresh(held.offline.refresh_token);
    tt.equal(refreshed.statusCode, 400, `${what}: the refresh token is refused`);
    tt.equal(refreshed.json().error, 'invalid_grant');
    const exchanged = await tokenRequest(idp, {
      grant_type: 'authorization_code',
      code: held.pending.code,
      code_verifier: held.pending.verifier,
      client_id: rp.clientId,
      redirect_uri: redirectUri,
    });
    tt.equal(exchanged.statusCode, 400, `${what}: the unexchanged code is refused`);
    tt.equal(exchanged.json().error, 'invalid_grant');
    const link = new URL(held.resetLink);
    const followed = await idp.inject({ method: 'GET', url: link.pathname + link.search });
    tt.match(followed.headers.location, /[?&]error=INVALID_TOKEN/, `${what}: the reset link mailed earlier is dead`);
    const reset = await json('/api/auth/reset-password', {
      token: held.resetToken,
      newPassword: 'attacker-password-1',
    });
    tt.equal(reset.statusCode, 400, `${what}: the reset token cannot set a password`);
    tt.equal(reset.json().error, 'INVALID_TOKEN');
  }

  t.test(
    'a new password set by an operator ends sessions, tokens, codes and reset links, and is announced by mail',
    async (t) => {
      const held = await userHoldingEverything('admin-password');
      // Everything works before the change.
      t.equal((await home(held.jar)).statusCode, 200);
      t.equal((await me(held.tokens.access_token)).statusCode, 200);
      t.equal((await me(held.offline.access_token)).statusCode, 200);

      const changed = await op({
        method: 'PATCH',
        url: `${BASE}/${held.user.id}`,
        payload: { password: 'operator-set-password-2' },
      });
      t.equal(changed.statusCode, 200);
      await assertAllDead(t, held, 'after an admin password change');

      await settle();
      const notices = mailsTo(held.email, 'Your password was changed');
      t.equal(notices.length, 1, 'a "your password was changed" mail, as after a reset');
      t.notMatch(notices[0]!.text, held.resetToken);

      const sessions = (await listAuditEvents(idpDb.db, { type: 'session.revoked', userId: held.user.id })).map(
        detailOf,
      );
      t.same(
        sessions.map((d) => d.reason),
        ['password_changed'],
        'session.revoked names the reason',
      );
      const revoked = await listAuditEvents(idpDb.db, { type: 'token.revoked', userId: held.user.id });
      t.ok(revoked.length >= 1, 'token.revoked recorded');
      t.ok(
        revoked.every(
          (e) => e.actor === 'admin-api' && e.client_id === rp.clientId && detailOf(e).reason === 'password_changed',
        ),
      );

      t.equal(
        (await json('/api/auth/sign-in', { email: held.email, password: held.password })).statusCode,
        401,
        'the old password is refused',
      );
      t.equal(
        (await json('/api/auth/sign-in', { email: held.email, password: 'operator-set-password-2' })).statusCode,
        200,
        'the new one works',
      );
    },
  );

  t.test('a PATCH without a new password revokes nothing and sends no mail', async (t) => {
    const held = await userHoldingEverything('admin-rename');
    t.equal(
      (await op({ method: 'PATCH', url: `${BASE}/${held.user.id}`, payload: { name: 'Renamed', permissions: ['x'] } }))
        .statusCode,
      200,
    );
    t.equal((await home(held.jar)).statusCode, 200, 'the session lives on');
    t.equal((await me(held.offline.access_token)).statusCode, 200, 'and the tokens');
    await settle();
    t.same(mailsTo(held.email, 'Your password was changed'), []);
  });

  t.test('disabling ends sessions and revokes tokens; enabling again brings none of them back', async (t) => {
    const held = await userHoldingEverything('admin-disable');
    const disabled = await op({ method: 'POST', url: `${BASE}/${held.user.id}/disable` });
    t.equal(disabled.statusCode, 200);
    const enabled = await op({ method: 'POST', url: `${BASE}/${held.user.id}/enable` });
    t.equal(enabled.statusCode, 200);
    t.equal(enabled.json().disabled, false);
    await assertAllDead(t, held, 'after disable and enable');

    const sessions = (await listAuditEvents(idpDb.db, { type: 'session.revoked', userId: held.user.id })).map(detailOf);
    t.same(
      sessions.map((d) => d.reason),
      ['user_disabled'],
      'the audit trail says the session ended because the user was disabled',
    );
    const revoked = await listAuditEvents(idpDb.db, { type: 'token.revoked', userId: held.user.id });
    t.ok(
      revoked.length >= 1 && revoked.every((e) => detailOf(e).reason === 'user_disabled' && e.actor === 'admin-api'),
      'and that the tokens were revoked',
    );
    t.equal(
      (await json('/api/auth/sign-in', { email: held.email, password: held.password })).statusCode,
      200,
      'the re-enabled user can sign in again, afresh',
    );
  });

  t.test('a new e-mail address kills reset and verification links and clears email_verified', async (t) => {
    // A signed-up user has a verification link for the address; the operator verifies it by hand,
    // a reset link is mailed, then the address is changed.
    const email = uniqueEmail('admin-email');
    // (Sign-up no longer makes unverified accounts, issue 31: an operator's account gets the link instead.)
    const made = await idp.services.users.create({ email, password: 'signup-password-1' }, { actor: 'test' });
    await idp.services.accounts.sendVerification(made, {});
    const verifyToken = new URL(linkIn(await smtp.waitFor(email))).searchParams.get('token')!;
    const id = (await op({ method: 'GET', url: `${BASE}/${encodeURIComponent(email)}` })).json().id as string;
    t.equal(
      (await op({ method: 'PATCH', url: `${BASE}/${id}`, payload: { emailVerified: true } })).json().emailVerified,
      true,
    );
    await json('/api/auth/request-password-reset', { email, redirectTo: '/login/reset-password' });
    await settle();
    const resetToken = decodeURIComponent(
      new URL(linkIn(mailsTo(email, 'Reset your password')[0]!)).pathname.split('/').pop()!,
    );

    const newEmail = uniqueEmail('admin-email-new');
    const changed = await op({ method: 'PATCH', url: `${BASE}/${id}`, payload: { email: newEmail } });
    t.equal(changed.statusCode, 200);
    t.equal(changed.json().emailVerified, false, 'the new address is not verified');

    const verified = await json('/api/auth/verify-email', { token: verifyToken });
    t.equal(verified.statusCode, 400, 'the verification link mailed to the old address no longer verifies');
    t.equal(verified.json().error, 'INVALID_TOKEN');
    t.equal(
      (await op({ method: 'GET', url: `${BASE}/${id}` })).json().emailVerified,
      false,
      'the user stays unverified',
    );
    const reset = await json('/api/auth/reset-password', { token: resetToken, newPassword: 'attacker-password-1' });
    t.equal(reset.statusCode, 400, 'the reset link mailed to the old address is dead');
    t.equal(reset.json().error, 'INVALID_TOKEN');

    // Changing back to the old address does not revive the old links.
    t.equal((await op({ method: 'PATCH', url: `${BASE}/${id}`, payload: { email } })).statusCode, 200);
    t.equal(
      (await json('/api/auth/verify-email', { token: verifyToken })).statusCode,
      400,
      'not after changing back either',
    );
    t.equal(
      (await json('/api/auth/reset-password', { token: resetToken, newPassword: 'attacker-password-1' })).statusCode,
      400,
    );
  });

  t.test('an e-mail change that sets emailVerified in the same request keeps what it says', async (t) => {
    const created = await idp.services.users.create(
      { email: uniqueEmail('admin-email-set'), emailVerified: false },
      { actor: 'test' },
    );
    const verified = await op({
      method: 'PATCH',
      url: `${BASE}/${created.id}`,
      payload: { email: uniqueEmail('admin-email-set-new'), emailVerified: true },
    });
    t.equal(verified.json().emailVerified, true, 'emailVerified: true in the same PATCH');
    const same = await op({
      method: 'PATCH',
      url: `${BASE}/${created.id}`,
      payload: { email: verified.json().email, name: 'Same address' },
    });
    t.equal(same.json().emailVerified, true, 'the same address again is no change');
    const unverified = await op({
      method: 'PATCH',
      url: `${BASE}/${created.id}`,
      payload: { email: uniqueEmail('admin-email-set-3') },
    });
    t.equal(unverified.json().emailVerified, false, 'a new address without emailVerified clears it');
  });

  t.test("a verification link works only while its address is the user's address", async (t) => {
    const email = uniqueEmail('bound');
    const made = await idp.services.users.create({ email, password: 'signup-password-1' }, { actor: 'test' });
    await idp.services.accounts.sendVerification(made, {});
    const token = new URL(linkIn(await smtp.waitFor(email))).searchParams.get('token')!;
    const [row] = await idpDb.db
      .selectFrom('email_verification_tokens')
      .select(['email', 'user_id'])
      .where('token_hash', '=', hashToken(token))
      .execute();
    t.equal(row!.email, email, 'the token row holds the address it was mailed to');
    // The address changes by a path that does not clean up (as a future one might): the binding holds.
    await idpDb.db
      .updateTable('users')
      .set({ email: uniqueEmail('bound-moved') })
      .where('id', '=', row!.user_id)
      .execute();
    t.equal(
      (await json('/api/auth/verify-email', { token })).statusCode,
      400,
      'a token for another address is invalid',
    );
    await idpDb.db.updateTable('users').set({ email }).where('id', '=', row!.user_id).execute();
    const ok = await json('/api/auth/verify-email', { token });
    t.equal(ok.statusCode, 200, 'for its own address it verifies');
    t.equal((await op({ method: 'GET', url: `${BASE}/${row!.user_id}` })).json().emailVerified, true);
  });
});

t.test(
  'a long or badly escaped user, session or grant id in the path gets the documented 400/404, ' +
    'never a router error (414/400)',
  async (t) => {
    const user = await app.services.users.create({ email: uniqueEmail('long-path') }, { actor: 'test' });
    const cases: Array<[Inject['method'], string, number, string]> = [
      ['GET', `${BASE}/${'a'.repeat(600)}`, 400, 'VALIDATION_ERROR'],
      ['PATCH', `${BASE}/${'a'.repeat(600)}`, 400, 'VALIDATION_ERROR'],
      ['DELETE', `${BASE}/${'a'.repeat(600)}`, 400, 'VALIDATION_ERROR'],
      ['GET', `${BASE}/${'a'.repeat(600)}/sessions`, 400, 'VALIDATION_ERROR'],
      ['GET', `${BASE}/%ZZ`, 404, 'USER_NOT_FOUND'],
      ['GET', `${BASE}/%E0%A4%A/grants`, 404, 'USER_NOT_FOUND'],
      ['DELETE', `${BASE}/${user.id}/sessions/${'s'.repeat(600)}`, 400, 'VALIDATION_ERROR'],
      ['DELETE', `${BASE}/${user.id}/grants/${'g'.repeat(600)}`, 400, 'VALIDATION_ERROR'],
    ];
    for (const [method, url, status, error] of cases) {
      const res = await admin({ method, url, ...(method === 'PATCH' && { payload: { name: 'x' } }) });
      t.equal(res.statusCode, status, `${method} ${url.slice(0, 60)}`);
      t.equal(res.json().error, error, `${method} ${url.slice(0, 60)}`);
      t.notMatch(res.body, /FST_|statusCode/);
    }
  },
);
