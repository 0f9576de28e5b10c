// buildApp(config): the whole HTTP application, without listening. Registration order is explicit
// (no autoload): it is a security property.
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import formbody from '@fastify/formbody';
import cookie from '@fastify/cookie';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { DestinationStream } from 'pino';
import type { Config } from '../src/config.js';
import type { DatabaseHandle } from '../db/create-db.js';
import type { StaticApplications } from '../src/services/applications.js';
import { lazyChildLogger, loggerOptions } from '../src/logger.js';
import { traceparent, traceRequest } from '../src/trace.js';
import { validatorCompiler } from '../src/validate.js';
import {
  clientErrorHandler,
  frameworkErrorsFor,
  MAX_PARAM_LENGTH,
  serviceUnavailableWhileClosing,
} from '../src/framework-errors.js';
import { loadStaticApplications } from '../src/static-applications.js';
import dbPlugin from '../plugins/infra/db.js';
import metricsPlugin from '../plugins/infra/metrics.js';
import servicesPlugin from '../plugins/infra/services.js';
import healthPlugin from '../plugins/health.js';
import adminPlugin from '../plugins/admin/index.js';
import browserSession from '../plugins/infra/browser-session.js';
import discoveryPlugin, { authorizationServerMetadataPlugin } from '../plugins/oidc/discovery.js';
import jwksPlugin from '../plugins/oidc/jwks.js';
import authorizePlugin from '../plugins/oidc/authorize.js';
import tokenPlugin from '../plugins/oidc/token.js';
import tokenCookiePlugin from '../plugins/oidc/token-cookie.js';
import rateLimitPlugin from '../plugins/infra/rate-limit.js';
import openapiPlugin from '../plugins/openapi.js';
import adminWebPlugin from '../plugins/admin-web/index.js';
import userinfoPlugin from '../plugins/oidc/userinfo.js';
import revokePlugin from '../plugins/oidc/revoke.js';
import introspectPlugin from '../plugins/oidc/introspect.js';
import endSessionPlugin from '../plugins/oidc/end-session.js';
import registrationPlugin from '../plugins/oidc/registration.js';
import loginPages from '../plugins/login/pages.js';
import loginApi from '../plugins/login/api.js';
import accountPages from '../plugins/account/index.js';
import corsPlugin from '../plugins/infra/cors.js';
import bearerAuth from '../plugins/infra/bearer-auth.js';
import { firstPartyJsonErrors } from '../plugins/infra/error-handlers.js';
import externalPlugin from '../plugins/external/index.js';
import protectedResourceMetadataPlugin from '../plugins/external/metadata.js';
import publicPlugin from '../plugins/public/index.js';
import welcomePlugin from '../plugins/welcome/index.js';
import demoPlugin from '../plugins/demo/index.js';
import meApi from '../plugins/me/index.js';

export interface BuildOptions {
  /** An open, migrated database (tests and the CLI); otherwise the app opens the configured one. */
  database?: DatabaseHandle;
  /** Instead of reading STATIC_APPLICATIONS_FILE. */
  staticApplications?: StaticApplications;
  /** Where log lines go (tests capture them); stdout by default. */
  logStream?: DestinationStream;
  /** Runs last, before the app is ready: tests add routes here. */
  configure?: (app: FastifyInstance) => void | Promise<void>;
  /** The clock of the time-based codes (TOTP), milliseconds since the epoch: tests fix it. */
  clock?: () => number;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** 16 KiB: no form or JSON body of this service needs more (decisions.md, Limits). */
export const BODY_LIMIT = 16 * 1024;

/**
 * One log line per request when it completes (method, redacted URL, client, status, time), not Fastify's
 * two ("incoming request" and "request completed", the first without the status).
 */
class OneLinePerRequest extends LogController {
  override incomingRequest() {}
  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply) {
    const responseTime = Math.round(reply.elapsedTime * 10) / 10;
    if (error) reply.log.error({ req: request, res: reply, err: error, responseTime }, 'request errored');
    else reply.log.info({ req: request, res: reply, responseTime }, 'request completed');
  }
}

/**
 * TRUST_PROXY for Fastify (issue 31, 7c). A hop count n becomes proxy-addr's trust function "the socket
 * and the n - 1 addresses to the right of X-Forwarded-For are proxies", so the client is the n-th address
 * from the right and whatever a client writes further left is never believed. (Fastify 5.12 turns a
 * bare number into "trust nothing", so it cannot be handed over as it is.) A list of proxies is
 * Fastify's own; false trusts no header.
 */
export function trustProxyOption(
  trust: Config['trustProxy'],
): false | string[] | ((address: string, hop: number) => boolean) {
  if (typeof trust !== 'number') return trust;
  const hops = trust;
  return (_address, hop) => hop < hops;
}

export async function buildApp(config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: { ...loggerOptions(config.logLevel), ...(options.logStream ? { stream: options.logStream } : {}) },
    trustProxy: trustProxyOption(config.trustProxy),
    bodyLimit: BODY_LIMIT,
    requestIdHeader: false,
    genReqId(request) {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: MAX_PARAM_LENGTH },
    // Fastify's own bodies for these name no spec's shape: see src/framework-errors.ts.
    frameworkErrors: frameworkErrorsFor((path) => path.startsWith(`${new URL(config.issuer).pathname}/register/`)),
    clientErrorHandler,
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    logController: new OneLinePerRequest(),
    // Every line of a request names its trace (W3C traceparent honoured: src/trace.ts).
    childLoggerFactory(logger, bindings, options, raw) {
      bindings.traceId = traceRequest(raw).traceId;
      return lazyChildLogger(logger, bindings, options);
    },
    // Plugins that open, create or migrate a database take longer than Fastify's 10 s on a first
    // start (initdb of the embedded database) on a busy machine.
    pluginTimeout: 120_000,
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);

  // Every answer, JSON included (ASVS 5.0 3.4.1, 3.4.4): no MIME sniffing, and on https a browser keeps
  // to https for a year (not includeSubDomains: the operator's other hosts are not ours to decide).
  // One callback-style hook for every request (a second hook, or an async one, costs each request a
  // turn of the hook runner; the static answers are only a few times dearer than that).
  const hsts = config.baseUrl.startsWith('https://');
  const answeredWhileClosing = serviceUnavailableWhileClosing(app);
  app.addHook('onRequest', (request, reply, done) => {
    reply
      .header('x-request-id', request.id)
      .header('traceparent', traceparent(traceRequest(request.raw)))
      .header('x-content-type-options', 'nosniff');
    if (hsts) reply.header('strict-transport-security', 'max-age=31536000');
    if (!answeredWhileClosing(reply)) done();
  });

  app.setErrorHandler(firstPartyJsonErrors({ bodyLimit: BODY_LIMIT }));

  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send({ error: 'NOT_FOUND', message: `No route ${request.method} ${request.url.split('?')[0]}` });
  });

  const staticApplications = options.staticApplications ?? loadStaticApplications(config.staticApplicationsFile);

  await app.register(formbody, { bodyLimit: BODY_LIMIT });
  await app.register(openapiPlugin, { config });
  await app.register(dbPlugin, { config, database: options.database });
  await app.register(metricsPlugin, { config });
  await app.register(cookie);
  await app.register(rateLimitPlugin, { config });
  await app.register(servicesPlugin, { config, staticApplications, ...(options.clock && { clock: options.clock }) });
  await app.register(browserSession, { config });
  await app.register(corsPlugin, { cacheSeconds: config.corsCacheSeconds });
  await app.register(bearerAuth, { config });
  await app.register(healthPlugin, { adminApiToken: config.adminApiToken });

  // The OpenID Provider, under the issuer path.
  const loginPath = new URL(config.loginUrl).pathname.replace(/\/$/, '') || '/login';
  const issuerPath = new URL(config.issuer).pathname;
  await app.register(discoveryPlugin, { prefix: issuerPath, config });
  // RFC 8414 §3: /.well-known/oauth-authorization-server followed by the issuer path, at the host's root.
  await app.register(authorizationServerMetadataPlugin, { config });
  await app.register(jwksPlugin, { prefix: issuerPath });
  await app.register(authorizePlugin, { prefix: issuerPath, config, loginPath });
  await app.register(tokenPlugin, { prefix: issuerPath });
  await app.register(tokenCookiePlugin, { prefix: issuerPath, config });
  await app.register(revokePlugin, { prefix: issuerPath });
  await app.register(introspectPlugin, { prefix: issuerPath });
  await app.register(endSessionPlugin, { prefix: issuerPath, config, loginPath });
  await app.register(userinfoPlugin, { prefix: issuerPath });
  // Dynamic client registration (RFC 7591, RFC 7592): only when the operator turned it on (REGISTRATION).
  if (config.registration.mode !== 'off') {
    await app.register(registrationPlugin, { prefix: issuerPath, config });
  }
  await app.register(loginApi, { prefix: issuerPath, config });
  // The signed-in user's own account (first party, session cookie only).
  await app.register(meApi, { prefix: '/api/me', config, bodyLimit: BODY_LIMIT });
  // The stable third-party namespace and public metadata.
  await app.register(externalPlugin, { prefix: '/api/external' });
  // RFC 9728 §3.1: /.well-known/oauth-protected-resource followed by /api/external's path, at the host's root.
  await app.register(protectedResourceMetadataPlugin, { config });
  await app.register(publicPlugin, { prefix: '/api/public' });
  // The hosted login pages (the spec's "Main web").
  await app.register(loginPages, { prefix: loginPath, config, loginPath });
  // The account pages (issue 17): profile, security, connected applications.
  await app.register(accountPages, { prefix: `${loginPath}/account`, config, loginPath });
  // The admin web (the spec's "Admin web", ADMIN_URL).
  const adminPath = new URL(config.adminUrl).pathname.replace(/\/$/, '') || '/admin';
  await app.register(adminWebPlugin, { prefix: adminPath, config, adminPath });
  if (config.adminApiToken) {
    await app.register(adminPlugin, { prefix: '/api/admin', adminApiToken: config.adminApiToken });
  }
  // The welcome page (/) and the demo relying party (/demo): WELCOME_PAGE and DEMO.
  await app.register(welcomePlugin, { config });
  await app.register(demoPlugin, { prefix: '/demo', config });
  await options.configure?.(app);
  return app;
}
