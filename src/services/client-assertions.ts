// private_key_jwt client authentication (RFC 7523 §2.2 and §3, OpenID Connect Core §9): the assertion is a JWT
// signed by a key of the application's inline jwks, or of the JWK Set published at its jwks_uri; iss and sub are
// the client_id, aud names this provider, exp is near, and a jti is accepted once. The rules are in
// src/oauth/client-assertion.ts; here are the keys, the signature and the jti table.
//
// A jwks_uri is fetched with jose's createRemoteJWKSet (cached 10 minutes, refetched when an unknown kid comes,
// at most every 30 s), through a fetch that refuses redirects and bodies past a size limit, under a timeout; https
// only (http on loopback only while the provider itself runs on http). A fetch that fails is invalid_client, with
// the reason in the log. One key set per client, keyed by its URI: a changed jwks_uri never uses the old one.
import * as jose from 'jose';
import type { Db } from '../../db/create-db.js';
import { recordClientAssertionJti } from '../../db/repositories/client-assertion-jtis.js';
import type { Application } from '../domain/application.js';
import {
  ASSERTION_CLOCK_TOLERANCE_SECONDS,
  assertionAudiences,
  assertionClaimsProblem,
  CLIENT_ASSERTION_ALGORITHMS,
  type ClientEndpoint,
  jwksUriFetchProblem,
} from '../oauth/client-assertion.js';
import { OAuthError } from '../oauth/errors.js';

/** Bounds of a jwks_uri fetch. */
export const JWKS_FETCH_TIMEOUT_MS = 3000;
export const JWKS_MAX_BYTES = 64 * 1024;
const JWKS_CACHE_MAX_AGE_MS = 10 * 60 * 1000;
const JWKS_COOLDOWN_MS = 30 * 1000;
/** Remote key sets kept at most (one per private_key_jwt client with a jwks_uri): past it the oldest go first. */
const REMOTE_SETS_MAX = 1000;

/** The jwks_uri could not be fetched or is not a JWK Set: the client's side, said in the log. */
class JwksFetchError extends Error {
  override name = 'JwksFetchError';
}

type KeySet = (header: jose.JWSHeaderParameters, token: jose.FlattenedJWSInput) => Promise<jose.CryptoKey>;

/**
 * fetch for jose's createRemoteJWKSet: no redirects (a redirect could lead anywhere), 200 with at most
 * JWKS_MAX_BYTES of JSON holding a `keys` array, or a JwksFetchError that says what went wrong.
 */
async function fetchJwks(url: string, init: RequestInit): Promise<Response> {
  try {
    const response = await fetch(url, { ...init, redirect: 'manual' });
    if (response.status !== 200) {
      await response.body?.cancel();
      throw new JwksFetchError(`jwks_uri answered ${response.status}`);
    }
    const declared = Number(response.headers.get('content-length') ?? 0);
    if (declared > JWKS_MAX_BYTES) {
      await response.body?.cancel();
      throw new JwksFetchError(`jwks_uri body of ${declared} bytes is over ${JWKS_MAX_BYTES}`);
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    if (response.body) {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        size += chunk.byteLength;
        if (size > JWKS_MAX_BYTES) {
          await response.body.cancel().catch(() => undefined);
          throw new JwksFetchError(`jwks_uri body is over ${JWKS_MAX_BYTES} bytes`);
        }
        chunks.push(chunk);
      }
    }
    const text = Buffer.concat(chunks).toString('utf8');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new JwksFetchError('jwks_uri body is not JSON');
    }
    if (!json || typeof json !== 'object' || !Array.isArray((json as { keys?: unknown }).keys)) {
      throw new JwksFetchError('jwks_uri body is not a JWK Set');
    }
    return new Response(text, { status: 200, headers: { 'content-type': 'application/json' } });
  } catch (error) {
    if (error instanceof JwksFetchError) throw error;
    const reason = error instanceof Error ? (error.name === 'TimeoutError' ? 'timed out' : error.message) : 'failed';
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    throw new JwksFetchError(`jwks_uri fetch ${reason}${cause ? ` (${cause})` : ''}`);
  }
}

const invalid = (clientId: string, detail: string) =>
  new OAuthError('invalid_client', 'the client assertion is invalid', { detail: `client ${clientId}: ${detail}` });

export function createClientAssertionService(deps: {
  db: Db;
  issuer: string;
  /** The provider runs on http (development, tests): a loopback http jwks_uri may be fetched. */
  providerOnHttp: boolean;
  /** Tests shorten it. */
  fetchTimeoutMs?: number;
}) {
  const remoteSets = new Map<string, { uri: string; keys: KeySet }>();
  const localSets = new Map<string, { jwks: object; keys: KeySet }>();

  /** The keys of a private_key_jwt client: its inline jwks, or its jwks_uri's (one remote set per URI). */
  function keysOf(client: Application): KeySet {
    if (client.jwks) {
      const cached = localSets.get(client.clientId);
      if (cached?.jwks === client.jwks) return cached.keys;
      const keys = jose.createLocalJWKSet(client.jwks as jose.JSONWebKeySet);
      remember(localSets, client.clientId, { jwks: client.jwks, keys });
      return keys;
    }
    const uri = client.jwksUri;
    if (!uri) throw invalid(client.clientId, 'no jwks and no jwks_uri');
    const problem = jwksUriFetchProblem(uri, deps.providerOnHttp);
    if (problem) throw invalid(client.clientId, problem);
    const cached = remoteSets.get(client.clientId);
    if (cached?.uri === uri) return cached.keys;
    const keys = jose.createRemoteJWKSet(new URL(uri), {
      timeoutDuration: deps.fetchTimeoutMs ?? JWKS_FETCH_TIMEOUT_MS,
      cacheMaxAge: JWKS_CACHE_MAX_AGE_MS,
      cooldownDuration: JWKS_COOLDOWN_MS,
      headers: { accept: 'application/jwk-set+json, application/json' },
      [jose.customFetch]: fetchJwks,
    });
    remember(remoteSets, client.clientId, { uri, keys });
    return keys;
  }

  function remember<T>(map: Map<string, T>, clientId: string, value: T) {
    map.delete(clientId);
    if (map.size >= REMOTE_SETS_MAX) map.delete(map.keys().next().value as string);
    map.set(clientId, value);
  }

  /** jwtVerify over a key set; when several keys match (no kid), each is tried (jose leaves that to us). */
  async function verifySignature(assertion: string, keys: KeySet, options: jose.JWTVerifyOptions) {
    try {
      return await jose.jwtVerify(assertion, keys, options);
    } catch (error) {
      if (!(error instanceof jose.errors.JWKSMultipleMatchingKeys)) throw error;
      let last: unknown = error;
      for await (const key of error as unknown as AsyncIterable<jose.CryptoKey>) {
        try {
          return await jose.jwtVerify(assertion, key, options);
        } catch (inner) {
          last = inner;
        }
      }
      throw last;
    }
  }

  /**
   * Verifies the client assertion of a private_key_jwt client at one of its endpoints, and records its jti.
   * Throws invalid_client: 'the client assertion is invalid' (the reason in the detail), 'the client assertion
   * was already used', or 'the keys of this client could not be fetched from its jwks_uri'.
   */
  async function verify(client: Application, assertion: string, endpoint: ClientEndpoint): Promise<void> {
    const clientId = client.clientId;
    let header: jose.ProtectedHeaderParameters;
    try {
      header = jose.decodeProtectedHeader(assertion);
    } catch {
      throw invalid(clientId, 'not a JWS');
    }
    if (!(CLIENT_ASSERTION_ALGORITHMS as readonly string[]).includes(String(header.alg))) {
      throw invalid(clientId, `alg ${String(header.alg).slice(0, 20)} is not accepted`);
    }
    const keys = keysOf(client);
    let payload: jose.JWTPayload;
    try {
      ({ payload } = await verifySignature(assertion, keys, {
        algorithms: [...CLIENT_ASSERTION_ALGORITHMS],
        issuer: clientId,
        subject: clientId,
        audience: assertionAudiences(deps.issuer, endpoint),
        clockTolerance: ASSERTION_CLOCK_TOLERANCE_SECONDS,
        requiredClaims: ['exp', 'jti'],
      }));
    } catch (error) {
      if (error instanceof JwksFetchError || error instanceof jose.errors.JWKSTimeout) {
        throw new OAuthError('invalid_client', 'the keys of this client could not be fetched from its jwks_uri', {
          detail: `client ${clientId}: ${error.message}`,
        });
      }
      const code = (error as { code?: string }).code ?? 'error';
      throw invalid(clientId, `${code}: ${error instanceof Error ? error.message : String(error)}`);
    }
    const now = Math.floor(Date.now() / 1000);
    const problem = assertionClaimsProblem(payload, now);
    if (problem) throw invalid(clientId, problem);
    const expiresAt = new Date(((payload.exp as number) + ASSERTION_CLOCK_TOLERANCE_SECONDS) * 1000);
    if (!(await recordClientAssertionJti(deps.db, { clientId, jti: payload.jti as string, expiresAt }))) {
      throw new OAuthError('invalid_client', 'the client assertion was already used', {
        detail: `client ${clientId}: jti ${String(payload.jti).slice(0, 100)} replayed`,
      });
    }
  }

  return {
    verify,
    /** Drops the cached key sets of a client (it changed), or of every client. */
    forget(clientId?: string) {
      if (clientId === undefined) {
        remoteSets.clear();
        localSets.clear();
      } else {
        remoteSets.delete(clientId);
        localSets.delete(clientId);
      }
    },
  };
}

export type ClientAssertionService = ReturnType<typeof createClientAssertionService>;
