// Each rule of single sign-on in one statement stated once in SQL (db/repositories/sso-rules.ts), with its
// TypeScript twin in nextStep()'s issueChecks (src/oauth/authorize-flow.ts): on a real database (PGlite, or
// PostgreSQL with DATABASE_URL), over generated sessions, users, remembered consents and requests, every rule's
// SQL and its twin agree; and the one-statement lookup (sessionForCode) finds the session exactly when the long
// way (findLiveSession, findConsent, nextStep) answers 'issue'. Each row lives in a rolled-back transaction, so
// that now() is one instant for the rows, the SQL rules, the statement and the clock nextStep() is given.
import t from 'tap';
import fc from 'fast-check';
import { sql } from 'kysely';
import { randomUUID } from 'node:crypto';
import { createTestDatabase } from '../helpers/db.js';
import { sessionForCode } from '../../db/repositories/issuance.js';
import { findLiveSession } from '../../db/repositories/sessions.js';
import { findConsent } from '../../db/repositories/consents.js';
import { type SsoRuleName, ssoRules } from '../../db/repositories/sso-rules.js';
import type { MfaMode } from '../../src/domain/mfa.js';
import {
  issueChecks,
  type LevelPolicy,
  requiredAcr,
  nextStep,
  nothingDone,
  type Presenter,
  type PresentedInput,
  ssoApplies,
  type StepParams,
} from '../../src/oauth/authorize-flow.js';

const database = await createTestDatabase();
t.teardown(() => database.dispose());
const db = database.db;

const IDLE = 3600;
const TOUCH = 60;
const SCOPES = ['openid', 'profile', 'email', 'offline_access'];

/** Milliseconds relative to the transaction's now() (whole milliseconds: the precision a JS Date keeps). */
const around = (...boundaries: number[]) =>
  fc.oneof(
    fc.constantFrom(...boundaries.flatMap((b) => [b - 1, b, b + 1])),
    fc.integer({ min: -2 * 86_400_000, max: 2 * 86_400_000 }),
  );
/** Mostly `usual`, sometimes any of `arbitrary`: so that a session that gets a code is generated often too. */
const mostly = <T>(usual: T, arbitrary: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 3, arbitrary: fc.constant(usual) }, { weight: 2, arbitrary });
const row = fc.record({
  disabled: mostly(false, fc.boolean()),
  emailVerified: mostly(true, fc.boolean()),
  sessionRevoked: mostly(null, fc.option(around(0))),
  sessionExpires: mostly(86_400_000, around(0)),
  /** last_seen_at, relative to the idle timeout's edge. */
  lastSeen: mostly(-1000, around(-IDLE * 1000, 0)),
  /** How long ago the user signed in (max_age's boundaries included). */
  authAge: around(0, 1000, 60_000, 3_600_000),
  maxAge: fc.option(fc.constantFrom(0, 1, 60, 3600)),
  consentClient: mostly<string | null>('client-a', fc.option(fc.constantFrom('client-a', 'client-b'))),
  consentScopes: mostly(SCOPES, fc.subarray(SCOPES)),
  requestClient: mostly('client-a', fc.constantFrom('client-a', 'client-b')),
  /** Always with openid, as authorize requires (parseRequestedScope). */
  requestScopes: fc.subarray(SCOPES.slice(1)).map((s) => ['openid', ...s]),
  prompt: mostly<string[]>([], fc.subarray(['none', 'login', 'consent', 'create'])),
  /** How the session's user authenticated (its acr follows: mfa or not). */
  amr: fc.constantFrom(['pwd'], ['pwd', 'otp', 'mfa'], ['swk', 'user', 'mfa'], ['hwk']),
  /** The level policy and what the request asks (requiredAcr). */
  mfa: mostly<MfaMode>('optional', fc.constantFrom<MfaMode>('off', 'optional', 'required')),
  applicationRequiresMfa: mostly(false, fc.boolean()),
  acrValues: mostly<string[] | null>(null, fc.option(fc.subarray(['urn:idp:pwd', 'urn:idp:mfa', 'urn:x:other']))),
});
type Row = typeof row extends fc.Arbitrary<infer R> ? R : never;

/** The rules' placeholders, as columns of the request's bound values (see compare). */
const placeholders = {
  client: 'request.client',
  maxAge: 'request.max_age',
  scopes: 'request.scopes',
  mfaRequired: 'request.mfa_required',
};

const at = (ms: number | null) =>
  ms === null ? null : sql`now() + make_interval(secs => ${ms / 1000}::double precision)`;

/** Seen holding and failing, per rule, and both answers of the whole decision. */
const seen = new Map<SsoRuleName | 'issue', Set<boolean>>([
  ...ssoRules.map((rule) => [rule.name, new Set<boolean>()] as const),
  ['issue', new Set<boolean>()],
]);

class Rollback extends Error {}

/** Inserts the row in a transaction, runs every rule both ways and both decisions, then rolls back. */
async function compare(r: Row): Promise<void> {
  const userId = randomUUID();
  const sessionId = randomUUID();
  const sessionHash = randomUUID();
  const params: StepParams = {
    scope: r.requestScopes,
    prompt: r.prompt,
    max_age: r.maxAge ?? undefined,
    ...(r.acrValues && { acr_values: r.acrValues }),
  };
  const policy: LevelPolicy = { mfa: r.mfa, applicationRequiresMfa: r.applicationRequiresMfa };
  const mfaRequired = requiredAcr(params, policy) === 'urn:idp:mfa';
  await db
    .transaction()
    .execute(async (trx) => {
      await sql`insert into users (id, email, disabled, email_verified)
        values (${userId}, ${`${userId}@example.com`}, ${r.disabled}, ${r.emailVerified})`.execute(trx);
      await sql`insert into sessions (id, token_hash, user_id, auth_time, last_seen_at, expires_at, revoked_at, amr)
        values (${sessionId}, ${sessionHash}, ${userId}, ${at(-r.authAge)}, ${at(r.lastSeen)},
          ${at(r.sessionExpires)}, ${at(r.sessionRevoked)}, ${JSON.stringify(r.amr)}::jsonb)`.execute(trx);
      if (r.consentClient)
        await sql`insert into consents (user_id, client_id, scopes)
          values (${userId}, ${r.consentClient}, ${JSON.stringify(r.consentScopes)}::jsonb)`.execute(trx);
      // now() is the transaction's start: the same instant for the inserts, the SQL rules and the statement.
      const now = new Date((await sql<{ now: Date }>`select now() as now`.execute(trx)).rows[0]!.now);

      // Each rule: its SQL over the session and its user (live or not), and its twin over the same row.
      const stored = (
        await sql<{ auth_time: Date; amr: string[]; email_verified: boolean; disabled: boolean }>`select s.auth_time,
          s.amr, u.email_verified, u.disabled from sessions s join users u on u.id = s.user_id
          where s.id = ${sessionId}`.execute(trx)
      ).rows[0]!;
      const presented: PresentedInput = {
        request: nothingDone(params),
        presenter: {
          session: { id: sessionId, auth_time: new Date(stored.auth_time), amr: stored.amr },
          user: { id: userId, email_verified: stored.email_verified, disabled: stored.disabled },
        },
        remembered: await findConsent(trx, userId, r.requestClient),
        now,
        policy,
      };
      const checks = {} as Record<SsoRuleName, boolean>;
      for (const rule of ssoRules) {
        // The rule's placeholders are any SQL expressions: here the request's values, bound.
        const { rows } = await sql<{ holds: boolean | null }>`with request as (
            select ${r.requestClient}::text as client, ${r.maxAge}::double precision as max_age,
              ${JSON.stringify(r.requestScopes)}::jsonb as scopes, ${mfaRequired}::boolean as mfa_required)
          select (${sql.raw(rule.sql(placeholders))}) as holds
          from sessions s join users u on u.id = s.user_id, request where s.id = ${sessionId}`.execute(trx);
        if (rows.length !== 1) throw new Error(`${rule.name}: ${rows.length} rows`);
        const bySql = rows[0]!.holds;
        const twin = issueChecks[rule.name](presented);
        checks[rule.name] = twin;
        seen.get(rule.name)!.add(twin);
        if (bySql !== twin) throw new Error(`${rule.name} (${rule.description}): SQL says ${bySql}, its twin ${twin}`);
      }

      // The long way, as authorize takes it when the statement finds nothing: the live session, its user's
      // remembered consent to the client, nextStep() on a request nothing was done on.
      const live = await findLiveSession(trx, sessionHash, IDLE, TOUCH);
      const presenter: Presenter | undefined = live && { session: live.session, user: live.user };
      const remembered = presenter && (await findConsent(trx, userId, r.requestClient));
      // The user's factors as the service loads them when a level is required: one, so a step-up is offered.
      const step = nextStep({
        request: nothingDone(params),
        presenter,
        remembered,
        now,
        policy,
        hasSecondFactor: true,
      });
      // The one statement, which authorize tries first when ssoApplies.
      const found = await sessionForCode(trx, r.requestClient, {
        sessionHash,
        idleSeconds: IDLE,
        touchSeconds: TOUCH,
        maxAge: r.maxAge,
        scopes: r.requestScopes,
        mfaRequired,
      });
      const every = Object.values(checks).every(Boolean);
      seen.get('issue')!.add(step === 'issue');
      // Behind the rules, the statement and findLiveSession judge the session's liveness alike (liveSessionCtes).
      const sessionLive = (
        await sql<{ live: boolean }>`select (revoked_at is null and expires_at > now()
          and last_seen_at > now() - make_interval(secs => ${IDLE}::double precision)) as live
          from sessions where id = ${sessionId}`.execute(trx)
      ).rows[0]!.live;
      if (Boolean(found) !== (sessionLive && every))
        throw new Error(`the statement ${found ? 'found' : 'refused'}: live ${sessionLive}, ${JSON.stringify(checks)}`);
      if ((ssoApplies(params) && Boolean(found)) !== (step === 'issue'))
        throw new Error(
          `the statement ${found ? 'found' : 'refused'} (prompt ${params.prompt.join(' ')}), ` +
            `nextStep answers ${JSON.stringify(step)}: ${JSON.stringify(checks)}`,
        );
      if (found && (found.sessionId !== sessionId || found.userId !== userId))
        throw new Error(`the statement found ${JSON.stringify(found)}`);
      throw new Rollback();
    })
    .catch((e: unknown) => {
      if (!(e instanceof Rollback)) throw e;
    });
}

t.test('every single sign-on rule: its SQL and its twin agree; the statement issues when nextStep does', async (t) => {
  t.same(
    Object.keys(issueChecks).sort(),
    ssoRules.map((rule) => rule.name).sort(),
    'one twin per rule, one rule per twin',
  );
  await fc.assert(fc.asyncProperty(row, compare), { numRuns: 300 });
  for (const [name, outcomes] of seen) t.same([...outcomes].sort(), [false, true], `${name}: seen holding and failing`);
});

t.test('the boundaries, each rule failing alone', async (t) => {
  const issuing: Row = {
    disabled: false,
    emailVerified: true,
    sessionRevoked: null,
    sessionExpires: 86_400_000,
    lastSeen: -1000,
    authAge: 30_000,
    maxAge: null,
    consentClient: 'client-a',
    consentScopes: ['openid', 'profile'],
    requestClient: 'client-a',
    requestScopes: ['openid', 'profile'],
    prompt: [],
    amr: ['pwd'],
    mfa: 'optional',
    applicationRequiresMfa: false,
    acrValues: null,
  };
  const cases: Array<[string, Partial<Row>]> = [
    ['issuing', {}],
    ['prompt=none, issuing', { prompt: ['none'] }],
    ['prompt=login', { prompt: ['login'] }],
    ['prompt=consent', { prompt: ['consent'] }],
    ['disabled user', { disabled: true }],
    ['unverified e-mail', { emailVerified: false }],
    ['signed in exactly max_age ago', { maxAge: 60, authAge: 60_000 }],
    ['signed in a millisecond over max_age', { maxAge: 60, authAge: 60_001 }],
    ['max_age=0, signed in this instant', { maxAge: 0, authAge: 0 }],
    ['max_age=0, signed in a millisecond ago', { maxAge: 0, authAge: 1 }],
    ['consent to another client', { consentClient: 'client-b' }],
    ['no consent remembered', { consentClient: null }],
    ['a scope beyond the consent', { requestScopes: ['openid', 'profile', 'email'] }],
    ['session revoked', { sessionRevoked: 0 }],
    ['session expires now', { sessionExpires: 0 }],
    ['session idle exactly the timeout', { lastSeen: -IDLE * 1000 }],
    ['session idle a millisecond under the timeout', { lastSeen: -IDLE * 1000 + 1 }],
    ['acr_values=urn:idp:mfa, a password session', { acrValues: ['urn:idp:mfa'] }],
    ['acr_values=urn:idp:mfa, a session with mfa', { acrValues: ['urn:idp:mfa'], amr: ['pwd', 'otp', 'mfa'] }],
    ['acr_values=urn:idp:pwd, a password session', { acrValues: ['urn:idp:pwd'] }],
    ['an unknown acr value, a password session', { acrValues: ['urn:x:other'] }],
    ['MFA=required, a password session', { mfa: 'required' }],
    ['MFA=required, a passkey session with mfa', { mfa: 'required', amr: ['swk', 'user', 'mfa'] }],
    ['the application requires MFA, a password session', { applicationRequiresMfa: true }],
    ['the application requires MFA, MFA=off', { applicationRequiresMfa: true, mfa: 'off' }],
    [
      'the application requires MFA, a passkey without user verification',
      { applicationRequiresMfa: true, amr: ['hwk'] },
    ],
    [
      'max_age exceeded and mfa asked of a session with mfa',
      { maxAge: 60, authAge: 60_001, mfa: 'required', amr: ['pwd', 'otp', 'mfa'] },
    ],
  ];
  for (const [name, change] of cases) {
    await compare({ ...issuing, ...change });
    t.pass(name);
  }
});
