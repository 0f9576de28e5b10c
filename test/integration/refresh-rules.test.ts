// Each refusal rule of refresh stated once (db/repositories/refresh-rules.ts): every rule runs through both of
// its halves on a real database (PGlite, or PostgreSQL with DATABASE_URL) over generated rows: its SQL (what
// the one-step rotation's WHERE clause is made of) and its TypeScript reading of the locked row (what explains
// a refusal). A rule whose halves disagree on any row fails here, and so does a rotation statement that
// rotates a token some rule refuses, or refuses one every rule accepts.
import t from 'tap';
import fc from 'fast-check';
import { sql } from 'kysely';
import { randomUUID } from 'node:crypto';
import { createTestDatabase } from '../helpers/db.js';
import { rotateCurrentRefreshToken } from '../../db/repositories/issuance.js';
import { lockRefreshToken } from '../../db/repositories/refresh-tokens.js';
import { type RefreshRuleName, refreshChecks, refreshRules } from '../../db/repositories/refresh-rules.js';

const database = await createTestDatabase();
t.teardown(() => database.dispose());
const db = database.db;

await sql`insert into users (id, email, disabled) values ('user-on', 'on@example.com', false),
  ('user-off', 'off@example.com', true)`.execute(db);

/** A time relative to the transaction's now(), in whole milliseconds (the precision a JS Date keeps). */
const offset = fc.oneof(
  fc.constantFrom(0, 1, -1, 1000, -1000, 86_400_000, -86_400_000),
  fc.integer({ min: -10 * 86_400_000, max: 10 * 86_400_000 }),
);
const row = fc.record({
  tokenClient: fc.constantFrom('client-a', 'client-b'),
  requestClient: fc.constantFrom('client-a', 'client-b'),
  user: fc.constantFrom('user-on', 'user-off'),
  tokenRevoked: fc.option(offset, { freq: 3 }),
  grantRevoked: fc.option(offset, { freq: 3 }),
  used: fc.option(offset, { freq: 3 }),
  expires: offset,
  absoluteExpires: offset,
});
type Row = typeof row extends fc.Arbitrary<infer R> ? R : never;

const at = (ms: number | null) =>
  ms === null ? null : sql`now() + make_interval(secs => ${ms / 1000}::double precision)`;
/** Seen holding and failing, per rule, so that the generator is known to reach both sides of each. */
const seen = new Map<RefreshRuleName, Set<boolean>>(refreshRules.map((rule) => [rule.name, new Set()]));

class Rollback extends Error {}

/** Inserts the row in a transaction, evaluates every rule both ways and the rotation itself, then rolls back. */
async function compare(r: Row): Promise<void> {
  const grantId = randomUUID();
  const tokenHash = randomUUID();
  await db
    .transaction()
    .execute(async (trx) => {
      await sql`insert into grants (id, user_id, client_id, scope, revoked_at, auth_time)
        values (${grantId}, ${r.user}, ${r.tokenClient}, 'openid', ${at(r.grantRevoked)}, now())`.execute(trx);
      await sql`insert into refresh_tokens (token_hash, grant_id, client_id, user_id, scope, expires_at,
          absolute_expires_at, used_at, revoked_at)
        values (${tokenHash}, ${grantId}, ${r.tokenClient}, ${r.user}, 'openid', ${at(r.expires)},
          ${at(r.absoluteExpires)}, ${at(r.used)}, ${at(r.tokenRevoked)})`.execute(trx);
      // now() is the transaction's start: the same instant for the inserts, the SQL rules and the statement.
      const now = (await sql<{ now: Date }>`select now() as now`.execute(trx)).rows[0]!.now;
      const locked = await lockRefreshToken(trx, tokenHash);
      if (!locked) throw new Error('the locked read found no row');
      const checks = refreshChecks(locked, { clientId: r.requestClient, now: new Date(now).getTime() });
      for (const rule of refreshRules) {
        // The rule's client placeholder is any SQL expression: here the requesting client, as a bound value.
        const { rows } = await sql<{
          holds: boolean | null;
        }>`with request as (select ${r.requestClient}::text as client)
          select (${sql.raw(rule.sql('request.client'))}) as holds
          from refresh_tokens r join grants g on g.id = r.grant_id join users u on u.id = r.user_id, request
          where r.token_hash = ${tokenHash}`.execute(trx);
        if (rows.length !== 1) throw new Error(`${rule.name}: ${rows.length} rows`);
        const bySql = rows[0]!.holds;
        seen.get(rule.name)!.add(checks[rule.name]);
        if (bySql !== checks[rule.name])
          throw new Error(`${rule.name} (${rule.description}): SQL says ${bySql}, TypeScript ${checks[rule.name]}`);
      }
      const rotated = await rotateCurrentRefreshToken(trx, {
        presentedHash: tokenHash,
        clientId: r.requestClient,
        accessHash: randomUUID(),
        accessExpiresAt: new Date(Date.now() + 3_600_000),
        refreshId: randomUUID(),
        refreshHash: randomUUID(),
        refreshExpiresAt: new Date(Date.now() + 86_400_000),
        sealed: null,
        accessSealed: null,
      });
      const every = Object.values(checks).every(Boolean);
      if (Boolean(rotated) !== every)
        throw new Error(`the rotation statement ${rotated ? 'rotated' : 'refused'}: ${JSON.stringify(checks)}`);
      throw new Rollback();
    })
    .catch((e: unknown) => {
      if (!(e instanceof Rollback)) throw e;
    });
}

t.test('every refresh rule: its SQL and its TypeScript agree on generated rows', async (t) => {
  await fc.assert(fc.asyncProperty(row, compare), { numRuns: 300 });
  for (const [name, outcomes] of seen) t.same([...outcomes].sort(), [false, true], `${name}: seen holding and failing`);
});

t.test('the boundaries, each rule failing alone', async (t) => {
  const current: Row = {
    tokenClient: 'client-a',
    requestClient: 'client-a',
    user: 'user-on',
    tokenRevoked: null,
    grantRevoked: null,
    used: null,
    expires: 1,
    absoluteExpires: 1,
  };
  const cases: Array<[string, Partial<Row>]> = [
    ['current', {}],
    ['another client', { requestClient: 'client-b' }],
    ['token revoked', { tokenRevoked: 0 }],
    ['grant revoked', { grantRevoked: 1000 }],
    ['used', { used: -1 }],
    ['expires now', { expires: 0 }],
    ['expired a millisecond ago', { expires: -1 }],
    ['absolute lifetime ends now', { absoluteExpires: 0 }],
    ['disabled user', { user: 'user-off' }],
  ];
  for (const [name, change] of cases) {
    await compare({ ...current, ...change });
    t.pass(name);
  }
});
