// The authorize parameters of issue 33 (src/oauth/authorize-params.ts), without HTTP: response_mode, the OpenID
// Connect parameters the OIDF Basic plan sends (display, ui_locales, claims_locales, acr_values, claims), and the
// PKCE policy per application (decisions.md, Protocol: optional only for a confidential client, and then an
// OpenID Connect request without PKCE carries a nonce).
import t from 'tap';
import {
  parseAuthorizeParams,
  parseClaimsParameter,
  requestedResponseMode,
  withClaimScopes,
  type RawParams,
} from '../../src/oauth/authorize-params.js';
import { OAuthError } from '../../src/oauth/errors.js';
import { s256Challenge } from '../../src/oauth/pkce.js';

const CHALLENGE = s256Challenge('v'.repeat(43));
const REDIRECT = 'https://rp.example/cb';
const publicApp = { clientId: 'pub', allowedScopes: ['openid', 'profile', 'email'] };
const optionalApp = { ...publicApp, clientId: 'conf', pkce: 'optional' as const, clientType: 'confidential' as const };

const raw = (extra: RawParams = {}): RawParams => {
  const params: RawParams = {
    client_id: 'pub',
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'openid',
    nonce: 'n',
    code_challenge: CHALLENGE,
    code_challenge_method: 'S256',
    ...extra,
  };
  for (const [k, v] of Object.entries(params)) if (v === undefined) delete params[k];
  return params;
};

function refusal(fn: () => unknown): { error: string; description: string } | undefined {
  try {
    fn();
    return undefined;
  } catch (e) {
    if (!(e instanceof OAuthError)) throw e;
    return { error: e.error, description: e.error_description };
  }
}

t.test(
  'response_mode: query (or none) is the default; form_post is kept; anything else is invalid_request',
  async (t) => {
    t.notOk('response_mode' in parseAuthorizeParams(raw(), publicApp, REDIRECT), 'absent: query');
    t.notOk('response_mode' in parseAuthorizeParams(raw({ response_mode: 'query' }), publicApp, REDIRECT));
    t.equal(parseAuthorizeParams(raw({ response_mode: 'form_post' }), publicApp, REDIRECT).response_mode, 'form_post');
    for (const mode of ['fragment', 'jwt', 'query.jwt', 'form_post.jwt', 'Form_Post']) {
      t.same(
        refusal(() => parseAuthorizeParams(raw({ response_mode: mode }), publicApp, REDIRECT)),
        { error: 'invalid_request', description: 'only response_mode=query or form_post is supported' },
        mode,
      );
    }
  },
);

t.test('display, ui_locales, claims_locales: accepted and not stored; acr_values kept (issue 34)', async (t) => {
  for (const display of ['page', 'popup', 'touch', 'wap']) {
    const params = parseAuthorizeParams(raw({ display }), publicApp, REDIRECT);
    t.notOk('display' in params, `display=${display} accepted`);
  }
  t.same(
    refusal(() => parseAuthorizeParams(raw({ display: 'fullscreen' }), publicApp, REDIRECT)),
    {
      error: 'invalid_request',
      description: 'display has a value that is not supported',
    },
  );
  const params = parseAuthorizeParams(
    raw({ ui_locales: 'fr-CA fr en', claims_locales: 'de en', acr_values: 'urn:mace:incommon:iap:silver 1 2' }),
    publicApp,
    REDIRECT,
  );
  t.same(Object.keys(params).sort(), [
    'acr_values',
    'client_id',
    'code_challenge',
    'nonce',
    'prompt',
    'redirect_uri',
    'scope',
  ]);
  // The values asked for, in order (unknown ones too: requiredAcr ignores them).
  t.same(params.acr_values, ['urn:mace:incommon:iap:silver', '1', '2']);
  t.notOk('acr_values' in parseAuthorizeParams(raw({ acr_values: '' }), publicApp, REDIRECT), 'empty: absent');
  t.same(
    refusal(() => parseAuthorizeParams(raw({ acr_values: 'x'.repeat(2049) }), publicApp, REDIRECT)),
    { error: 'invalid_request', description: 'acr_values is too long' },
  );
  t.same(
    refusal(() => parseAuthorizeParams(raw({ ui_locales: 'x'.repeat(2049) }), publicApp, REDIRECT)),
    {
      error: 'invalid_request',
      description: 'ui_locales is too long',
    },
  );
  t.same(
    refusal(() => parseAuthorizeParams(raw({ display: ['page', 'popup'] }), publicApp, REDIRECT)),
    {
      error: 'invalid_request',
      description: 'display must not be repeated',
    },
  );
});

t.test('claims (OpenID Connect Core §5.5): parsed and kept; anything but a claims request is refused', async (t) => {
  const claims = JSON.stringify({
    userinfo: { name: { essential: true }, email: null, nickname: { essential: false, extra: 1 } },
    id_token: { auth_time: { essential: true }, acr: { values: ['1', '2'] } },
    other: 'ignored',
  });
  t.same(parseAuthorizeParams(raw({ claims }), publicApp, REDIRECT).claims, {
    userinfo: { name: { essential: true }, email: null, nickname: { essential: false } },
    id_token: { auth_time: { essential: true }, acr: { values: ['1', '2'] } },
  });
  t.same(parseClaimsParameter('{}'), {}, 'an empty request');
  const invalid = { error: 'invalid_request', description: 'claims is not a valid claims request' };
  for (const bad of [
    '{"userinfo":',
    'null',
    '[]',
    '"name"',
    '{"userinfo":[]}',
    '{"userinfo":{"name":true}}',
    '{"id_token":{"name":{"essential":"yes"}}}',
    '{"id_token":{"acr":{"values":"1"}}}',
  ]) {
    t.same(
      refusal(() => parseAuthorizeParams(raw({ claims: bad }), publicApp, REDIRECT)),
      invalid,
      bad,
    );
  }
  t.same(
    refusal(() => parseClaimsParameter(`{"userinfo":{"${'n'.repeat(5000)}":null}}`)),
    {
      error: 'invalid_request',
      description: 'claims is too long',
    },
  );
});

t.test('PKCE: always for a public client; optional only for a confidential client that says so', async (t) => {
  const noPkce = raw({ code_challenge: undefined, code_challenge_method: undefined });
  const required = { error: 'invalid_request', description: 'code_challenge is required (PKCE)' };
  t.same(
    refusal(() => parseAuthorizeParams(noPkce, publicApp, REDIRECT)),
    required,
    'public client',
  );
  t.same(
    refusal(() => parseAuthorizeParams(noPkce, { ...publicApp, pkce: 'optional', clientType: 'public' }, REDIRECT)),
    required,
    'optional is ignored for a public client',
  );
  t.same(
    refusal(() => parseAuthorizeParams(noPkce, { ...optionalApp, pkce: 'required' }, REDIRECT)),
    required,
    'a confidential client with PKCE required',
  );

  const params = parseAuthorizeParams(noPkce, optionalApp, REDIRECT);
  t.notOk('code_challenge' in params, 'optional: no challenge stored');
  t.equal(params.nonce, 'n');
  t.same(
    refusal(() => parseAuthorizeParams({ ...noPkce, nonce: undefined }, optionalApp, REDIRECT)),
    { error: 'invalid_request', description: 'nonce is required when PKCE is not used' },
    'an OpenID Connect request without PKCE needs a nonce',
  );
  // (Every request is an OpenID Connect one here: scope must contain openid, src/oauth/scope.ts.)

  // A challenge sent is always checked, optional or not.
  t.equal(parseAuthorizeParams(raw(), optionalApp, REDIRECT).code_challenge, CHALLENGE, 'a challenge is kept');
  t.same(
    refusal(() => parseAuthorizeParams(raw({ code_challenge_method: 'plain' }), optionalApp, REDIRECT)),
    { error: 'invalid_request', description: 'code_challenge_method must be S256' },
  );
  t.same(
    refusal(() => parseAuthorizeParams(raw({ code_challenge: undefined }), optionalApp, REDIRECT)),
    required,
    'a method without a challenge',
  );
  t.same(
    refusal(() => parseAuthorizeParams(raw({ code_challenge_method: undefined }), optionalApp, REDIRECT)),
    { error: 'invalid_request', description: 'code_challenge_method is required and must be S256' },
    'a challenge without a method',
  );
});

t.test(
  'the response mode of a refused request object: read from its payload only to deliver the refusal',
  async (t) => {
    const object = (claims: Record<string, unknown>) =>
      `eyJhbGciOiJub25lIn0.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.`;
    t.equal(requestedResponseMode({ request: object({ response_mode: 'form_post' }) }), 'form_post');
    t.equal(requestedResponseMode({ request: object({ response_mode: 'query' }) }), undefined);
    t.equal(
      requestedResponseMode({ response_mode: 'query', request: object({ response_mode: 'form_post' }) }),
      undefined,
      'the outer parameter wins',
    );
    t.equal(requestedResponseMode({ request: 'not-a-jwt' }), undefined);
    t.equal(requestedResponseMode({ request: 'a.%%%.c' }), undefined);
    t.equal(requestedResponseMode({ request: object({}) }), undefined);
  },
);

t.test('claims: a claim by name asks for the scope that carries it, if the application may have it', async (t) => {
  const all = ['openid', 'profile', 'email', 'offline_access', 'permissions'];
  t.same(withClaimScopes(['openid'], { userinfo: { name: { essential: true } } }, all), ['openid', 'profile']);
  t.same(withClaimScopes(['openid'], { id_token: { email_verified: null } }, all), ['openid', 'email']);
  t.same(withClaimScopes(['openid'], { userinfo: { name: null } }, ['openid']), ['openid'], 'not allowed: ignored');
  t.same(withClaimScopes(['openid'], { userinfo: { address: null, sub: null } }, all), ['openid'], 'unknown, sub');
  t.same(withClaimScopes(['openid', 'profile'], { userinfo: { given_name: null } }, all), ['openid', 'profile']);
  t.same(withClaimScopes(['profile'], { userinfo: { email: null } }, all), ['profile'], 'not OpenID Connect');
});
