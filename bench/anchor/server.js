#!/usr/bin/env node
// The anchor of `npm run bench`: node-oidc-provider (npm oidc-provider, bench-only devDependency) configured like
// our server for the scenarios measured: one public client (token_endpoint_auth_method none, PKCE S256 required),
// refresh-token rotation on every use, RS256 ID tokens, opaque access tokens, scopes openid profile email
// offline_access. The interaction pages are ours to write (node-oidc-provider ships none for production):
//   GET  /interaction/:uid          a small HTML page: the sign-in form or the consent form
//   POST /interaction/:uid/login    email + password, checked against an argon2id hash (@node-rs/argon2, its
//                                   defaults: argon2id m=19456 t=2 p=1, the same as our server)
//   POST /interaction/:uid/confirm  consent to openid profile email offline_access
// Consent is remembered per account and client (loadExistingGrant below), as our server remembers it, so a
// fresh browser signing in again goes straight from the sign-in POST to the code redirect.
// Environment: PORT, ISSUER (http://127.0.0.1:PORT), REDIRECT_URI, CLIENT_ID, USERS_FILE (JSON: [{ id, email,
// password, name }]), ANCHOR_ADAPTER (memory | pg), DATABASE_URL (for pg), DATABASE_POOL_SIZE (default 10).
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { hash, verify } from '@node-rs/argon2';
import * as jose from 'jose';
import Provider from 'oidc-provider';
import { PgAdapter } from './pg-adapter.js';

const env = process.env;
const port = Number(env.PORT);
const issuer = env.ISSUER;
const SCOPE = 'openid profile email offline_access';

// Accounts: id → { id, email, name, hash }, and email → id. Hashed at start (argon2id, the library's defaults).
const accounts = new Map();
const byEmail = new Map();
for (const u of JSON.parse(readFileSync(env.USERS_FILE, 'utf8'))) {
  accounts.set(u.id, { id: u.id, email: u.email, name: u.name, hash: await hash(u.password) });
  byEmail.set(u.email, u.id);
}

const { privateKey } = await jose.generateKeyPair('RS256', { modulusLength: 2048, extractable: true });
const signingKey = { ...(await jose.exportJWK(privateKey)), kid: 'anchor-rs256', alg: 'RS256', use: 'sig' };

let adapter;
if (env.ANCHOR_ADAPTER === 'pg') {
  await PgAdapter.connect(env.DATABASE_URL, Number(env.DATABASE_POOL_SIZE || 10));
  adapter = PgAdapter;
}

const consents = new Map(); // `${accountId} ${clientId}` → grant id: consent remembered across sessions

const provider = new Provider(issuer, {
  ...(adapter && { adapter }),
  clients: [
    {
      client_id: env.CLIENT_ID,
      token_endpoint_auth_method: 'none',
      redirect_uris: [env.REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      id_token_signed_response_alg: 'RS256',
    },
  ],
  jwks: { keys: [signingKey] },
  cookies: { keys: [jose.base64url.encode(crypto.getRandomValues(new Uint8Array(32)))] },
  scopes: SCOPE.split(' '),
  claims: { openid: ['sub'], profile: ['name'], email: ['email', 'email_verified'] },
  pkce: { required: () => true },
  features: { devInteractions: { enabled: false }, userinfo: { enabled: true } },
  rotateRefreshToken: () => true,
  ttl: {
    AccessToken: 3600,
    AuthorizationCode: 60,
    IdToken: 3600,
    RefreshToken: 30 * 24 * 3600,
    Session: 7 * 86400,
    Interaction: 3600,
    Grant: 90 * 86400,
  },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  async findAccount(_ctx, id) {
    const account = accounts.get(id);
    if (!account) return undefined;
    return {
      accountId: id,
      claims: async () => ({ sub: id, name: account.name, email: account.email, email_verified: true }),
    };
  },
  async loadExistingGrant(ctx) {
    const { session, client } = ctx.oidc;
    const grantId =
      ctx.oidc.result?.consent?.grantId ||
      session.grantIdFor(client.clientId) ||
      consents.get(`${session.accountId} ${client.clientId}`);
    if (!grantId) return undefined;
    const grant = await ctx.oidc.provider.Grant.find(grantId);
    if (grant && grant.accountId === session.accountId) session.grantIdFor(client.clientId, grantId);
    return grant?.accountId === session.accountId ? grant : undefined;
  },
});

const escapeHtml = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const page = (title, action, fields) =>
  `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1>` +
  `<form method="post" action="${escapeHtml(action)}">${fields}<button type="submit">Continue</button></form>` +
  '</body></html>';

function readForm(req) {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => {
      body += c;
      if (body.length > 65536) req.destroy(new Error('body too large'));
    });
    req.on('end', () => resolve(Object.fromEntries(new URLSearchParams(body))));
    req.on('error', reject);
  });
}

function send(res, status, type, body) {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
  res.end(body);
}

async function interaction(req, res, uid, action) {
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) return send(res, 400, 'text/plain', 'interaction mismatch');
  const { prompt, params, session } = details;
  if (req.method === 'GET' && !action) {
    if (prompt.name === 'login') {
      const fields = '<input name="email" type="email"><input name="password" type="password">';
      return send(res, 200, 'text/html; charset=utf-8', page('Sign in', `/interaction/${uid}/login`, fields));
    }
    return send(res, 200, 'text/html; charset=utf-8', page('Consent', `/interaction/${uid}/confirm`, ''));
  }
  if (req.method === 'POST' && action === 'login' && prompt.name === 'login') {
    const form = await readForm(req);
    const accountId = byEmail.get(String(form.email ?? '').toLowerCase());
    const account = accountId && accounts.get(accountId);
    if (!account || !(await verify(account.hash, String(form.password ?? '')))) {
      return send(res, 200, 'text/html; charset=utf-8', page('Sign in: wrong email or password', '', ''));
    }
    return provider.interactionFinished(req, res, { login: { accountId } }, { mergeWithLastSubmission: false });
  }
  if (req.method === 'POST' && action === 'confirm' && prompt.name === 'consent') {
    await readForm(req);
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    grant.addOIDCScope(SCOPE);
    if (prompt.details.missingOIDCClaims) grant.addOIDCClaims(prompt.details.missingOIDCClaims);
    const grantId = await grant.save();
    consents.set(`${session.accountId} ${params.client_id}`, grantId);
    return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }
  return send(res, 400, 'text/plain', `unexpected ${req.method} for prompt ${prompt.name}`);
}

const callback = provider.callback();
const server = http.createServer((req, res) => {
  const m = /^\/interaction\/([\w-]+)(?:\/(login|confirm))?$/.exec(req.url.split('?')[0]);
  if (req.url === '/healthz') return send(res, 200, 'application/json', '{"status":"ok"}');
  if (!m) return callback(req, res);
  interaction(req, res, m[1], m[2]).catch((error) => {
    console.error(JSON.stringify({ level: 50, msg: `interaction: ${error.stack ?? error}` }));
    if (!res.headersSent) send(res, 500, 'text/plain', 'interaction failed');
  });
});
server.keepAliveTimeout = 72_000;
server.listen(port, '127.0.0.1');
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    server.close();
    server.closeAllConnections();
    Promise.resolve(PgAdapter.end?.()).finally(() => process.exit(0));
  });
}
