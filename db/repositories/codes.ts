// Authorization codes are sealed (src/oauth/sealed-code.ts), not stored: issuing one writes nothing, and the
// exchange spends it by creating its grant, under the grant id the code carries, in one statement with the
// grant's tokens and audit events.
import { CompiledQuery } from 'kysely';
import { executePrepared, type Db } from '../create-db.js';
import { type BearerQueryRow, type BearerRow, bearerSelect, toBearerRow } from './access-tokens.js';

/** The tokens a code exchange records if every check passes (sealed and stored codes alike). */
export interface CodeTokens {
  accessHash: string;
  accessExpiresAt: Date;
  /** Recorded only when the code's scope has offline_access. */
  refreshId: string;
  refreshHash: string;
  refreshExpiresAt: Date;
  refreshAbsoluteExpiresAt: Date;
}

/** The parameters of CodeTokens, in the order both exchange statements number them. */
export const codeTokenParameters = (t: CodeTokens): unknown[] => [
  t.accessHash,
  t.accessExpiresAt,
  t.refreshId,
  t.refreshHash,
  t.refreshExpiresAt,
  t.refreshAbsoluteExpiresAt,
];

/** What the opened code says, what the request's checks found, and the tokens to record if every check passes. */
export interface CodeExchange extends CodeTokens {
  grantId: string;
  clientId: string;
  userId: string;
  sessionId: string;
  scope: string;
  authTime: Date;
  /** The session's amr when the code was issued (the grant's amr); null for a code sealed before amr was. */
  amr: readonly string[] | null;
  /** When the code was issued: the database's timestamptz, as text (microseconds kept). */
  issuedAt: string;
  expiresAt: Date;
  /** The checks made without the database (client, redirect_uri, PKCE) all passed. */
  requestMatches: boolean;
  /** The resources (RFC 8707) the grant records; [] for none. */
  resources: readonly string[];
  /** The access token's scope (the grant's, narrowed to its audience) and audience (null: none named). */
  accessScope: string;
  audience: string | null;
}

/** The checks only the database can make, each true when it passed. */
export interface StoredChecks {
  unexpired: boolean;
  /** The user exists and is enabled. */
  userActive: boolean;
  /** The code's session is live and no revocation of the user's codes came after the code. */
  sessionLive: boolean;
  /** The consent the code was issued under is still there (revoking the application's access deletes it). */
  consented: boolean;
}

export type CodeExchangeResult =
  | { kind: 'unknown' }
  | { kind: 'replayed' }
  | {
      kind: 'consumed';
      checks: StoredChecks;
      /** The tokens were recorded (every check passed); with a refresh token when the scope allowed one. */
      issued: false | { refresh: boolean; bearer: BearerRow | undefined };
    };

// One statement, so that it is all or nothing without BEGIN/COMMIT. checked reads the user (enabled, codes not
// revoked since $7, the code's issue time), the code's session (live) and the consent it was issued under (not
// revoked: deleted, and perhaps given again, since). g spends the code: it inserts the grant
// under the code's grant id; of two exchanges of one code exactly one inserts it (the second waits for the first's
// insert to commit, then does nothing: a replay). The grant is inserted live only when every check passed ($9 says
// the client, redirect_uri and PKCE did), revoked otherwise, so a failed check spends the code and a later try is
// a replay. Access token, refresh token (scope with offline_access), authorization.granted and token.issued are
// written only from ok, the live grant. No row of the user: the code is unknown (the user was deleted).
// $1 grant id, $2 client, $3 user, $4 session, $5 scope, $6 auth_time, $7 issued at, $8 expires at, $9 request
// checks, $10 access hash, $11 its expiry, $12-$15 refresh id, hash, expiry, absolute expiry, $16 idle timeout,
// $17 the session's amr (jsonb; null: a code sealed before amr was), $18 the grant's resources (jsonb), $19 the
// access token's scope (the grant's narrowed to its audience), $20 its audience (null: none named).
const EXCHANGE = `with checked as (
  select u.id, $8::timestamptz > now() as unexpired, u.disabled = false as user_active,
    (u.codes_revoked_at is null or u.codes_revoked_at < $7::timestamptz) and exists (
      select 1 from sessions s where s.id = $4::text and s.user_id = u.id and s.revoked_at is null
        and s.expires_at > now()) as session_live,
    exists (select 1 from consents k where k.user_id = u.id and k.client_id = $2::text
      and k.created_at <= $7::timestamptz) as consented
  from users u where u.id = $3::text
), g as (
  insert into grants (id, user_id, client_id, scope, session_id, auth_time, amr, resources, revoked_at)
  select $1::text, id, $2::text, $5::text, $4::text, $6::timestamptz, $17::jsonb, $18::jsonb,
    case when $9::boolean and unexpired and user_active and session_live and consented then null else now() end
  from checked
  on conflict (id) do nothing
  returning id, revoked_at
), ok as (
  select id, 'offline_access' = any(string_to_array($5::text, ' ')) as offline from g where revoked_at is null
), access as (
  insert into access_tokens (token_hash, grant_id, client_id, user_id, scope, session_id, expires_at, audience)
  select $10::text, id, $2::text, $3::text, $19::text, $4::text, $11::timestamptz, $20::text from ok
  returning token_hash, grant_id, client_id, user_id, scope, session_id, created_at, expires_at, revoked_at, audience
), refresh as (
  insert into refresh_tokens (id, token_hash, grant_id, client_id, user_id, scope, expires_at, absolute_expires_at)
  select $12::text, $13::text, id, $2::text, $3::text, $5::text, $14::timestamptz, $15::timestamptz
  from ok where offline
  returning id
), audit as (
  insert into audit_events (type, user_id, client_id, detail)
  select e.type, $3::text, $2::text, e.detail
  from ok, lateral (values
    (1, 'authorization.granted', jsonb_build_object('scope', $5::text, 'grantId', ok.id)),
    (2, 'token.issued', jsonb_build_object('grantId', ok.id, 'scope', $19::text, 'refresh', ok.offline))
  ) e(n, type, detail)
  order by e.n
)
select case when exists (select 1 from g) then 'consumed' else 'replayed' end as kind, c.unexpired, c.user_active,
  c.session_live, c.consented, exists (select 1 from access) as issued,
  exists (select 1 from refresh) as refresh_issued, b.*
from checked c left join (${bearerSelect('access', '$16', 'g')}) b on true`;

type ExchangeRow = Partial<BearerQueryRow> & {
  kind: 'consumed' | 'replayed';
  unexpired: boolean;
  user_active: boolean;
  session_live: boolean;
  consented: boolean;
  issued: boolean;
  refresh_issued: boolean;
};

/**
 * Exchanges an opened code in one atomic statement: spends it and, only when every check passes, records its
 * grant, access token, refresh token (scope with offline_access), authorization.granted and token.issued.
 */
export async function exchangeAuthorizationCode(
  db: Db,
  x: CodeExchange,
  sessionIdleSeconds: number,
): Promise<CodeExchangeResult> {
  const parameters = [
    x.grantId,
    x.clientId,
    x.userId,
    x.sessionId,
    x.scope,
    x.authTime,
    x.issuedAt,
    x.expiresAt,
    x.requestMatches,
    ...codeTokenParameters(x),
    sessionIdleSeconds,
    x.amr === null ? null : JSON.stringify(x.amr),
    JSON.stringify(x.resources),
    x.accessScope,
    x.audience,
  ];
  const query = CompiledQuery.raw(EXCHANGE, parameters) as CompiledQuery<ExchangeRow>;
  const [row] = await executePrepared(db, 'idp_exchange_sealed_code', query);
  if (!row) return { kind: 'unknown' };
  if (row.kind === 'replayed') return { kind: 'replayed' };
  const {
    kind: _kind,
    unexpired,
    user_active,
    session_live,
    consented,
    issued,
    refresh_issued,
    ...bearerColumns
  } = row;
  const checks: StoredChecks = {
    unexpired: unexpired === true,
    userActive: user_active === true,
    sessionLive: session_live === true,
    consented: consented === true,
  };
  const bearer = bearerColumns.token_hash ? toBearerRow(bearerColumns as BearerQueryRow) : undefined;
  return { kind: 'consumed', checks, issued: issued === true && { refresh: refresh_issued === true, bearer } };
}
