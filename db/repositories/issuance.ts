// The hot writes of the code flow and of refresh rotation, each ONE statement (data-modifying CTEs):
// what one step changes and the audit event that records it commit together without BEGIN/COMMIT
// round trips, and a step that must not happen (request already completed, consent not remembered,
// token already used) writes nothing at all. Fixed SQL text, run as named prepared statements on
// PostgreSQL (parsed and planned once per connection, no query building per request).
import { CompiledQuery } from 'kysely';
import { executePrepared, type Db } from '../create-db.js';
import { type BearerQueryRow, type BearerRow, bearerSelect, toBearerRow } from './access-tokens.js';
import { refreshRulesSql } from './refresh-rules.js';
import { liveSessionCtes } from './sessions.js';
import { ssoRulesSql } from './sso-rules.js';

function run<R>(db: Db, name: string, text: string, parameters: unknown[]): Promise<R[]> {
  return executePrepared(db, name, CompiledQuery.raw(text, parameters) as CompiledQuery<R>);
}

// An authorization code is sealed (src/oauth/sealed-code.ts): issuing one writes nothing but what completes
// the step (a pending request's completion, the session's occasional touch). Each gate below answers with
// the database's time, which the code carries as its issue time (a revocation of the user's codes after it, or
// a consent given only after it, makes the code dead; see db/repositories/codes.ts).

const BY_REQUEST = `update authorization_requests set completed_at = now()
  where id = $1::text and completed_at is null
  returning now()::text as issued_at`;

const BY_CONSENT = `select now()::text as issued_at from consents
  where user_id = $1::text and client_id = $2::text and scopes @> $3::jsonb`;

/** Completes a pending request, once: the code's issue time, or undefined when it was already completed. */
export async function completeRequestForCode(db: Db, requestId: string): Promise<string | undefined> {
  const [row] = await run<{ issued_at: string }>(db, 'idp_code_request', BY_REQUEST, [requestId]);
  return row?.issued_at;
}

/** The code's issue time if the user's remembered consent to the client covers `scopes`; undefined if not. */
export async function consentCoversForCode(
  db: Db,
  userId: string,
  clientId: string,
  scopes: string[],
): Promise<string | undefined> {
  const [row] = await run<{ issued_at: string }>(db, 'idp_code_consented', BY_CONSENT, [
    userId,
    clientId,
    JSON.stringify(scopes),
  ]);
  return row?.issued_at;
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
  /** The request requires a second factor (requiredAcr is urn:idp:mfa): the session's amr must have mfa. */
  mfaRequired: boolean;
}

export interface CodeSession {
  sessionId: string;
  userId: string;
  authTime: Date;
  /** The session's amr (RFC 8176), which the code carries into its grant and ID tokens. */
  amr: readonly string[];
  /** The database's time, as timestamptz text (see src/oauth/sealed-code.ts). */
  issuedAt: string;
}

// Single sign-on in one statement: the live session of the cookie (touched as findLiveSession does) where every
// rule of db/repositories/sso-rules.ts holds (an enabled user with a verified e-mail, signed in within max_age,
// whose remembered consent covers the scopes, with a second factor if the request requires one); no row
// otherwise (the caller then takes the long way: session lookup, nextStep, which says why). $1 client, $2 session
// hash, $3 idle timeout, $4 touch interval, $5 max_age (null: none), $6 the scopes, $7 a second factor required.
const BY_SESSION_RULES = {
  client: '$1::text',
  maxAge: '$5::double precision',
  scopes: '$6::jsonb',
  mfaRequired: '$7::boolean',
};
const BY_SESSION = `with ${liveSessionCtes(2, 3, 4)}
select s.id as session_id, s.user_id, s.auth_time, s.amr, now()::text as issued_at
  from s join users u on u.id = s.user_id
 where ${ssoRulesSql(BY_SESSION_RULES)}`;

/** What a code for the cookie's live session, with nothing to ask, is bound to (see BY_SESSION); else undefined. */
export async function sessionForCode(db: Db, clientId: string, gate: SessionGate): Promise<CodeSession | undefined> {
  const [row] = await run<{ session_id: string; user_id: string; auth_time: Date; amr: string[]; issued_at: string }>(
    db,
    'idp_code_session',
    BY_SESSION,
    [
      clientId,
      gate.sessionHash,
      gate.idleSeconds,
      gate.touchSeconds,
      gate.maxAge,
      JSON.stringify(gate.scopes),
      gate.mfaRequired,
    ],
  );
  return (
    row && {
      sessionId: row.session_id,
      userId: row.user_id,
      authTime: new Date(row.auth_time),
      amr: row.amr,
      issuedAt: row.issued_at,
    }
  );
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
  /** The resource (RFC 8707) the access token is for; null: none named. */
  audience: string | null;
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

// The audience is the parameter after the idle timeout (its number differs per statement).
const ACCESS = (audience: string) => `access as (
  insert into access_tokens (token_hash, grant_id, client_id, user_id, scope, session_id, expires_at, audience)
  values ($1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::timestamptz, ${audience}::text)
  returning token_hash, grant_id, client_id, user_id, scope, session_id, created_at, expires_at, revoked_at, audience
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
const TOKENS_ONLY = `with ${ACCESS('$11')}, ${AUDIT} ${bearerSelect('access', '$10')}`;
const TOKENS_NEW = `with ${ACCESS('$16')}, ${REFRESH}, ${AUDIT} ${bearerSelect('access', '$15')}`;
const TOKENS_ROTATED = `with ${ACCESS('$19')}, ${REFRESH}, ${USED}, ${AUDIT} ${bearerSelect('access', '$18')}`;

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
    const [row] = await run<BearerQueryRow>(db, name, text, [...parameters, sessionIdleSeconds, set.audience]);
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
  /** The grant's amr; null for a grant older than second factors. */
  amr: string[] | null;
}

// One statement for the common refresh: the presented token is marked used only when every rule of
// db/repositories/refresh-rules.ts holds (unused, not revoked, of this client, within both lifetimes, of a
// live grant and of an enabled user); the successor pair and refresh_token.rotated are written from what
// that update returned, so a token that fails any rule changes nothing (the locked path then reads the same
// rules over the locked row to say why). Concurrent uses: the row lock makes the second update re-check
// used_at and match nothing.
const ROTATE = `with used as (
  update refresh_tokens r
     set used_at = now(), successor_hash = $6::text, successor_sealed = $8::text, successor_access_sealed = $9::text
    from grants g, users u
   where r.token_hash = $1::text and g.id = r.grant_id and u.id = r.user_id
     and ${refreshRulesSql('$2::text')}
     -- A grant with resources (RFC 8707) takes the locked path: its access token is chosen per resource.
     and g.resources = '[]'::jsonb
  returning r.grant_id, r.user_id, r.scope, r.absolute_expires_at, g.auth_time, g.amr
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
select grant_id, user_id, scope, auth_time, amr from used`;

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
