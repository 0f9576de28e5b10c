// The operator's upstream identity providers (issue 35): the store behind the admin API, the admin web, the CLI
// and SEED_FILE, and what the login pages read (the buttons, a provider's client credentials for a round trip,
// the provider that owns an address's domain).
// Secrets are sealed with SECRET_KEY (src/oauth/seal.ts), the provider id as associated data: a sealed value
// copied to another provider's row does not open. No UpstreamProvider carries a secret.
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { appendAuditEvent } from '../../../db/repositories/audit.js';
import {
  deleteUpstreamProvider,
  findUpstreamProvider,
  insertUpstreamProvider,
  listUpstreamIdentitiesOfProvider,
  listUpstreamIdentitiesOfUser,
  listUpstreamProviders,
  type UpstreamProviderRow,
  updateUpstreamProvider,
} from '../../../db/repositories/upstreams.js';
import { findUserById } from '../../../db/repositories/users.js';
import type { Db } from '../../../db/create-db.js';
import type { Config } from '../../config.js';
import {
  emailDomain,
  type UpstreamClientAuth,
  type UpstreamKind,
  type UpstreamMapping,
  type UpstreamProvider,
} from '../../domain/upstream.js';
import {
  secretInputProblems,
  settingsOfCreate,
  settingsOfUpdate,
  upstreamCallbackUrl,
  upstreamProblems,
  UpstreamProviderCreateSchema,
  UpstreamProviderUpdateSchema,
  type UpstreamProviderCreate,
  type UpstreamProviderDetails,
  type UpstreamProviderUpdate,
  type UpstreamSettings,
} from '../../domain/upstream-config.js';
import { AppError, conflict, notFound, validationError } from '../../errors.js';
import { seal, unseal } from '../../oauth/seal.js';
import { assertSchema } from '../../validate.js';
import type { FactorService } from '../factors/index.js';

const SECRET_PURPOSE = 'upstream client secret';
const KEY_PURPOSE = 'upstream private key';

/**
 * What creating a provider takes, as the login flow's tests and the store's callers give it (every field already
 * resolved). The admin API, the admin web, the CLI and SEED_FILE go through `add` (UpstreamProviderCreate:
 * presets, defaults, the rules).
 */
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

/** Who acts, for the audit trail (the operator: admin-api, admin:<email>, cli:<login>, seed). */
export interface ProviderActor {
  actor: string;
  ip?: string | null | undefined;
}
const SYSTEM: ProviderActor = { actor: 'system' };

/** What removing a provider did: the links it took with it, and the users left with no way to sign in (force). */
export interface UpstreamRemoval {
  identitiesRemoved: number;
  usersLeftWithoutSignIn: string[];
}

export function createUpstreamProviderStore(deps: {
  db: Db;
  config: Pick<Config, 'secretKey'> & Partial<Pick<Config, 'loginUrl'>>;
  factors?: Pick<FactorService, 'summary'>;
}) {
  const { db } = deps;
  const secretKey = () => deps.config.secretKey as string;
  const sealSecret = (id: string, secret: string) =>
    seal(secret, { secretKey: secretKey(), purpose: SECRET_PURPOSE, aad: id });

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

  /** The private key a private_key_jwt provider's assertions are signed with (ES256, made here), sealed. */
  async function newSealedKey(id: string): Promise<string> {
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    const jwk = await exportJWK(privateKey);
    const key = { ...jwk, alg: 'ES256', use: 'sig', kid: `${id}-${Date.now().toString(36)}` };
    return seal(JSON.stringify(key), { secretKey: secretKey(), purpose: KEY_PURPOSE, aad: id });
  }

  async function getOr404(id: string): Promise<UpstreamProviderRow> {
    const row = await findUpstreamProvider(db, id);
    if (!row) throw notFound('UPSTREAM_NOT_FOUND', `no upstream provider with id "${id}"`);
    return row;
  }

  /** An SSO domain belongs to one provider: 409 when another claims one of these. */
  async function assertSsoDomainsFree(id: string, domains: string[]): Promise<void> {
    if (domains.length === 0) return;
    for (const other of await listUpstreamProviders(db)) {
      if (other.id === id) continue;
      const taken = domains.find((d) => other.sso_domains.includes(d));
      if (taken) {
        throw new AppError(
          409,
          'SSO_DOMAIN_TAKEN',
          `${taken} signs in with the upstream provider "${other.id}" already`,
          [{ field: `ssoDomains.${domains.indexOf(taken)}`, message: `is an SSO domain of "${other.id}" already` }],
        );
      }
    }
  }

  const columnsOf = (s: UpstreamSettings) => ({
    kind: s.kind,
    name: s.name,
    logo_url: s.logoUrl,
    issuer: s.issuer,
    authorization_endpoint: s.authorizationEndpoint,
    token_endpoint: s.tokenEndpoint,
    userinfo_endpoint: s.userinfoEndpoint,
    emails_endpoint: s.emailsEndpoint,
    client_id: s.clientId,
    client_auth: s.clientAuth,
    scopes: JSON.stringify(s.scopes),
    mapping: JSON.stringify(s.mapping),
    allow_sign_up: s.allowSignUp,
    allowed_domains: JSON.stringify(s.allowedDomains),
    trust_email_verified: s.trustEmailVerified,
    sso_domains: JSON.stringify(s.ssoDomains),
    store_tokens: s.storeTokens,
    enabled: s.enabled,
  });

  /** The users linked through this provider who have no other way to sign in (password, passkey, other link). */
  async function usersOnlyThrough(trx: Db, providerId: string): Promise<string[]> {
    const links = await listUpstreamIdentitiesOfProvider(trx, providerId);
    const stranded: string[] = [];
    for (const userId of new Set(links.map((l) => l.user_id))) {
      const user = await findUserById(trx, userId);
      const others = (await listUpstreamIdentitiesOfUser(trx, userId)).filter((r) => r.provider_id !== providerId);
      const passkeys = deps.factors ? (await deps.factors.summary(userId, trx)).passkeys : 0;
      if (!user?.password_hash && passkeys === 0 && others.length === 0) stranded.push(userId);
    }
    return stranded;
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
    /** The provider, or 404 UPSTREAM_NOT_FOUND. */
    async require(id: string): Promise<UpstreamProvider> {
      return view(await getOr404(id));
    },
    /** The provider with the callback URL the operator registers upstream (the admin API, web and CLI). */
    details(provider: UpstreamProvider): UpstreamProviderDetails {
      return { ...provider, callbackUrl: upstreamCallbackUrl(deps.config.loginUrl ?? '', provider.id) };
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
    /**
     * Adds a provider: a preset's values first (preset 'github'), then the defaults of its kind; every rule of
     * upstreamProblems (400 VALIDATION_ERROR, field by field); 409 UPSTREAM_EXISTS, 409 SSO_DOMAIN_TAKEN. A
     * private_key_jwt provider gets a new key (its publicJwk is what the upstream registers). Audited as
     * upstream.provider_created, without the secret.
     */
    async create(input: UpstreamProviderCreate | UpstreamProviderInput, context = SYSTEM): Promise<UpstreamProvider> {
      const body = assertSchema(UpstreamProviderCreateSchema, input);
      const { settings, problems } = settingsOfCreate(body);
      problems.push(...upstreamProblems(settings), ...secretInputProblems(settings.clientAuth, input));
      if (problems.length) throw validationError(problems);
      const id = settings.id;
      if (await findUpstreamProvider(db, id)) {
        throw conflict('UPSTREAM_EXISTS', `an upstream provider with id "${id}" exists already`);
      }
      await assertSsoDomainsFree(id, settings.ssoDomains);
      const privateJwk = settings.clientAuth === 'private_key_jwt' ? await newSealedKey(id) : null;
      try {
        await db.transaction().execute(async (trx) => {
          await insertUpstreamProvider(trx, {
            id,
            ...columnsOf(settings),
            client_secret: typeof input.clientSecret === 'string' ? sealSecret(id, input.clientSecret) : null,
            private_jwk: privateJwk,
          });
          await appendAuditEvent(trx, {
            type: 'upstream.provider_created',
            actor: context.actor,
            ip: context.ip ?? null,
            detail: {
              provider: id,
              kind: settings.kind,
              clientAuth: settings.clientAuth,
              preset: body.preset ?? null,
            },
          });
        });
      } catch (error) {
        // 23505, a unique violation: the same id created at the same moment.
        if ((error as { code?: unknown } | null)?.code === '23505') {
          throw conflict('UPSTREAM_EXISTS', `an upstream provider with id "${id}" exists already`);
        }
        throw error;
      }
      return view(await getOr404(id));
    },
    /**
     * Changes any of a provider's settings; the rules hold over the settings as they will be. A new clientSecret
     * replaces the sealed one; switching to private_key_jwt makes a key and drops the secret, switching away drops
     * the key; rotateKey makes a new key (the old one stops working at once: register the new publicJwk).
     * Audited as upstream.provider_updated with the names of the fields changed, never a value of a secret.
     */
    async update(id: string, input: UpstreamProviderUpdate, context = SYSTEM): Promise<UpstreamProvider> {
      assertSchema(UpstreamProviderUpdateSchema, input);
      const row = await getOr404(id);
      const current = view(row);
      const settings = settingsOfUpdate(current, input);
      const problems = [...upstreamProblems(settings), ...secretInputProblems(settings.clientAuth, input)];
      if (problems.length) throw validationError(problems);
      await assertSsoDomainsFree(id, settings.ssoDomains);
      const toJwt = settings.clientAuth === 'private_key_jwt';
      const newKey = toJwt && (input.rotateKey === true || row.private_jwk === null);
      const privateJwk = toJwt ? (newKey ? await newSealedKey(id) : row.private_jwk) : null;
      const clientSecret =
        toJwt || input.clientSecret === null
          ? null
          : typeof input.clientSecret === 'string'
            ? sealSecret(id, input.clientSecret)
            : row.client_secret;
      await db.transaction().execute(async (trx) => {
        if (
          !(await updateUpstreamProvider(trx, id, {
            ...columnsOf(settings),
            client_secret: clientSecret,
            private_jwk: privateJwk,
          }))
        ) {
          throw notFound('UPSTREAM_NOT_FOUND', `no upstream provider with id "${id}"`);
        }
        await appendAuditEvent(trx, {
          type: 'upstream.provider_updated',
          actor: context.actor,
          ip: context.ip ?? null,
          detail: {
            provider: id,
            fields: Object.keys(input).filter((k) => k !== 'rotateKey'),
            ...(newKey && { keyRotated: true }),
            ...(row.client_secret !== null && clientSecret === null && { secretRemoved: true }),
          },
        });
      });
      return view(await getOr404(id));
    },
    /** A new private key for a private_key_jwt provider (update with rotateKey). */
    async rotateKey(id: string, context = SYSTEM): Promise<UpstreamProvider> {
      return this.update(id, { rotateKey: true }, context);
    },
    /** What removing the provider would take (the admin web's confirmation): its links, the users left stranded. */
    async removalImpact(id: string): Promise<UpstreamRemoval> {
      await getOr404(id);
      return {
        identitiesRemoved: (await listUpstreamIdentitiesOfProvider(db, id)).length,
        usersLeftWithoutSignIn: await usersOnlyThrough(db, id),
      };
    },
    /**
     * Removes a provider, and with it (the foreign key cascades) every identity linked through it and its round
     * trips in flight. Refused (409 UPSTREAM_IN_USE) when some user would be left with no way to sign in (no
     * password, no passkey, no other link), unless `force`: those users can still get in through "Forgot
     * password" (a reset sets a password). Each link removed is audited as upstream.unlinked (reason
     * provider_deleted), the provider as upstream.provider_deleted.
     */
    async remove(id: string, context = SYSTEM, options: { force?: boolean } = {}): Promise<UpstreamRemoval> {
      return db.transaction().execute(async (trx) => {
        if (!(await findUpstreamProvider(trx, id))) {
          throw notFound('UPSTREAM_NOT_FOUND', `no upstream provider with id "${id}"`);
        }
        const stranded = await usersOnlyThrough(trx, id);
        if (stranded.length > 0 && !options.force) {
          throw conflict(
            'UPSTREAM_IN_USE',
            `${stranded.length} user(s) can sign in only with "${id}": removing it leaves them no way to sign in ` +
              'but a password reset. Give them a password or a passkey first, or remove it with force',
          );
        }
        const links = await listUpstreamIdentitiesOfProvider(trx, id);
        for (const link of links) {
          await appendAuditEvent(trx, {
            type: 'upstream.unlinked',
            userId: link.user_id,
            actor: context.actor,
            ip: context.ip ?? null,
            detail: { provider: id, identity: link.id, reason: 'provider_deleted' },
          });
        }
        if (!(await deleteUpstreamProvider(trx, id))) {
          throw notFound('UPSTREAM_NOT_FOUND', `no upstream provider with id "${id}"`);
        }
        await appendAuditEvent(trx, {
          type: 'upstream.provider_deleted',
          actor: context.actor,
          ip: context.ip ?? null,
          detail: {
            provider: id,
            identitiesRemoved: links.length,
            usersLeftWithoutSignIn: stranded.length,
            forced: Boolean(options.force),
          },
        });
        return { identitiesRemoved: links.length, usersLeftWithoutSignIn: stranded };
      });
    },
    async setEnabled(id: string, enabled: boolean, context = SYSTEM): Promise<UpstreamProvider> {
      return this.update(id, { enabled }, context);
    },
  };
}

export type UpstreamProviderStore = ReturnType<typeof createUpstreamProviderStore>;

/** A store over another handle (the seed's transaction), for SEED_FILE; sealing needs SECRET_KEY resolved. */
export function upstreamStoreFor(config: Pick<Config, 'secretKey' | 'loginUrl'>) {
  return (db: Db) => {
    if (!config.secretKey) throw new Error('SECRET_KEY is not resolved: upstream secrets cannot be sealed');
    return createUpstreamProviderStore({ db, config });
  };
}
