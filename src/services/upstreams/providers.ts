// The operator's upstream identity providers (issue 35): the store behind the admin API, the admin web, the CLI
// and SEED_FILE, and what the login pages read (the buttons, a provider's client credentials for a round trip,
// the provider that owns an address's domain).
// Secrets are sealed with SECRET_KEY (src/oauth/seal.ts), the provider id as associated data: a sealed value
// copied to another provider's row does not open. No UpstreamProvider carries a secret.
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import {
  deleteUpstreamProvider,
  findUpstreamProvider,
  insertUpstreamProvider,
  listUpstreamProviders,
  type UpstreamProviderRow,
  updateUpstreamProvider,
} from '../../../db/repositories/upstreams.js';
import type { Db } from '../../../db/create-db.js';
import type { Config } from '../../config.js';
import {
  emailDomain,
  type UpstreamClientAuth,
  type UpstreamKind,
  type UpstreamMapping,
  type UpstreamProvider,
} from '../../domain/upstream.js';
import { conflict, notFound } from '../../errors.js';
import { seal, unseal } from '../../oauth/seal.js';

const SECRET_PURPOSE = 'upstream client secret';
const KEY_PURPOSE = 'upstream private key';

/** What creating a provider takes (validated by the callers' schemas; refined checks in validateProvider). */
export interface UpstreamProviderInput {
  id: string;
  kind: UpstreamKind;
  name: string;
  logoUrl?: string | null;
  issuer?: string | null;
  authorizationEndpoint?: string | null;
  tokenEndpoint?: string | null;
  userinfoEndpoint?: string | null;
  emailsEndpoint?: string | null;
  clientId: string;
  clientSecret?: string | null;
  clientAuth?: UpstreamClientAuth;
  scopes?: string[];
  mapping?: Partial<UpstreamMapping>;
  allowSignUp?: boolean;
  allowedDomains?: string[];
  trustEmailVerified?: boolean;
  ssoDomains?: string[];
  storeTokens?: boolean;
  enabled?: boolean;
}

/** A provider's client credentials, unsealed: only for the round trip's token request. */
export interface UpstreamClientCredentials {
  clientSecret: string | null;
  privateJwk: JWK | null;
}

function toProvider(row: UpstreamProviderRow, publicJwk: JWK | null): UpstreamProvider {
  return {
    id: row.id,
    kind: row.kind as UpstreamKind,
    name: row.name,
    logoUrl: row.logo_url,
    issuer: row.issuer,
    authorizationEndpoint: row.authorization_endpoint,
    tokenEndpoint: row.token_endpoint,
    userinfoEndpoint: row.userinfo_endpoint,
    emailsEndpoint: row.emails_endpoint,
    clientId: row.client_id,
    clientAuth: row.client_auth as UpstreamClientAuth,
    hasClientSecret: row.client_secret !== null,
    publicJwk: publicJwk as Record<string, unknown> | null,
    scopes: row.scopes,
    mapping: row.mapping as Partial<UpstreamMapping>,
    allowSignUp: row.allow_sign_up,
    allowedDomains: row.allowed_domains,
    trustEmailVerified: row.trust_email_verified,
    ssoDomains: row.sso_domains,
    storeTokens: row.store_tokens,
    enabled: row.enabled,
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

export function createUpstreamProviderStore(deps: { db: Db; config: Pick<Config, 'secretKey'> }) {
  const { db } = deps;
  const secretKey = () => deps.config.secretKey as string;

  const privateJwkOf = (row: UpstreamProviderRow): JWK | null => {
    if (!row.private_jwk) return null;
    const json = unseal(row.private_jwk, { secretKey: secretKey(), purpose: KEY_PURPOSE, aad: row.id });
    return json ? (JSON.parse(json) as JWK) : null;
  };
  const publicJwkOf = (row: UpstreamProviderRow): JWK | null => {
    const key = privateJwkOf(row);
    if (!key) return null;
    const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...pub } = key;
    return pub;
  };
  const view = (row: UpstreamProviderRow) => toProvider(row, publicJwkOf(row));

  /** The private key a private_key_jwt provider's assertions are signed with (ES256, made here). */
  async function newPrivateJwk(id: string): Promise<JWK> {
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    const jwk = await exportJWK(privateKey);
    return { ...jwk, alg: 'ES256', use: 'sig', kid: `${id}-${Date.now().toString(36)}` };
  }

  return {
    async list(): Promise<UpstreamProvider[]> {
      return (await listUpstreamProviders(db)).map(view);
    },
    /** The enabled providers, for the sign-in and sign-up pages' buttons. */
    async enabled(): Promise<UpstreamProvider[]> {
      return (await listUpstreamProviders(db)).filter((r) => r.enabled).map(view);
    },
    async get(id: string): Promise<UpstreamProvider | undefined> {
      const row = await findUpstreamProvider(db, id);
      return row ? view(row) : undefined;
    },
    /** The provider's client secret and private key, unsealed (only for its token requests). */
    async credentials(id: string): Promise<UpstreamClientCredentials | undefined> {
      const row = await findUpstreamProvider(db, id);
      if (!row) return undefined;
      const clientSecret = row.client_secret
        ? (unseal(row.client_secret, { secretKey: secretKey(), purpose: SECRET_PURPOSE, aad: row.id }) ?? null)
        : null;
      return { clientSecret, privateJwk: privateJwkOf(row) };
    },
    /** The enabled provider that owns this address's domain (home-realm discovery), if any. */
    async ssoFor(email: string): Promise<UpstreamProvider | undefined> {
      const domain = emailDomain(email);
      if (!domain) return undefined;
      const row = (await listUpstreamProviders(db)).find((r) => r.enabled && r.sso_domains.includes(domain));
      return row ? view(row) : undefined;
    },
    async create(input: UpstreamProviderInput): Promise<UpstreamProvider> {
      if (await findUpstreamProvider(db, input.id)) {
        throw conflict('UPSTREAM_EXISTS', `an upstream provider with id "${input.id}" exists already`);
      }
      const clientAuth = input.clientAuth ?? 'client_secret_basic';
      const sealedSecret = input.clientSecret
        ? seal(input.clientSecret, { secretKey: secretKey(), purpose: SECRET_PURPOSE, aad: input.id })
        : null;
      const privateJwk =
        clientAuth === 'private_key_jwt'
          ? seal(JSON.stringify(await newPrivateJwk(input.id)), {
              secretKey: secretKey(),
              purpose: KEY_PURPOSE,
              aad: input.id,
            })
          : null;
      await insertUpstreamProvider(db, {
        id: input.id,
        kind: input.kind,
        name: input.name,
        logo_url: input.logoUrl ?? null,
        issuer: input.issuer ?? null,
        authorization_endpoint: input.authorizationEndpoint ?? null,
        token_endpoint: input.tokenEndpoint ?? null,
        userinfo_endpoint: input.userinfoEndpoint ?? null,
        emails_endpoint: input.emailsEndpoint ?? null,
        client_id: input.clientId,
        client_secret: sealedSecret,
        client_auth: clientAuth,
        private_jwk: privateJwk,
        scopes: JSON.stringify(input.scopes ?? (input.kind === 'oidc' ? ['openid', 'email', 'profile'] : [])),
        mapping: JSON.stringify(input.mapping ?? {}),
        allow_sign_up: input.allowSignUp ?? false,
        allowed_domains: JSON.stringify(input.allowedDomains ?? []),
        trust_email_verified: input.trustEmailVerified ?? false,
        sso_domains: JSON.stringify(input.ssoDomains ?? []),
        store_tokens: input.storeTokens ?? false,
        enabled: input.enabled ?? true,
      });
      return (await this.get(input.id)) as UpstreamProvider;
    },
    async remove(id: string): Promise<void> {
      if (!(await deleteUpstreamProvider(db, id))) throw notFound('UPSTREAM_NOT_FOUND', 'no such upstream provider');
    },
    /** The raw update (H-admin: validation, secrets, key rotation). */
    async setEnabled(id: string, enabled: boolean): Promise<void> {
      if (!(await updateUpstreamProvider(db, id, { enabled })))
        throw notFound('UPSTREAM_NOT_FOUND', 'no such upstream provider');
    },
  };
}

export type UpstreamProviderStore = ReturnType<typeof createUpstreamProviderStore>;
