// Upgrades lose nothing (issue 16, part 5). For every earlier migration M: a fresh database migrated up to
// M only, filled with representative data written with the schema of that moment (users, applications,
// audit events, and from 0002 on signing keys, sessions, consents, grants, a pending code, live and
// revoked tokens, and the later tables when they exist), then migrated to the latest and served by
// today's app: every row is still there with every value, columns added later hold their defaults or
// backfills, and what was issued before the upgrade still works after it (the access token on
// /api/external/me and UserInfo, the refresh token rotates and its ID token is signed by the old key,
// the session cookie signs in and single sign-on skips the remembered consent, the pending code
// redeems, the old password signs in), while what was revoked stays revoked. An instance of the old
// release that restarts during the rollout still starts on the upgraded database.
// Plus mechanical checks of the migration sources: forward-only, and additive while old instances run.
// Paths: npm test and CI upgrade from the migration before the latest only (the newest migration over data of
// every table); IDP_TEST_UPGRADES=all (npm run test:heavy) upgrades from every earlier migration.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import * as jose from 'jose';
import { type Kysely, sql } from 'kysely';
import { migrateToLatest, migrateUpTo } from '../../db/migrate.js';
import { migrations } from '../../db/migrations/index.js';
import { encryptPrivateJwk, generateSigningKey } from '../../src/oauth/keys.js';
import { s256Challenge } from '../../src/oauth/pkce.js';
import { generateToken, hashToken } from '../../src/oauth/tokens.js';
import { loadConfig } from '../../src/config.js';
import { createPasswordHasher } from '../../src/passwords.js';
import { buildTestApp, testConfig } from '../helpers/app.js';
import { createTestDatabase } from '../helpers/db.js';
import {
  confirmMailedLink,
  cookiesOf,
  obtainTokens,
  signInWithInject,
  tokenRequest,
  userinfo,
} from '../helpers/flow.js';

// Every path: ~40 s on PGlite and ~10 s on PostgreSQL on an idle 2-core machine; a busy one may take several
// times that.
t.setTimeout(300_000);
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const names = Object.keys(migrations); // read at run time: the list grows
const latest = names[names.length - 1]!;
const stops = process.env.IDP_TEST_UPGRADES === 'all' ? names.slice(0, -1) : names.slice(-2, -1);

/** Table name -> its columns, as the database has them now. */
async function schemaOf(db: Kysely<any>): Promise<Map<string, Set<string>>> {
  const { rows } = await sql<{ table_name: string; column_name: string }>`
    select table_name, column_name from information_schema.columns where table_schema = current_schema()`.execute(db);
  const out = new Map<string, Set<string>>();
  for (const r of rows) {
    if (!out.has(r.table_name)) out.set(r.table_name, new Set());
    out.get(r.table_name)!.add(r.column_name);
  }
  return out;
}

/** A jsonb value in the dataset (written as JSON text, compared parsed). */
class Json {
  constructor(readonly value: unknown) {}
}
type Row = Record<string, unknown>;
interface Fixture {
  table: string;
  key: string[];
  row: Row;
}

// Columns that a later migration added to an existing table: what an old row holds after the upgrade.
// A new migration that adds a NOT NULL column with a default or a backfill adds its expectation here;
// any other column added later must read as null on old rows.
const BACKFILLS: Record<string, (row: Row, all: Fixture[]) => unknown> = {
  'users.role': () => 'user',
  'applications.post_logout_redirect_uris': () => [],
  // 0017-confidential-clients: every existing application stays a public PKCE client with the grants it had.
  'applications.token_endpoint_auth_method': () => 'none',
  'applications.pkce': () => 'required',
  'applications.grant_types': () => ['authorization_code', 'refresh_token'],
  // 0018-second-factors: existing sessions were password sign-ins; no application required a second factor.
  'sessions.amr': () => ['pwd'],
  'applications.require_mfa': () => false,
  // 0020-resource-servers: every existing application was registered by the operator; no grant named a resource.
  'applications.registration': () => 'operator',
  'grants.resources': () => [],
  'email_verification_tokens.email': (row, all) =>
    all.find((f) => f.table === 'users' && f.row.id === row.user_id)!.row.email,
  // 0013-sign-up-requests: an account whose sign-up the audit trail records was self-registered.
  'users.self_registered': (row, all) =>
    all.some((f) => f.table === 'audit_events' && f.row.type === 'user.signed_up' && f.row.user_id === row.id),
};

const PASSWORD = 'alice-password-before-upgrade';
// Written at the production cost (the defaults), as an earlier release stored it; today's test app hashes at
// the tests' cheap cost, so the sign-in below also proves a hash of another cost still verifies.
const passwordHash = await createPasswordHasher(loadConfig({}).passwordHash).hash(PASSWORD);
const signingKey = await generateSigningKey('ES256');
const secretKey = testConfig().secretKey!;
const CLIENT = 'upgrade-rp';
const REDIRECT = 'https://rp.example.com/cb';
const SCOPE = 'openid profile email offline_access';

/** The representative data, with the plaintext secrets whose hashes it stores. */
function dataset() {
  const now = Date.now();
  const at = (seconds: number) => new Date(now + seconds * 1000);
  const day = 86_400;
  const secret = {
    session: generateToken(),
    access: generateToken(),
    refresh: generateToken(),
    revokedAccess: generateToken(),
    revokedRefresh: generateToken(),
    code: generateToken(),
    verifier: `${generateToken()}-verifier`,
    verification: generateToken(),
    reset: generateToken(),
    setup: generateToken(),
  };
  const user = (id: string, email: string, extra: Row): Fixture => ({
    table: 'users',
    key: ['id'],
    row: {
      id,
      email,
      password_hash: passwordHash,
      name: null,
      given_name: null,
      family_name: null,
      picture: null,
      email_verified: true,
      permissions: new Json([]),
      disabled: false,
      role: 'user',
      // Written only at stops where the column exists (0013 and later); before, its backfill decides.
      self_registered: false,
      created_at: at(-30 * day),
      updated_at: at(-day),
      ...extra,
    },
  });
  const grant = (id: string, extra: Row = {}): Fixture => ({
    table: 'grants',
    key: ['id'],
    row: {
      id,
      user_id: 'u-alice',
      client_id: CLIENT,
      scope: SCOPE,
      session_id: 's-alice',
      created_at: at(-600),
      revoked_at: null,
      auth_time: at(-600),
      ...extra,
    },
  });
  const accessToken = (plain: string, grantId: string, extra: Row = {}): Fixture => ({
    table: 'access_tokens',
    key: ['token_hash'],
    row: {
      token_hash: hashToken(plain),
      grant_id: grantId,
      client_id: CLIENT,
      user_id: 'u-alice',
      scope: SCOPE,
      session_id: 's-alice',
      created_at: at(-60),
      expires_at: at(3600),
      revoked_at: null,
      ...extra,
    },
  });
  const refreshToken = (plain: string, grantId: string, id: string, extra: Row = {}): Fixture => ({
    table: 'refresh_tokens',
    key: ['token_hash'],
    row: {
      token_hash: hashToken(plain),
      grant_id: grantId,
      client_id: CLIENT,
      user_id: 'u-alice',
      scope: SCOPE,
      created_at: at(-60),
      expires_at: at(30 * day),
      absolute_expires_at: at(90 * day),
      used_at: null,
      revoked_at: null,
      id,
      session_id: 's-alice',
      successor_hash: null,
      successor_sealed: null,
      successor_access_sealed: null,
      ...extra,
    },
  });
  const audit = (type: string, extra: Row): Fixture => ({
    table: 'audit_events',
    key: ['type'],
    row: {
      type,
      actor: 'admin-api',
      user_id: null,
      client_id: null,
      ip: '198.51.100.4',
      created_at: at(-day),
      ...extra,
    },
  });
  const fixtures: Fixture[] = [
    user('u-alice', 'alice@example.com', {
      name: 'Alice Liddell',
      given_name: 'Alice',
      family_name: 'Liddell',
      picture: 'https://img.example.com/alice.png',
      permissions: new Json(['reports:read', 'reports:write']),
    }),
    user('u-bob', 'Bob@Example.com', { name: 'Bob', role: 'admin' }),
    user('u-carol', 'carol@example.com', { password_hash: null, disabled: true, email_verified: false }),
    user('u-dave', 'dave@example.com', { email_verified: false, self_registered: true }),
    {
      table: 'applications',
      key: ['client_id'],
      row: {
        client_id: CLIENT,
        name: 'Upgrade RP',
        description: 'An application registered before the upgrade',
        logo_url: 'https://rp.example.com/logo.png',
        redirect_uris: new Json([REDIRECT, 'http://localhost:8080/cb']),
        allowed_web_origins: new Json(['https://rp.example.com']),
        post_verification_redirect_path: '/welcome',
        allowed_scopes: new Json(['openid', 'profile', 'email', 'offline_access']),
        post_logout_redirect_uris: new Json(['https://rp.example.com/bye']),
        enabled: true,
        created_at: at(-20 * day),
        updated_at: at(-2 * day),
      },
    },
    {
      table: 'applications',
      key: ['client_id'],
      row: {
        client_id: 'upgrade-disabled',
        name: 'Disabled RP',
        description: null,
        logo_url: null,
        redirect_uris: new Json(['https://old.example.com/cb']),
        allowed_web_origins: new Json([]),
        post_verification_redirect_path: null,
        allowed_scopes: new Json(['openid']),
        post_logout_redirect_uris: new Json([]),
        enabled: false,
        created_at: at(-20 * day),
        updated_at: at(-20 * day),
      },
    },
    audit('user.created', { user_id: 'u-alice', detail: new Json({ email: 'alice@example.com' }) }),
    audit('application.created', { client_id: CLIENT, detail: new Json({ name: 'Upgrade RP' }) }),
    audit('user.signed_in', { actor: null, user_id: 'u-alice', detail: new Json({ sessionId: 's-alice' }) }),
    // Dave signed up himself (and has not verified yet): 0013 marks him self-registered.
    audit('user.signed_up', { actor: null, user_id: 'u-dave', detail: new Json({}) }),
    {
      table: 'signing_keys',
      key: ['kid'],
      row: {
        kid: signingKey.kid,
        alg: signingKey.alg,
        state: 'current',
        public_jwk: new Json(signingKey.publicJwk),
        private_jwk: encryptPrivateJwk(signingKey.privateJwk, signingKey.kid, secretKey),
        created_at: at(-10 * day),
        activated_at: at(-10 * day),
        retired_at: null,
      },
    },
    {
      table: 'sessions',
      key: ['id'],
      row: {
        id: 's-alice',
        token_hash: hashToken(secret.session),
        user_id: 'u-alice',
        auth_time: at(-600),
        created_at: at(-600),
        last_seen_at: at(-60),
        expires_at: at(day),
        revoked_at: null,
        ip: '203.0.113.7',
        user_agent: 'Mozilla/5.0 (upgrade test)',
      },
    },
    {
      table: 'authorization_requests',
      key: ['id'],
      row: {
        id: 'req-pending',
        client_id: CLIENT,
        params: new Json({
          client_id: CLIENT,
          redirect_uri: REDIRECT,
          scope: ['openid'],
          state: 'st',
          code_challenge: s256Challenge(secret.verifier),
          prompt: [],
        }),
        created_at: at(-30),
        expires_at: at(570),
        login_completed_at: null,
        consent_given_at: null,
        completed_at: null,
        browser_hash: hashToken('browser'),
        login_user_id: null,
        login_session_id: null,
        consent_user_id: null,
        consent_scopes: null,
      },
    },
    {
      table: 'consents',
      key: ['user_id', 'client_id'],
      row: {
        user_id: 'u-alice',
        client_id: CLIENT,
        scopes: new Json(SCOPE.split(' ')),
        created_at: at(-600),
        updated_at: at(-600),
      },
    },
    grant('g-alice'),
    grant('g-code'),
    grant('g-revoked', { revoked_at: at(-120) }),
    {
      table: 'authorization_codes',
      key: ['code_hash'],
      row: {
        code_hash: hashToken(secret.code),
        grant_id: 'g-code',
        client_id: CLIENT,
        user_id: 'u-alice',
        redirect_uri: REDIRECT,
        code_challenge: s256Challenge(secret.verifier),
        nonce: 'nonce-before-upgrade',
        scope: SCOPE,
        auth_time: at(-600),
        session_id: 's-alice',
        created_at: at(-5),
        expires_at: at(300),
        consumed_at: null,
      },
    },
    accessToken(secret.access, 'g-alice'),
    accessToken(secret.revokedAccess, 'g-revoked', { revoked_at: at(-120) }),
    refreshToken(secret.refresh, 'g-alice', 'rt-alice'),
    refreshToken(secret.revokedRefresh, 'g-revoked', 'rt-revoked', { revoked_at: at(-120) }),
    {
      table: 'email_verification_tokens',
      key: ['token_hash'],
      row: {
        token_hash: hashToken(secret.verification),
        user_id: 'u-dave',
        request_id: null,
        client_id: CLIENT,
        redirect_uri: REDIRECT,
        email: 'dave@example.com',
        created_at: at(-60),
        expires_at: at(day),
        used_at: null,
      },
    },
    {
      table: 'password_reset_tokens',
      key: ['token_hash'],
      row: {
        token_hash: hashToken(secret.reset),
        user_id: 'u-bob',
        redirect_to: 'https://rp.example.com/signed-in',
        created_at: at(-60),
        expires_at: at(1740),
        used_at: null,
        revoked_at: null,
      },
    },
    {
      table: 'admin_setup_tokens',
      key: ['token_hash'],
      row: { token_hash: hashToken(secret.setup), created_at: at(-60), expires_at: at(day), used_at: null },
    },
  ];
  return { fixtures, secret };
}

/** Writes the fixtures whose table exists, with only the columns that exist; returns what was written. */
async function fill(db: Kysely<any>, fixtures: Fixture[]): Promise<Fixture[]> {
  const schema = await schemaOf(db);
  const written: Fixture[] = [];
  for (const f of fixtures) {
    const columns = schema.get(f.table);
    if (!columns) continue;
    const row = Object.fromEntries(
      Object.entries(f.row)
        .filter(([c]) => columns.has(c))
        .map(([c, v]) => [c, v instanceof Json ? JSON.stringify(v.value) : v]),
    );
    await db.insertInto(f.table).values(row).execute();
    written.push({ ...f, row });
  }
  return written;
}

const comparable = (v: unknown, json: boolean): unknown => {
  if (v instanceof Date) return v.toISOString();
  if (json && typeof v === 'string') return JSON.parse(v);
  return v;
};

t.test('the list of migrations is the directory, in order', async (t) => {
  const files = readdirSync(join(root, 'db', 'migrations'))
    .filter((f) => /^\d{4}-.*\.ts$/.test(f))
    .map((f) => f.replace(/\.ts$/, ''))
    .sort();
  t.same(names, files, 'index.ts lists every migration file, in the order they apply');
  t.ok(names.length >= 2);
});

for (const stop of stops) {
  t.test(`stopped at ${stop}, migrated to ${latest}: nothing lost, old tokens still work`, async (t) => {
    const database = await createTestDatabase({ migrated: false });
    t.teardown(() => database.dispose());
    const db = database.db as unknown as Kysely<any>;
    await migrateUpTo(database.db, stop);
    const { fixtures, secret } = dataset();
    const written = await fill(db, fixtures);
    const has = (table: string) => written.some((f) => f.table === table);
    t.ok(has('users') && has('applications') && has('audit_events'), `data written at ${stop}`);

    const applied = await migrateToLatest(database.db);
    t.same(
      applied.map((r) => r.migrationName),
      names.slice(names.indexOf(stop) + 1),
      'exactly the later migrations ran',
    );

    // An instance of the old release restarting during the rollout starts on the upgraded database.
    const older = Object.fromEntries(names.slice(0, names.indexOf(stop) + 1).map((n) => [n, migrations[n]!]));
    t.same(await migrateToLatest(database.db, older), [], `a release that knows up to ${stop} still starts`);
    // One that lacks a migration the database has and needs one the database lacks has diverged: it refuses.
    const diverged = Object.fromEntries(Object.entries(migrations).filter(([name]) => name !== stop));
    diverged['9999-elsewhere'] = migrations[names[0]!]!;
    await t.rejects(
      migrateToLatest(database.db, diverged),
      new RegExp(`does not know \\(${stop}\\) and lacks some it needs \\(9999-elsewhere\\)`),
      'a diverged release refuses to start',
    );

    // Nothing lost: the same rows, every written value equal, later columns at their default or backfill.
    const after = await schemaOf(db);
    const jsonColumns = new Set(
      fixtures.flatMap((f) =>
        Object.entries(f.row).flatMap(([c, v]) => (v instanceof Json ? [`${f.table}.${c}`] : [])),
      ),
    );
    for (const table of new Set(written.map((f) => f.table))) {
      const expected = written.filter((f) => f.table === table);
      const { count } = (await db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll().as('count'))
        .executeTakeFirstOrThrow()) as { count: number | string };
      t.equal(Number(count), expected.length, `${table}: ${expected.length} rows`);
      for (const f of expected) {
        let query = db.selectFrom(table).selectAll();
        for (const k of f.key) query = query.where(k, '=', f.row[k]);
        const row = (await query.executeTakeFirst()) as Row | undefined;
        const id = `${table} ${f.key.map((k) => f.row[k]).join('/')}`;
        if (!t.ok(row, `${id} is still there`) || !row) continue;
        for (const column of after.get(table)!) {
          if (table === 'audit_events' && column === 'id') continue;
          const json = jsonColumns.has(`${table}.${column}`);
          const want =
            column in f.row
              ? comparable(f.row[column], json)
              : (BACKFILLS[`${table}.${column}`]?.(f.row, written) ?? null);
          t.same(comparable(row[column], json), want, `${id}: ${column}`);
        }
      }
    }

    // Today's app over the upgraded database.
    const { app } = await buildTestApp(t, { database });
    const bearer = (token: string, url: string) =>
      app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });

    const signed = await signInWithInject(app, 'alice@example.com', PASSWORD);
    t.ok(cookiesOf(signed.res)['idp.session'], 'the password set before the upgrade signs in');
    const fresh = await obtainTokens(app, {
      clientId: CLIENT,
      redirectUri: REDIRECT,
      email: 'alice@example.com',
      password: PASSWORD,
      scope: SCOPE,
    });
    t.equal(
      (await userinfo(app, fresh.tokens.access_token)).statusCode,
      200,
      'a new flow on the old application works',
    );

    if (!has('access_tokens')) return;
    const me = await bearer(secret.access, '/api/external/me');
    t.equal(me.statusCode, 200, 'the access token issued before the upgrade works on /api/external/me');
    t.match(me.json(), { sub: 'u-alice', email: 'alice@example.com', name: 'Alice Liddell' });
    const info = await userinfo(app, secret.access);
    t.equal(info.statusCode, 200, '... and on UserInfo');
    t.equal(info.json().sub, 'u-alice');
    t.equal((await userinfo(app, secret.revokedAccess)).statusCode, 401, 'a token revoked before stays revoked');

    const refreshed = await tokenRequest(app, {
      grant_type: 'refresh_token',
      refresh_token: secret.refresh,
      client_id: CLIENT,
    });
    t.equal(refreshed.statusCode, 200, 'the refresh token issued before the upgrade rotates');
    const tokens = refreshed.json();
    t.not(tokens.refresh_token, secret.refresh);
    t.equal((await userinfo(app, tokens.access_token)).statusCode, 200, 'its new access token works');
    const jwks = jose.createLocalJWKSet((await app.inject({ method: 'GET', url: '/api/auth/jwks' })).json());
    const { protectedHeader, payload } = await jose.jwtVerify(tokens.id_token, jwks, { audience: CLIENT });
    t.equal(protectedHeader.kid, signingKey.kid, 'the ID token is signed by the key made before the upgrade');
    t.equal(payload.sub, 'u-alice');
    const reused = await tokenRequest(app, {
      grant_type: 'refresh_token',
      refresh_token: secret.refresh,
      client_id: CLIENT,
    });
    t.equal(reused.statusCode, 400, 'the old refresh token was rotated away');
    const revoked = await tokenRequest(app, {
      grant_type: 'refresh_token',
      refresh_token: secret.revokedRefresh,
      client_id: CLIENT,
    });
    t.equal(revoked.statusCode, 400, 'a refresh token revoked before stays revoked');

    const code = await tokenRequest(app, {
      grant_type: 'authorization_code',
      code: secret.code,
      code_verifier: secret.verifier,
      client_id: CLIENT,
      redirect_uri: REDIRECT,
    });
    t.equal(code.statusCode, 200, 'a code issued before the upgrade redeems after it');
    if (code.statusCode === 200) {
      const claims = jose.decodeJwt(code.json().id_token);
      t.equal(claims.nonce, 'nonce-before-upgrade');
    }

    // Links mailed before the upgrade still work.
    // (Its page opens; its button confirms: issue 31.)
    const verified = await confirmMailedLink(app, `/login/verify-email/confirm?token=${secret.verification}`);
    t.equal(verified.headers.location, 'https://rp.example.com/welcome', 'a verification link of before verifies');
    const dave = await db.selectFrom('users').select('email_verified').where('id', '=', 'u-dave').executeTakeFirst();
    t.equal(dave?.email_verified, true);
    if (has('password_reset_tokens')) {
      const reset = await app.inject({ method: 'GET', url: `/login/reset-password?token=${secret.reset}` });
      t.equal(reset.statusCode, 200, 'a reset link of before opens the reset form');
      t.match(reset.body, /autocomplete="new-password"/);
    }

    // The session cookie of before: signed in, and single sign-on with the remembered consent.
    const session = { 'idp.session': secret.session };
    t.equal((await app.inject({ method: 'GET', url: '/login/', cookies: session })).statusCode, 200, 'session cookie');
    const verifier = `${generateToken()}-sso`;
    const query = new URLSearchParams({
      client_id: CLIENT,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: SCOPE,
      code_challenge: s256Challenge(verifier),
      code_challenge_method: 'S256',
    });
    let jar: Record<string, string> = { ...session };
    let res = await app.inject({ method: 'GET', url: `/api/auth/oauth2/authorize?${query}`, cookies: jar });
    const visited: string[] = [];
    for (let hop = 0; hop < 10 && !String(res.headers.location ?? '').startsWith(REDIRECT); hop++) {
      jar = { ...jar, ...cookiesOf(res) };
      const location = new URL(String(res.headers.location), 'http://localhost');
      visited.push(location.pathname);
      res = await app.inject({ method: 'GET', url: location.pathname + location.search, cookies: jar });
    }
    t.notOk(
      visited.some((p) => p.startsWith('/login/sign-in') || p.startsWith('/login/consent')),
      `no sign-in and no consent page (${visited.join(' -> ') || 'straight back'})`,
    );
    const sso = new URL(String(res.headers.location)).searchParams.get('code');
    t.ok(sso, 'single sign-on issued a code');
    const exchanged = await tokenRequest(app, {
      grant_type: 'authorization_code',
      code: sso ?? '',
      code_verifier: verifier,
      client_id: CLIENT,
      redirect_uri: REDIRECT,
    });
    t.equal(exchanged.statusCode, 200, 'and the code exchanges');
  });
}

// ---- The migration sources -------------------------------------------------------------------------------

const sources = names.map((name) => {
  const text = readFileSync(join(root, 'db', 'migrations', `${name}.ts`), 'utf8');
  const start = text.indexOf('export async function up(');
  const end = text.indexOf('export async function down(');
  return { name, up: text.slice(start, end === -1 ? undefined : end) };
});

// Statements in an `up` that can break an instance of the previous release still running against the
// upgraded database (it reads or writes the old shape until it is replaced). Each one needs an entry
// here saying why it is acceptable; better, write the change in two releases (add now, drop later).
const DESTRUCTIVE = new RegExp(
  [
    String.raw`\.(dropColumn|renameColumn|dropTable|renameTo|setDataType|setNotNull)\(`,
    String.raw`\bdrop\s+(column|table)\b`,
    String.raw`\brename\s+(column|to)\b`,
    String.raw`\bset\s+not\s+null\b`,
    String.raw`\balter\s+column\s+\w+\s+(set\s+data\s+)?type\b`,
  ].join('|'),
  'gi',
);
const ALLOWED: Record<string, { statements: string[]; why: string }> = {
  '0007-verification-address': {
    statements: ['.setNotNull('],
    why:
      'email_verification_tokens.email is backfilled in the same migration; an instance of a release before ' +
      '0007 still running cannot store new verification links until it is replaced (its sign-ups answer 500 ' +
      'for that window); everything already stored keeps working',
  },
};

t.test('migrations are forward-only: the app and the CLI never migrate down', async (t) => {
  const offenders: string[] = [];
  const scan = (dir: string) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) scan(path);
      else if (
        entry.name.endsWith('.ts') &&
        /\b(migrateDown|NO_MIGRATIONS)\b|\.down\(/.test(readFileSync(join(root, path), 'utf8'))
      )
        offenders.push(path);
    }
  };
  for (const dir of ['app', 'src', 'plugins', 'db']) scan(dir);
  t.same(offenders, [], 'nothing calls a down migration');
  t.notMatch(
    readFileSync(join(root, 'src', 'cli', 'migrate.ts'), 'utf8'),
    /--down|--to\b|rollback/i,
    'idp migrate has no way down',
  );
});

/** What in a migration's `up` may break an instance of the previous release (destructive or bare NOT NULL). */
function hazards(up: string): string[] {
  const found = [...up.matchAll(DESTRUCTIVE)].map((m) => m[0]);
  // A NOT NULL column added to an existing table needs a default, or old instances' inserts fail.
  for (const statement of up.split(/\.execute\(/)) {
    const added = /\.alterTable\(/.test(statement)
      ? [...statement.matchAll(/\.addColumn\(([^()]|\([^()]*\))*\)/g)].map((m) => m[0])
      : [];
    for (const column of added) if (/notNull\(\)/.test(column) && !/defaultTo\(/.test(column)) found.push(column);
    for (const m of statement.matchAll(/\badd\s+column\s+[^,;`]*/gi))
      if (/\bnot\s+null\b/i.test(m[0]) && !/\bdefault\b/i.test(m[0])) found.push(m[0]);
  }
  return found;
}

t.test('the hazard scan finds what it should', async (t) => {
  t.same(hazards(`db.schema.alterTable('users').dropColumn('name').execute();`), ['.dropColumn(']);
  t.same(hazards('sql`alter table users rename column name to full_name`.execute(db)'), ['rename column']);
  t.same(hazards('sql`alter table users alter column name type varchar(10)`.execute(db)'), ['alter column name type']);
  const bare = `db.schema.alterTable('users').addColumn('x', 'text', (c) => c.notNull()).execute();`;
  t.same(hazards(bare), [`.addColumn('x', 'text', (c) => c.notNull())`]);
  t.same(hazards('sql`alter table users add column x text not null`.execute(db)'), ['add column x text not null']);
  const safe = [
    `db.schema.alterTable('users').addColumn('x', 'text', (c) => c.notNull().defaultTo('a')).execute();`,
    `db.schema.createTable('t').addColumn('x', 'text', (c) => c.notNull()).execute();`,
    "sql`alter table users add column x text not null default ''`.execute(db)",
  ];
  for (const up of safe) t.same(hazards(up), [], up);
});

t.test('migrations are additive while old instances run (or say why not)', async (t) => {
  for (const { name, up } of sources) {
    const allowed = ALLOWED[name]?.statements ?? [];
    const found = hazards(up);
    t.same(
      found.filter((s) => !allowed.includes(s)),
      [],
      `${name}: no drop, rename, type change or NOT NULL without default on an existing table (or an ALLOWED entry)`,
    );
    for (const s of allowed) t.ok(found.includes(s), `${name}: the ALLOWED entry ${s} is still needed`);
  }
});
