// Authorization codes are sealed, not stored: the code IS its record, AES-256-GCM under a key derived from
// SECRET_KEY (seal.ts, a purpose of its own), so issuing one writes nothing. What the code is bound to
// (decisions.md: client, redirect_uri, PKCE challenge, nonce, scope, user, auth_time, and the session) can be
// read only by this server and changed by nobody; single use is enforced where it is spent: the exchange
// inserts the code's grant under the grant id the code carries, so a second exchange finds it taken.
// The session's amr (how the user authenticated, RFC 8176) was added as a twelfth member: a code sealed before it
// (eleven members, still live for at most AUTHORIZATION_CODE_TTL across an upgrade) opens with amr null, and its
// grant and ID tokens carry no amr or acr, as grants older than second factors.
// The requested resources (RFC 8707) were added as a thirteenth member, written only when there are some (the amr
// member is then written too, null when unknown): a code sealed before it opens with no resources.
import { hash } from 'node:crypto';
import { seal, unseal } from './seal.js';

const PURPOSE = 'authorization code';

export interface CodeContents {
  /** The grant the exchange creates; its id is the code's identity, spent once. */
  grantId: string;
  clientId: string;
  userId: string;
  sessionId: string;
  authTime: Date;
  /**
   * The database's time when the code was issued (its timestamptz as text, microseconds kept): a code issued
   * before a revocation of the user's codes, or before the consent it relies on was given, is dead.
   */
  issuedAt: string;
  expiresAt: Date;
  /** SHA-256 of the authorization request's redirect_uri (base64url): the exchange's must be the same. */
  redirectUriHash: string;
  /** null: the request sent no PKCE (allowed for an application whose PKCE is optional). */
  codeChallenge: string | null;
  nonce: string | null;
  scope: string;
  /** The session's amr when the code was issued; null for a code sealed before amr was carried. */
  amr: readonly string[] | null;
  /** The resources (RFC 8707) of the authorization request, which the grant records; [] or absent for none. */
  resources?: readonly string[];
}

export const redirectUriHash = (redirectUri: string): string => hash('sha256', redirectUri, 'base64url');

type Packed11 = [string, string, string, string, number, string, number, string, string | null, string | null, string];
type Packed = [...Packed11, string[] | null, string[]] | [...Packed11, string[]] | Packed11;

export function sealCode(contents: CodeContents, secretKey: string): string {
  const packed: Packed = [
    contents.grantId,
    contents.clientId,
    contents.userId,
    contents.sessionId,
    contents.authTime.getTime(),
    contents.issuedAt,
    contents.expiresAt.getTime(),
    contents.redirectUriHash,
    contents.codeChallenge,
    contents.nonce,
    contents.scope,
    ...(contents.resources?.length
      ? [contents.amr === null ? null : [...contents.amr], [...contents.resources]]
      : contents.amr === null
        ? []
        : [[...contents.amr]]),
  ] as Packed;
  return seal(JSON.stringify(packed), { secretKey, purpose: PURPOSE, aad: PURPOSE });
}

const isStrings = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every((m: unknown) => typeof m === 'string');

const isPacked = (value: unknown): value is Packed =>
  Array.isArray(value) &&
  (value.length === 11 ||
    (value.length === 12 && isStrings(value[11])) ||
    (value.length === 13 && (value[11] === null || isStrings(value[11])) && isStrings(value[12]))) &&
  [0, 1, 2, 3, 5, 7, 10].every((i) => typeof value[i] === 'string') &&
  [4, 6].every((i) => Number.isFinite(value[i])) &&
  [8, 9].every((i) => value[i] === null || typeof value[i] === 'string');

/** The code's contents, or undefined when it was not sealed by this server under this SECRET_KEY. */
export function openCode(code: string, secretKey: string): CodeContents | undefined {
  const plain = unseal(code, { secretKey, purpose: PURPOSE, aad: PURPOSE });
  if (plain === undefined) return undefined;
  let packed: unknown;
  try {
    packed = JSON.parse(plain);
  } catch {
    return undefined;
  }
  if (!isPacked(packed)) return undefined;
  const [
    grantId,
    clientId,
    userId,
    sessionId,
    authTime,
    issuedAt,
    expiresAt,
    uriHash,
    codeChallenge,
    nonce,
    scope,
    amr,
    resources,
  ] = packed;
  return {
    grantId,
    clientId,
    userId,
    sessionId,
    authTime: new Date(authTime),
    issuedAt,
    expiresAt: new Date(expiresAt),
    redirectUriHash: uriHash,
    codeChallenge,
    nonce,
    scope,
    amr: amr ?? null,
    resources: resources ?? [],
  };
}
