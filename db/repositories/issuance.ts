// The hot writes of the code flow and of refresh rotation, each ONE statement (data-modifying CTEs):
// what one step changes and the audit event that records it commit together without BEGIN/COMMIT
// round trips, and a step that must not happen (request already completed, consent not remembered,
// token already used) writes nothing at all. Fixed SQL text, run as named prepared statements on
// PostgreSQL (parsed and planned once per connection, no query building per request).
import { CompiledQuery } from 'kysely';
import { executePrepared, type Db } from '../create-db.js';
import { type BearerQueryRow, type BearerRow, bearerSelect, toBearerRow } from './access-tokens.js';
import { liveSessionCtes } from './sessions.js';

function run<R>(db: Db, name: string, text: string, parameters: unknown[]): Promise<R[]> {
  return executePrepared(db, name, CompiledQuery.raw(text, parameters) as CompiledQuery<R>);
}

export interface GrantAndCode {
  grantId: string;
  userId: string;
  clientId: string;
  scope: string;
  sessionId: string;
  authTime: Date;
  codeHash: string;
  redirectUri: string;
  codeChallenge: string;
  nonce: string | null;
  expiresAt: Date;
}

// $1..$11 of GrantAndCode, $12 the audit detail; the gate CTE decides whether anything is written.
const GRANT_AND_CODE = `
, g as (
  insert into grants (id, user_id, client_id, scope, session_id, auth_time)
  select $1::text, $2::text, $3::text, $4::text, $5::text, $6::timestamptz from gate
  returning id
), c as (
  insert into authorization_codes (code_hash, grant_id, client_id, user_id, redirect_uri, code_challenge, nonce,
    scope, auth_time, session_id, expires_at)
  select $7::text, g.id, $3::text, $2::text, $8::text, $9::text, $10::text, $4::text, $6::timestamptz, $5::text,
    $11::timestamptz
  from g
)
insert into audit_events (type, user_id, client_id, detail)
select 'authorization.granted', $2::text, $3::text, $12::jsonb from g
returning id`;

const BY_REQUEST = `with gate as (
  update authorization_requests set completed_at = now() where id = $13::text and completed_at is null returning 1
)${GRANT_AND_CODE}`;

const BY_CONSENT = `with gate as (
  select 1 from consents where user_id = $2::text and client_id = $3::text and scopes @> $13::jsonb
)${GRANT_AND_CODE}`;

function grantAndCodeParameters(row: GrantAndCode): unknown[] {
  return [
    row.grantId,
    row.userId,
    row.clientId,
    row.scope,
    row.sessionId,
    row.authTime,
    row.codeHash,
    row.redirectUri,
    row.codeChallenge,
    row.nonce,
    row.expiresAt,
    JSON.stringify({ scope: row.scope, grantId: row.grantId }),
  ];
}

/**
 * Completes a pending request and records its grant, code and authorization.granted, at once; false
 * (nothing written) when the request was already completed.
 */
export async function issueCodeForRequest(db: Db, requestId: string, row: GrantAndCode): Promise<boolean> {
  const rows = await run(db, 'idp_issue_code_request', BY_REQUEST, [...grantAndCodeParameters(row), requestId]);
  return rows.length === 1;
}

/**
 * Without a stored request (a live session, nothing to ask): records grant, code and
 * authorization.granted only if the user's remembered consent covers `scopes`; false (nothing
 * written) when it does not.
 */
export async function issueCodeIfConsented(db: Db, row: GrantAndCode, scopes: string[]): Promise<boolean> {
  const rows = await run(db, 'idp_issue_code_consented', BY_CONSENT, [
    ...grantAndCodeParameters(row),
    JSON.stringify(scopes),
  ]);
  return rows.length === 1;
}

export interface SessionGate {
  /** SHA-256 of the session cookie's value. */
  sessionHash: string;
  idleSeconds: number;
  /** last_seen_at is written only when older than this (see findLiveSession). */
  touchSeconds: number;
  /** The request's max_age: the sign-in may be at most this old. */
  maxAge: number | null;
  /** The requested scopes, which the remembered consent must cover. */
  scopes: string[];
}

// Single sign-on in one statement: the live session of the cookie (touched as findLiveSession does), of an
// enabled user with a verified e-mail, signed in within max_age, whose remembered consent covers the scopes,
// gets its grant, code and authorization.granted; anything else writes nothing (but the touch) and the caller
// takes the long way (session lookup, nextStep), which says why. $1 grant id, $2 client, $3 scope, $4 code hash,
// $5 redirect_uri, $6 code_challenge, $7 nonce, $8 code expiry, $9 audit detail, $10 session hash, $11 idle
// timeout, $12 touch interval, $13 max_age (null: none), $14 the scopes.
const BY_SESSION = `with ${liveSessionCtes(10, 11, 12)}, gate as (
  select s.id, s.user_id, s.auth_time from s join users u on u.id = s.user_id
   where u.disabled = false and u.email_verified
     and ($13::double precision is null or s.auth_time >= now() - make_interval(secs => $13::double precision))
     and exists (select 1 from consents where user_id = s.user_id and client_id = $2::text and scopes @> $14::jsonb)
), g as (
  insert into grants (id, user_id, client_id, scope, session_id, auth_time)
  select $1::text, user_id, $2::text, $3::text, id, auth_time from gate
  returning id, user_id, session_id, auth_time
), c as (
  insert into authorization_codes (code_hash, grant_id, client_id, user_id, redirect_uri, code_challenge, nonce,
    scope, auth_time, session_id, expires_at)
  select $4::text, g.id, $2::text, g.user_id, $5::text, $6::text, $7::text, $3::text, g.auth_time, g.session_id,
    $8::timestamptz
  from g
)
insert into audit_events (type, user_id, client_id, detail)
select 'authorization.granted', g.user_id, $2::text, $9::jsonb from g
returning id`;

/**
 * Grant, code and authorization.granted for the live session of a cookie with nothing to ask (see BY_SESSION);
 * false, with nothing written, otherwise.
 */
export async function issueCodeForSession(
  db: Db,
  row: Omit<GrantAndCode, 'userId' | 'sessionId' | 'authTime'>,
  gate: SessionGate,
): Promise<boolean> {
  const rows = await run(db, 'idp_issue_code_session', BY_SESSION, [
    row.grantId,
    row.clientId,
    row.scope,
    row.codeHash,
    row.redirectUri,
    row.codeChallenge,
    row.nonce,
    row.expiresAt,
    JSON.stringify({ scope: row.scope, grantId: row.grantId }),
    gate.sessionHash,
    gate.idleSeconds,
    gate.touchSeconds,
    gate.maxAge,
    JSON.stringify(gate.scopes),
  ]);
  return rows.length === 1;
}

export interface TokenSet {
  accessHash: string;
  grantId: string;
  clientId: string;
  userId: string;
  /** The access token's scope. */
  scope: string;
  sessionId: string | null;
  accessExpiresAt: Date;
  auditType: 'token.issued' | 'refresh_token.rotated';
  auditDetail: Record<string, unknown>;
  refresh?: {
    id: string;
    hash: string;
    /** The grant's scope, which every refresh token of the family keeps. */
    scope: string;
    expiresAt: Date;
    absoluteExpiresAt: Date;
    /** A rotation: the presented token, marked used with its successor's bookkeeping. */
    rotated?: { presentedHash: string; sealed: string | null; accessSealed: string | null };
  };
}

const ACCESS = `access as (
  insert into access_tokens (token_hash, grant_id, client_id, user_id, scope, session_id, expires_at)
  values ($1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::timestamptz)
  returning token_hash, grant_id, client_id, user_id, scope, session_id, created_at, expires_at, revoked_at
)`;
const AUDIT = `audit as (
  insert into audit_events (type, user_id, client_id, detail)
  values ($8::text, $4::text, $3::text, $9::jsonb)
)`;
const REFRESH = `refresh as (
  insert into refresh_tokens (id, token_hash, grant_id, client_id, user_id, scope, expires_at, absolute_expires_at)
  values ($10::text, $11::text, $2::text, $3::text, $4::text, $12::text, $13::timestamptz, $14::timestamptz)
)`;
const USED = `used as (
  update refresh_tokens set used_at = now(), successor_hash = $11::text, successor_sealed = $16::text,
    successor_access_sealed = $17::text
  where token_hash = $15::text
)`;
// Each answers with the new access token as the bearer lookup would find it (the session idle timeout is the
// last parameter), so that its first use on UserInfo or /api/external/* needs no round trip.
const TOKENS_ONLY = `with ${ACCESS}, ${AUDIT} ${bearerSelect('access', '$10')}`;
const TOKENS_NEW = `with ${ACCESS}, ${REFRESH}, ${AUDIT} ${bearerSelect('access', '$15')}`;
const TOKENS_ROTATED = `with ${ACCESS}, ${REFRESH}, ${USED}, ${AUDIT} ${bearerSelect('access', '$18')}`;

/**
 * Records an access token, optionally a refresh token (new, or a rotation's successor) and the audit event;
 * answers with the access token's bearer row (undefined when it is not live already, e.g. its session ended).
 */
export async function insertTokenSet(
  db: Db,
  set: TokenSet,
  sessionIdleSeconds: number,
): Promise<BearerRow | undefined> {
  const parameters: unknown[] = [
    set.accessHash,
    set.grantId,
    set.clientId,
    set.userId,
    set.scope,
    set.sessionId,
    set.accessExpiresAt,
    set.auditType,
    JSON.stringify(set.auditDetail),
  ];
  const refresh = set.refresh;
  const bearer = async (name: string, text: string) => {
    const [row] = await run<BearerQueryRow>(db, name, text, [...parameters, sessionIdleSeconds]);
    return row && toBearerRow(row);
  };
  if (!refresh) return bearer('idp_insert_tokens', TOKENS_ONLY);
  parameters.push(refresh.id, refresh.hash, refresh.scope, refresh.expiresAt, refresh.absoluteExpiresAt);
  if (!refresh.rotated) return bearer('idp_insert_tokens_refresh', TOKENS_NEW);
  const { presentedHash, sealed, accessSealed } = refresh.rotated;
  parameters.push(presentedHash, sealed, accessSealed);
  return bearer('idp_insert_tokens_rotated', TOKENS_ROTATED);
}

export interface Rotation {
  presentedHash: string;
  clientId: string;
  accessHash: string;
  accessExpiresAt: Date;
  refreshId: string;
  refreshHash: string;
  /** The successor's sliding expiry before the family's absolute cap is applied. */
  refreshExpiresAt: Date;
  sealed: string | null;
  accessSealed: string | null;
}

export interface Rotated {
  grant_id: string;
  user_id: string;
  scope: string;
  auth_time: Date | null;
}

// One statement for the common refresh: the presented token is marked used only when it is unused, not
// revoked, of this client, within both lifetimes, of a live grant and of an enabled user; the successor
// pair and refresh_token.rotated are written from what that update returned, so a token that fails any
// check changes nothing (the locked path then finds out why). Concurrent uses: the row lock makes the
// second update re-check used_at and match nothing.
const ROTATE = `with used as (
  update refresh_tokens r
     set used_at = now(), successor_hash = $6::text, successor_sealed = $8::text, successor_access_sealed = $9::text
    from grants g, users u
   where r.token_hash = $1::text and r.used_at is null and r.revoked_at is null and r.client_id = $2::text
     and r.expires_at > now() and r.absolute_expires_at > now()
     and g.id = r.grant_id and g.revoked_at is null and u.id = r.user_id and u.disabled = false
  returning r.grant_id, r.user_id, r.scope, r.absolute_expires_at, g.auth_time
), access as (
  insert into access_tokens (token_hash, grant_id, client_id, user_id, scope, session_id, expires_at)
  select $3::text, grant_id, $2::text, user_id, scope, null, $4::timestamptz from used
), refresh as (
  insert into refresh_tokens (id, token_hash, grant_id, client_id, user_id, scope, expires_at, absolute_expires_at)
  select $5::text, $6::text, grant_id, $2::text, user_id, scope, least($7::timestamptz, absolute_expires_at),
    absolute_expires_at
  from used
), audit as (
  insert into audit_events (type, user_id, client_id, detail)
  select 'refresh_token.rotated', user_id, $2::text, jsonb_build_object('grantId', grant_id, 'scope', scope) from used
)
select grant_id, user_id, scope, auth_time from used`;

/** Rotates a current refresh token in one statement; undefined (nothing written) when it is not current. */
export async function rotateCurrentRefreshToken(db: Db, r: Rotation): Promise<Rotated | undefined> {
  const [row] = await run<Rotated>(db, 'idp_rotate_refresh', ROTATE, [
    r.presentedHash,
    r.clientId,
    r.accessHash,
    r.accessExpiresAt,
    r.refreshId,
    r.refreshHash,
    r.refreshExpiresAt,
    r.sealed,
    r.accessSealed,
  ]);
  return row;
}
