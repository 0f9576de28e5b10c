// Authorization codes STORED by the releases before sealed codes (db/migrations/0012-sealed-codes.ts): such a
// code, issued before an upgrade or by an instance of the earlier release during a rolling one, still redeems
// until it expires (60 s). The exchange consumes it, checks it and records its tokens in one statement, as
// before. To be removed, with the table, by a later release.
import { CompiledQuery } from 'kysely';
import { executePrepared, type Db } from '../create-db.js';
import { type BearerQueryRow, type BearerRow, bearerSelect, toBearerRow } from './access-tokens.js';
import { type CodeTokens, codeTokenParameters } from './codes.js';

/** What a token request brings to a code exchange, and the tokens to record if the code passes. */
export interface StoredCodeExchange extends CodeTokens {
  codeHash: string;
  /** The authenticated client's id. */
  clientId: string;
  /** The request's redirect_uri. */
  redirectUri: string;
  /** BASE64URL(SHA256(code_verifier)), computed from the request's verifier. */
  codeChallenge: string;
}

/** The code's checks, each true when it passed (null on a replay: nothing was checked). */
export interface StoredCodeChecks {
  sameClient: boolean;
  unexpired: boolean;
  sameRedirectUri: boolean;
  pkce: boolean;
  userActive: boolean;
}

export interface ExchangedCode {
  grantId: string;
  clientId: string;
  userId: string;
  nonce: string | null;
  scope: string;
  authTime: Date;
  sessionId: string | null;
}

export type StoredCodeExchangeResult =
  | { kind: 'unknown' }
  | { kind: 'replayed'; code: ExchangedCode }
  | {
      kind: 'consumed';
      code: ExchangedCode;
      checks: StoredCodeChecks;
      /** The tokens were recorded (every check passed); with a refresh token when the scope allowed one. */
      issued: false | { refresh: boolean; bearer: BearerRow | undefined };
    };

// One statement, so that it is all or nothing without BEGIN/COMMIT: c consumes the code (of two concurrent
// exchanges exactly one gets the row: the second update waits for the first's row lock, re-reads consumed_at
// and matches nothing); checked compares it with the request; the access token, the refresh token (when the
// scope has offline_access) and token.issued are written only from ok, the row that passed every check, so a
// failed check spends the code and writes nothing else. A code that exists but was consumed before comes back
// as 'replayed' (read in the statement's snapshot, only when c got nothing). The PKCE challenges are compared
// as their SHA-256 digests, so the comparison's time says nothing about the stored challenge. The answer
// carries the new access token as the bearer lookup would find it ($11: the session idle timeout).
const EXCHANGE = `with c as (
  update authorization_codes set consumed_at = now() where code_hash = $1::text and consumed_at is null
  returning grant_id, client_id, user_id, redirect_uri, code_challenge, nonce, scope, auth_time, session_id,
    expires_at
), checked as (
  select c.grant_id, c.client_id, c.user_id, c.nonce, c.scope, c.auth_time, c.session_id,
    c.client_id = $2::text as same_client, c.expires_at > now() as unexpired,
    coalesce(c.redirect_uri = $3::text, false) as same_redirect_uri,
    sha256(convert_to(c.code_challenge, 'UTF8')) = sha256(convert_to($4::text, 'UTF8')) as pkce,
    coalesce(u.disabled = false, false) as user_active,
    'offline_access' = any(string_to_array(c.scope, ' ')) as offline
  from c left join users u on u.id = c.user_id
), ok as (
  select * from checked where same_client and unexpired and same_redirect_uri and pkce and user_active
), access as (
  insert into access_tokens (token_hash, grant_id, client_id, user_id, scope, session_id, expires_at)
  select $5::text, grant_id, client_id, user_id, scope, session_id, $6::timestamptz from ok
  returning token_hash, grant_id, client_id, user_id, scope, session_id, created_at, expires_at, revoked_at, audience
), refresh as (
  insert into refresh_tokens (id, token_hash, grant_id, client_id, user_id, scope, expires_at, absolute_expires_at)
  select $7::text, $8::text, grant_id, client_id, user_id, scope, $9::timestamptz, $10::timestamptz
  from ok where offline
  returning id
), audit as (
  insert into audit_events (type, user_id, client_id, detail)
  select 'token.issued', user_id, client_id, jsonb_build_object('grantId', grant_id, 'scope', scope, 'refresh', offline)
  from ok
), k as (
  select 'consumed'::text as kind, grant_id, client_id, user_id, nonce, scope, auth_time, session_id, same_client,
    unexpired, same_redirect_uri, pkce, user_active
  from checked
  union all
  select 'replayed', grant_id, client_id, user_id, nonce, scope, auth_time, session_id, null, null, null, null, null
  from authorization_codes where code_hash = $1::text and not exists (select 1 from c)
)
select k.kind, k.grant_id as code_grant_id, k.client_id as code_client_id, k.user_id as code_user_id,
  k.nonce as code_nonce, k.scope as code_scope, k.auth_time as code_auth_time, k.session_id as code_session_id,
  k.same_client, k.unexpired, k.same_redirect_uri, k.pkce, k.user_active,
  exists (select 1 from access) as issued, exists (select 1 from refresh) as refresh_issued, b.*
from k left join (${bearerSelect('access', '$11')}) b on true`;

/**
 * PostgreSQL text holds neither U+0000 (22021) nor a lone surrogate (sent as U+FFFD): such a redirect_uri equals
 * no stored one, so it goes as null (no match, the code is spent as on any mismatch) rather than fail the statement.
 */
const storableText = (value: string): string | null => (/\0|\p{Cs}/u.test(value) ? null : value);

type ExchangeRow = Partial<BearerQueryRow> & {
  kind: 'consumed' | 'replayed';
  code_grant_id: string;
  code_client_id: string;
  code_user_id: string;
  code_nonce: string | null;
  code_scope: string;
  code_auth_time: Date;
  code_session_id: string | null;
  same_client: boolean | null;
  unexpired: boolean | null;
  same_redirect_uri: boolean | null;
  pkce: boolean | null;
  user_active: boolean | null;
  issued: boolean;
  refresh_issued: boolean;
};

/**
 * Exchanges a code in one atomic statement: consumes it, checks it against the request and, only when every
 * check passes, records its access token, its refresh token (scope with offline_access) and token.issued.
 */
export async function exchangeStoredAuthorizationCode(
  db: Db,
  x: StoredCodeExchange,
  sessionIdleSeconds: number,
): Promise<StoredCodeExchangeResult> {
  const parameters = [
    x.codeHash,
    x.clientId,
    storableText(x.redirectUri),
    x.codeChallenge,
    ...codeTokenParameters(x),
    sessionIdleSeconds,
  ];
  const query = CompiledQuery.raw(EXCHANGE, parameters) as CompiledQuery<ExchangeRow>;
  const [row] = await executePrepared(db, 'idp_exchange_code', query);
  if (!row) return { kind: 'unknown' };
  const code: ExchangedCode = {
    grantId: row.code_grant_id,
    clientId: row.code_client_id,
    userId: row.code_user_id,
    nonce: row.code_nonce,
    scope: row.code_scope,
    authTime: new Date(row.code_auth_time),
    sessionId: row.code_session_id,
  };
  if (row.kind === 'replayed') return { kind: 'replayed', code };
  const {
    kind: _kind,
    code_grant_id: _grant,
    code_client_id: _client,
    code_user_id: _user,
    code_nonce: _nonce,
    code_scope: _scope,
    code_auth_time: _authTime,
    code_session_id: _session,
    same_client,
    unexpired,
    same_redirect_uri,
    pkce,
    user_active,
    issued,
    refresh_issued,
    ...bearerColumns
  } = row;
  const checks: StoredCodeChecks = {
    sameClient: same_client === true,
    unexpired: unexpired === true,
    sameRedirectUri: same_redirect_uri === true,
    pkce: pkce === true,
    userActive: user_active === true,
  };
  const bearer = bearerColumns.token_hash ? toBearerRow(bearerColumns as BearerQueryRow) : undefined;
  return { kind: 'consumed', code, checks, issued: issued === true && { refresh: refresh_issued === true, bearer } };
}
