// Clients that register themselves (issue 36; decisions.md, Protocol: off unless the operator turns it on).
//  - Dynamic registration (RFC 7591) and its management (RFC 7592): REGISTRATION=token asks for an initial access
//    token an operator issued (stored hashed, with an expiry and an optional count of uses); open asks for nothing
//    (the route's rate limits hold it). A registered client gets a registration access token (random, stored
//    hashed, shown once in the registration response) with which it reads, replaces and deletes its registration.
//  - Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document): a client_id that is an https URL
//    is fetched at authorize (src/services/metadata-fetch.ts) when CLIENT_ID_METADATA_DOCUMENTS=on, and kept as an
//    application row (registration 'metadata_document') that operators see, disable and delete. The row is used
//    while the document is fresh (its Cache-Control, between MIN and MAX_DOCUMENT_CACHE_SECONDS); after that the
//    next authorize fetches it again and its redirect_uris, name, logo and scopes replace the row's: a redirect URI
//    the document no longer lists is refused from then on. A disabled row is refused without a fetch, whatever the
//    document says. A document that cannot be fetched or used refuses the request (invalid_client, rendered).
// Such applications are public PKCE clients (unless REGISTRATION_CONFIDENTIAL=on for dynamic ones) and always see
// the consent page (src/services/authorization.ts). last_used_at is renewed (hourly) at authorize and the token
// endpoint; the clean-up job deletes those unused for SELF_REGISTERED_CLIENT_TTL days.
import { readFileSync } from 'node:fs';
import type { Db } from '../../db/create-db.js';
import * as repo from '../../db/repositories/applications.js';
import { appendAuditEvent } from '../../db/repositories/audit.js';
import * as secrets from '../../db/repositories/client-secrets.js';
import * as self from '../../db/repositories/self-registration.js';
import type { ApplicationRow } from '../../db/tables.js';
import {
  clientMetadataOf,
  isUrlClientId,
  metadataDocumentSettings,
  metadataDocumentUrlProblem,
  type SelfRegisteredSettings,
  selfRegisteredSettings,
} from '../domain/client-registration.js';
import { type Application, SECRET_METHODS, isSelfRegistered } from '../domain/application.js';
import type { Config } from '../config.js';
import { notFound, validationError } from '../errors.js';
import { OAuthError } from '../oauth/errors.js';
import { generateToken, hashToken } from '../oauth/tokens.js';
import { randomString } from '../random.js';
import type { ActorContext, ApplicationService } from './applications.js';
import { generateClientId } from './applications.js';
import { fetchMetadataDocument, MetadataFetchError } from './metadata-fetch.js';
import { toApplication } from './rows.js';

/** A document is fetched again after its Cache-Control max-age, kept within these bounds (seconds). */
export const MIN_DOCUMENT_CACHE_SECONDS = 60;
export const MAX_DOCUMENT_CACHE_SECONDS = 24 * 3600;
/** Without a max-age a document is fresh this long. */
export const DEFAULT_DOCUMENT_CACHE_SECONDS = 3600;
/** An initial access token lives at most this long (days). */
export const MAX_INITIAL_TOKEN_DAYS = 365;

const TOUCH_EVERY_MS = 3600 * 1000;

export interface InitialTokenInfo {
  id: string;
  description: string | null;
  usesLeft: number | null;
  expiresAt: string;
  createdBy: string;
  createdAt: string;
}

const toTokenInfo = (row: self.RegistrationTokenRow): InitialTokenInfo => ({
  id: row.id,
  description: row.description,
  usesLeft: row.uses_left,
  expiresAt: new Date(row.expires_at).toISOString(),
  createdBy: row.created_by,
  createdAt: new Date(row.created_at).toISOString(),
});

const invalidRegistrationToken = () =>
  new OAuthError('invalid_token', 'the registration access token is invalid', { status: 401 });

export function createSelfRegistrationService(deps: {
  db: Db;
  config: Config;
  applications: ApplicationService;
  /**
   * For last_used_at alone: the database without the write observer (invalidation.ts), since no cached value reads
   * that column and an observed write to applications drops every cached application. Default: db.
   */
  touchDb?: Db;
  /** Bounds of a document fetch (the tests shorten the time). */
  fetchTimeoutMs?: number;
}) {
  const { db, config, applications } = deps;
  const settings = config.registration;
  const allowLoopback = config.env !== 'production';
  let extraCa: string | undefined;
  const ca = () => {
    if (settings.metadataCaFile && extraCa === undefined) extraCa = readFileSync(settings.metadataCaFile, 'utf8');
    return extraCa;
  };
  const touched = new Map<string, number>();

  const columns = (s: SelfRegisteredSettings) => ({
    name: s.clientName,
    logo_url: s.clientLogoUrl,
    redirect_uris: JSON.stringify(s.redirectUris),
    allowed_scopes: JSON.stringify(s.allowedScopes),
    token_endpoint_auth_method: s.tokenEndpointAuthMethod,
    grant_types: JSON.stringify(s.grantTypes),
  });

  const toApp = (row: ApplicationRow): Application => toApplication(row);

  /** The dynamic client whose registration access token this is (RFC 7592 §2), or 401 invalid_token. */
  async function registered(clientId: string, token: string | undefined): Promise<ApplicationRow> {
    if (!token || token.length > 100 || clientId.length > 256) throw invalidRegistrationToken();
    const row = await repo.findApplicationRow(db, clientId);
    if (row?.registration !== 'dynamic' || row.registration_access_token_hash !== hashToken(token)) {
      throw invalidRegistrationToken();
    }
    return row;
  }

  /** The metadata of a registration response: the client's, plus how to manage it (RFC 7591 §3.2.1). */
  const managed = (app: Application) => ({
    ...clientMetadataOf(app),
    registration_client_uri: `${config.issuer}/register/${encodeURIComponent(app.clientId)}`,
  });

  return {
    /** CLIENT_ID_METADATA_DOCUMENTS=on: metadata documents' clients are accepted (off: refused everywhere). */
    metadataDocumentsOn: settings.metadataDocuments,

    /**
     * RFC 7591 §3.1: registers a client. `initialToken`: the Bearer token of the request (required with
     * REGISTRATION=token, spent here, one use). Answers the client's metadata with its client_id, its secret
     * (confidential clients; shown once) and its registration access token (shown once).
     */
    async register(body: unknown, context: { initialToken: string | undefined; ip?: string | undefined }) {
      const chosen = selfRegisteredSettings(body, { confidential: settings.confidential });
      const clientId = generateClientId();
      const registrationToken = generateToken();
      const clientSecret = SECRET_METHODS.includes(chosen.tokenEndpointAuthMethod) ? generateToken() : undefined;
      const row = await db.transaction().execute(async (trx) => {
        let initialTokenId: string | undefined;
        if (settings.mode === 'token') {
          if (!context.initialToken) {
            throw new OAuthError('invalid_token', 'an initial access token is required to register a client', {
              status: 401,
            });
          }
          initialTokenId =
            context.initialToken.length <= 100
              ? await self.spendRegistrationToken(trx, hashToken(context.initialToken))
              : undefined;
          if (!initialTokenId) {
            throw new OAuthError('invalid_token', 'the initial access token is invalid, expired or used up', {
              status: 401,
            });
          }
        }
        const inserted = await self.insertSelfRegistered(trx, {
          client_id: clientId,
          ...columns(chosen),
          allowed_web_origins: '[]',
          post_logout_redirect_uris: '[]',
          registration: 'dynamic',
          registration_access_token_hash: hashToken(registrationToken),
          last_used_at: new Date(),
        });
        if (clientSecret !== undefined) {
          await secrets.insertClientSecret(trx, {
            id: `cs_${randomString(12, 'base64url')}`,
            client_id: clientId,
            secret_hash: hashToken(clientSecret),
          });
        }
        await repo.notifyApplicationsChanged(trx, clientId);
        await appendAuditEvent(trx, {
          type: 'application.created',
          actor: 'self-registration',
          ip: context.ip,
          clientId,
          detail: {
            clientName: chosen.clientName,
            registration: 'dynamic',
            tokenEndpointAuthMethod: chosen.tokenEndpointAuthMethod,
            ...(initialTokenId && { initialToken: initialTokenId }),
          },
        });
        return inserted;
      });
      applications.forget(clientId);
      const app = toApp(row);
      return {
        ...managed(app),
        registration_access_token: registrationToken,
        ...(clientSecret !== undefined && { client_secret: clientSecret, client_secret_expires_at: 0 }),
      };
    },

    /** RFC 7592 §2.1: the client's current registration. */
    async read(clientId: string, token: string | undefined) {
      return managed(toApp(await registered(clientId, token)));
    },

    /**
     * RFC 7592 §2.2: replaces the client's metadata with the request's (fields left out take their defaults).
     * The body's client_id must be the client's. A change of token_endpoint_auth_method is refused (it would make
     * or drop a secret); the registration access token stays the same.
     */
    async replace(clientId: string, token: string | undefined, body: unknown, context: { ip?: string | undefined }) {
      const row = await registered(clientId, token);
      if (typeof body === 'object' && body !== null && (body as { client_id?: unknown }).client_id !== clientId) {
        throw new OAuthError('invalid_client_metadata', 'client_id does not match the client being updated');
      }
      const chosen = selfRegisteredSettings(
        { token_endpoint_auth_method: row.token_endpoint_auth_method, ...(body as object) },
        { confidential: settings.confidential },
      );
      if (chosen.tokenEndpointAuthMethod !== row.token_endpoint_auth_method) {
        throw new OAuthError(
          'invalid_client_metadata',
          settings.confidential
            ? 'token_endpoint_auth_method must be none, client_secret_basic or client_secret_post'
            : 'token_endpoint_auth_method must be none here (public PKCE clients only)',
          { detail: `cannot change ${row.token_endpoint_auth_method} to ${chosen.tokenEndpointAuthMethod}` },
        );
      }
      const updated = await db.transaction().execute(async (trx) => {
        const changed = await repo.updateApplicationRow(trx, clientId, columns(chosen));
        if (!changed) throw invalidRegistrationToken();
        await repo.notifyApplicationsChanged(trx, clientId);
        await appendAuditEvent(trx, {
          type: 'application.updated',
          actor: 'self-registration',
          ip: context.ip,
          clientId,
          detail: { fields: ['redirectUris', 'clientName', 'clientLogoUrl', 'allowedScopes', 'grantTypes'] },
        });
        return changed;
      });
      applications.forget(clientId);
      return managed(toApp(updated));
    },

    /** RFC 7592 §2.3: the client deletes its registration. */
    async remove(clientId: string, token: string | undefined, context: { ip?: string | undefined }) {
      await registered(clientId, token);
      await db.transaction().execute(async (trx) => {
        if (!(await repo.deleteApplicationRow(trx, clientId))) throw invalidRegistrationToken();
        await self.revokeClientGrants(trx, clientId);
        await repo.notifyApplicationsChanged(trx, clientId);
        await appendAuditEvent(trx, {
          type: 'application.deleted',
          actor: 'self-registration',
          ip: context.ip,
          clientId,
          detail: { registration: 'dynamic' },
        });
      });
      applications.forget(clientId);
    },

    /**
     * The application a client id names at authorize: an https URL is a metadata document's (fetched when its row
     * is missing or stale, see the file's comment); anything else is looked up as always. Throws invalid_client
     * for a URL when metadata documents are off, or when the document cannot be fetched or used.
     */
    async resolve(clientId: string): Promise<Application | undefined> {
      if (!isUrlClientId(clientId)) return applications.find(clientId);
      if (!settings.metadataDocuments) {
        throw new OAuthError('invalid_client', 'client ID metadata documents are not accepted here', {
          detail: `client_id ${clientId.slice(0, 300)}`,
        });
      }
      const problem = metadataDocumentUrlProblem(clientId);
      if (problem) {
        throw new OAuthError('invalid_client', 'the client ID metadata document is not valid for this client_id', {
          detail: `client_id ${clientId.slice(0, 300)} ${problem}`,
        });
      }
      const row = await repo.findApplicationRow(db, clientId);
      if (row && (row.registration !== 'metadata_document' || !row.enabled)) return toApp(row);
      if (row?.metadata_expires_at && new Date(row.metadata_expires_at).getTime() > Date.now()) return toApp(row);
      let chosen: SelfRegisteredSettings;
      let maxAge: number | undefined;
      try {
        const fetched = await fetchMetadataDocument(clientId, {
          allowLoopback,
          extraCa: ca(),
          ...(deps.fetchTimeoutMs !== undefined && { timeoutMs: deps.fetchTimeoutMs }),
        });
        maxAge = fetched.maxAge;
        try {
          chosen = metadataDocumentSettings(clientId, fetched.body);
        } catch (error) {
          throw new OAuthError('invalid_client', 'the client ID metadata document is not valid for this client_id', {
            detail: `${clientId.slice(0, 300)}: ${(error as Error).message}`,
          });
        }
      } catch (error) {
        if (error instanceof MetadataFetchError) {
          throw new OAuthError('invalid_client', 'the client ID metadata document could not be fetched', {
            detail: `${clientId.slice(0, 300)}: ${error.message}`,
          });
        }
        throw error;
      }
      const seconds = Math.min(
        MAX_DOCUMENT_CACHE_SECONDS,
        Math.max(MIN_DOCUMENT_CACHE_SECONDS, maxAge ?? DEFAULT_DOCUMENT_CACHE_SECONDS),
      );
      const now = new Date();
      const saved = await db.transaction().execute(async (trx) => {
        const upserted = await self.upsertMetadataDocumentClient(trx, {
          client_id: clientId,
          ...columns(chosen),
          allowed_web_origins: '[]',
          post_logout_redirect_uris: '[]',
          registration: 'metadata_document',
          last_used_at: now,
          metadata_fetched_at: now,
          metadata_expires_at: new Date(now.getTime() + seconds * 1000),
        });
        if (!upserted) return undefined;
        // A new row for this URL (none, or an operator deleted the old one): nothing given before comes back.
        if (!row) await self.revokeClientGrants(trx, clientId);
        const before = row ? JSON.stringify(row.redirect_uris) : undefined;
        if (!row || before !== JSON.stringify(upserted.redirect_uris) || row.name !== upserted.name) {
          await repo.notifyApplicationsChanged(trx, clientId);
          await appendAuditEvent(trx, {
            type: row ? 'application.updated' : 'application.created',
            actor: 'metadata-document',
            clientId,
            detail: {
              clientName: chosen.clientName,
              registration: 'metadata_document',
              redirectUris: chosen.redirectUris,
            },
          });
        }
        return upserted;
      });
      applications.forget(clientId);
      // A row changed by someone else in between (an operator's delete and re-create cannot make a URL id).
      return saved ? toApp(saved) : applications.find(clientId);
    },

    /** The client came to authorize or the token endpoint: last_used_at, at most hourly (self-registered only). */
    async touch(app: Application): Promise<void> {
      if (!isSelfRegistered(app)) return;
      const last = touched.get(app.clientId);
      if (last !== undefined && Date.now() - last < TOUCH_EVERY_MS) return;
      if (touched.size > 10_000) touched.clear();
      touched.set(app.clientId, Date.now());
      await self.touchSelfRegistered(deps.touchDb ?? db, app.clientId);
    },

    /** An initial access token for REGISTRATION=token: shown once, stored hashed. */
    async createInitialToken(
      input: { description?: string | undefined; expiresInDays?: number | undefined; uses?: number | undefined },
      context: ActorContext,
    ): Promise<InitialTokenInfo & { token: string }> {
      const days = input.expiresInDays ?? 7;
      const problems = [];
      if (!Number.isInteger(days) || days < 1 || days > MAX_INITIAL_TOKEN_DAYS) {
        problems.push({
          field: 'expiresInDays',
          message: `must be a whole number of days from 1 to ${MAX_INITIAL_TOKEN_DAYS}`,
        });
      }
      if (input.uses !== undefined && (!Number.isInteger(input.uses) || input.uses < 1 || input.uses > 1_000_000)) {
        problems.push({ field: 'uses', message: 'must be a whole number from 1 to 1000000 (leave it out: no limit)' });
      }
      if (input.description !== undefined && input.description.length > 200) {
        problems.push({ field: 'description', message: 'must be at most 200 characters' });
      }
      if (problems.length) throw validationError(problems);
      const token = generateToken();
      const row = await db.transaction().execute(async (trx) => {
        const inserted = await self.insertRegistrationToken(trx, {
          id: `rt_${randomString(12, 'base64url')}`,
          token_hash: hashToken(token),
          description: input.description ?? null,
          uses_left: input.uses ?? null,
          expires_at: new Date(Date.now() + days * 86400 * 1000),
          created_by: context.actor,
        });
        await appendAuditEvent(trx, {
          type: 'registration_token.created',
          actor: context.actor,
          ip: context.ip,
          detail: { id: inserted.id, uses: input.uses ?? null, expiresInDays: days },
        });
        return inserted;
      });
      return { ...toTokenInfo(row), token };
    },

    async listInitialTokens(): Promise<InitialTokenInfo[]> {
      return (await self.listRegistrationTokens(db)).map(toTokenInfo);
    },

    async revokeInitialToken(id: string, context: ActorContext): Promise<void> {
      await db.transaction().execute(async (trx) => {
        if (!(await self.deleteRegistrationToken(trx, id)))
          throw notFound('NOT_FOUND', `No initial access token ${id}`);
        await appendAuditEvent(trx, {
          type: 'registration_token.revoked',
          actor: context.actor,
          ip: context.ip,
          detail: { id },
        });
      });
    },
  };
}

export type SelfRegistrationService = ReturnType<typeof createSelfRegistrationService>;
