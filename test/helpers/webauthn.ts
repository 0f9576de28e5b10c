// A software authenticator for the passkey tests (issue 34): a P-256 key per credential, attestation "none",
// authenticator data, client data and ES256 signatures made exactly as a browser and a platform authenticator
// make them, so that the server verifies real responses. Each option a browser would not let a page choose
// (origin, RP ID, the counter, user verification) can be forced, to test refusals.
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';
import { isoCBOR } from '@simplewebauthn/server/helpers';

interface Credential {
  id: string;
  privateKey: KeyObject;
  counter: number;
  userHandle: string;
  rpId: string;
}

interface CreationOptions {
  challenge: string;
  rp: { id?: string | undefined };
  user: { id: string };
}
interface RequestOptions {
  challenge: string;
  rpId?: string | undefined;
  allowCredentials?: Array<{ id: string }> | undefined;
}

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest();
const b64 = (data: Buffer | Uint8Array) => Buffer.from(data).toString('base64url');

export function softwareAuthenticator(o: { origin: string; rpId: string; uv?: boolean; synced?: boolean }) {
  const credentials = new Map<string, Credential>();

  function flags(extra: number, uv: boolean) {
    let f = 0x01 | extra; // UP
    if (uv) f |= 0x04;
    if (o.synced) f |= 0x08 | 0x10; // backup eligible, backed up
    return f;
  }
  const counterBytes = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    return b;
  };

  return {
    credentials,

    /** navigator.credentials.create(): a new credential for `options` (origin and RP ID overridable). */
    register(options: CreationOptions, force: { origin?: string; rpId?: string } = {}) {
      const rpId = force.rpId ?? options.rp.id ?? o.rpId;
      const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const jwk = publicKey.export({ format: 'jwk' });
      const cose = isoCBOR.encode(
        new Map<number, number | Uint8Array>([
          [1, 2],
          [3, -7],
          [-1, 1],
          [-2, new Uint8Array(Buffer.from(jwk.x!, 'base64url'))],
          [-3, new Uint8Array(Buffer.from(jwk.y!, 'base64url'))],
        ]),
      );
      const id = randomBytes(16);
      const idLength = Buffer.alloc(2);
      idLength.writeUInt16BE(id.length);
      const authData = Buffer.concat([
        sha256(rpId),
        Buffer.from([flags(0x40, o.uv ?? true)]),
        counterBytes(0),
        Buffer.alloc(16), // AAGUID: none
        idLength,
        id,
        Buffer.from(cose),
      ]);
      const attestationObject = isoCBOR.encode(
        new Map<string, string | Map<string, string> | Uint8Array>([
          ['fmt', 'none'],
          ['attStmt', new Map<string, string>()],
          ['authData', new Uint8Array(authData)],
        ]),
      );
      const clientDataJSON = JSON.stringify({
        type: 'webauthn.create',
        challenge: options.challenge,
        origin: force.origin ?? o.origin,
        crossOrigin: false,
      });
      credentials.set(b64(id), { id: b64(id), privateKey, counter: 0, userHandle: options.user.id, rpId });
      return {
        id: b64(id),
        rawId: b64(id),
        type: 'public-key' as const,
        response: {
          clientDataJSON: b64(Buffer.from(clientDataJSON)),
          attestationObject: b64(attestationObject),
          transports: ['internal' as const],
        },
        clientExtensionResults: {},
        authenticatorAttachment: 'platform' as const,
      };
    },

    /**
     * navigator.credentials.get(): an assertion by `credentialId` (else the only or first allowed credential).
     * The counter goes up by one unless forced; origin, RP ID and user verification may be forced.
     */
    authenticate(
      options: RequestOptions,
      force: { credentialId?: string; origin?: string; rpId?: string; counter?: number; uv?: boolean } = {},
    ) {
      const id = force.credentialId ?? options.allowCredentials?.[0]?.id ?? [...credentials.keys()][0];
      const credential = id ? credentials.get(id) : undefined;
      if (!credential) throw new Error('no credential for these options');
      credential.counter = force.counter ?? credential.counter + 1;
      const authData = Buffer.concat([
        sha256(force.rpId ?? options.rpId ?? credential.rpId),
        Buffer.from([flags(0, force.uv ?? o.uv ?? true)]),
        counterBytes(credential.counter),
      ]);
      const clientDataJSON = Buffer.from(
        JSON.stringify({
          type: 'webauthn.get',
          challenge: options.challenge,
          origin: force.origin ?? o.origin,
          crossOrigin: false,
        }),
      );
      const signature = sign('sha256', Buffer.concat([authData, sha256(clientDataJSON)]), credential.privateKey);
      return {
        id: credential.id,
        rawId: credential.id,
        type: 'public-key' as const,
        response: {
          clientDataJSON: b64(clientDataJSON),
          authenticatorData: b64(authData),
          signature: b64(signature),
          userHandle: credential.userHandle,
        },
        clientExtensionResults: {},
        authenticatorAttachment: 'platform' as const,
      };
    },
  };
}
