// oidcc-rp-initiated-logout-certification-test-plan (OIDCCRpInitiatedLogoutTestPlan.java): the discovery check and
// the ten logout modules (AbstractOIDCCRpInitiatedLogout and its subclasses), with the plan's client_secret_basic
// client, whose registered post_logout_redirect_uri is the suite's base_url + "/post_logout_redirect"
// (CreatePostLogoutRedirectUri).
// Every logout module first runs a normal authorization (a 128-character state), then sends the browser to the
// end_session_endpoint with id_token_hint, post_logout_redirect_uri and state (CreateEndSessionEndpointRequest,
// CreateRandomEndSessionState), changed as the module says. Where the OP returns to the post_logout_redirect_uri the
// module checks the state and the parameters there and then asks again with prompt=none, which must fail with an
// error needing a user interface (the user was logged out). Where it must not return, it waits for a screenshot of an
// error page, a confirmation, or a "you are logged out" page (ExpectXxxPage): the test checks that page and that
// the suite's URI was not called.
import * as jose from 'jose';
import t from 'tap';
import type { Test } from 'tap';
import { codeFlow } from './fixtures/basic-modules.js';
import { allEndpointsHttpsProblems, httpsProblems } from './fixtures/discovery.js';
import {
  authorizationRequest,
  type Browser,
  checkAuthorizationError,
  checkCallback,
  formOf,
  POST_LOGOUT_REDIRECT_URI,
  SUITE_BASE,
  setUpSuite,
} from './fixtures/suite.js';

const suite = await setUpSuite(t);
const { discovery } = suite;
const issuer = discovery.issuer as string;
const endSessionEndpoint = discovery.end_session_endpoint as string;
const USER_INTERFACE_ERRORS = [
  'interaction_required',
  'login_required',
  'account_selection_required',
  'consent_required',
];

/** The first authorization (AbstractOIDCCRpInitiatedLogout: a normal flow, state of 128 characters). */
const signedIn = () => codeFlow(suite, 'default', { stateLength: 128 });

/** browser.goToUrl(end_session_endpoint?...): the provider's answer, and a confirmation clicked if it asks for one. */
async function endSession(browser: Browser, params: Record<string, string>) {
  const url = `${endSessionEndpoint}${Object.keys(params).length ? `?${new URLSearchParams(params)}` : ''}`;
  const first = await browser.open(url);
  const form = first.statusCode === 200 ? formOf(first.body) : undefined;
  // A confirmation page ("do you want to sign out?"): the suite's browser automation presses the sign-out button.
  if (form && form.method === 'POST' && /end-session\/confirm/.test(form.action)) {
    const confirmed = await browser.submit(new URL(form.action).pathname, { ...form.fields, decision: 'sign-out' });
    return { first, last: confirmed, confirmed: true };
  }
  return { first, last: first, confirmed: false };
}

const location = (res: { headers: Record<string, unknown> }) => res.headers.location as string | undefined;
const calledSuite = (res: { headers: Record<string, unknown> }) => Boolean(location(res)?.startsWith(SUITE_BASE));

/** performAuthorizationFlow with prompt=none after logout: performGenericAuthorizationEndpointErrorResponseValidation +
 * CheckErrorFromAuthorizationEndpointIsOneThatRequiredAUserInterface. */
async function expectLoggedOut(t: Test, browser: Browser) {
  const request = { ...authorizationRequest(suite.client, 'default', { stateLength: 128 }), prompt: 'none' };
  const outcome = await browser.authorize(discovery.authorization_endpoint as string, request);
  const error = checkAuthorizationError(checkCallback(outcome, 'default', request, issuer), request, issuer);
  t.ok(USER_INTERFACE_ERRORS.includes(error), `prompt=none after logout: ${error}`);
}

/** The module's post_logout_redirect handler: the redirect's query (CheckPostLogoutState / CheckNoPostLogoutState,
 * CheckForUnexpectedParametersInPostLogoutRedirect). */
function postLogoutRedirect(t: Test, res: { statusCode: number; headers: Record<string, unknown> }) {
  t.equal(res.statusCode, 303, 'a redirect');
  const url = new URL(location(res)!);
  t.equal(`${url.origin}${url.pathname}`, POST_LOGOUT_REDIRECT_URI, 'to the registered post_logout_redirect_uri');
  const params = Object.fromEntries(url.searchParams);
  t.same(
    Object.keys(params).filter((k) => k !== 'state'),
    [],
    'CheckForUnexpectedParametersInPostLogoutRedirect',
  );
  return params;
}

/** Modules where the OP must not call the post_logout_redirect_uri: an error page, or a confirmation. */
function mustNotRedirect(t: Test, r: Awaited<ReturnType<typeof endSession>>, page: RegExp) {
  t.notOk(calledSuite(r.first), 'the suite is not called');
  t.notOk(calledSuite(r.last), 'not after the confirmation either');
  t.ok([200, 400].includes(r.first.statusCode), `a page (${r.first.statusCode})`);
  t.match(r.first.headers['content-type'], /^text\/html/);
  t.match(r.confirmed ? r.first.body : r.last.body, page);
}

t.test('oidcc-rp-initiated-logout-discovery-endpoint-verification', async (t) => {
  // OIDCCRpInitiatedLogoutDiscoveryEndpointVerification: CheckDiscEndpointAllEndpointsAreHttps,
  // CheckDiscEndSessionEndpoint.
  t.same(allEndpointsHttpsProblems(discovery), [], 'CheckDiscEndpointAllEndpointsAreHttps');
  t.same(httpsProblems(discovery, 'end_session_endpoint'), [], 'CheckDiscEndSessionEndpoint');
});

t.test('oidcc-rp-initiated-logout', async (t) => {
  // OIDCCRpInitiatedLogout: back at the post_logout_redirect_uri with the state (CheckPostLogoutState), then
  // logged out.
  const flow = await signedIn();
  const state = 'end-session-state-Kd83jf0';
  const r = await endSession(flow.browser, {
    id_token_hint: flow.tokens.id_token,
    post_logout_redirect_uri: POST_LOGOUT_REDIRECT_URI,
    state,
  });
  t.equal(postLogoutRedirect(t, r.last).state, state, 'CheckPostLogoutState');
  await expectLoggedOut(t, flow.browser);
});

t.test('oidcc-rp-initiated-logout-bad-post-logout-redirect-uri', async (t) => {
  // OIDCCRpInitiatedLogoutBadLogoutRedirectUri: base_url + "/bad_post_logout_redirect_uri"
  // (AddBadPostLogoutRedirectUriToEndSessionEndpointRequest): ExpectPostLogoutRedirectUriNotRegisteredErrorPage.
  const flow = await signedIn();
  const r = await endSession(flow.browser, {
    id_token_hint: flow.tokens.id_token,
    post_logout_redirect_uri: `${SUITE_BASE}/bad_post_logout_redirect_uri`,
    state: 'bad-uri-state',
  });
  mustNotRedirect(t, r, /post_logout_redirect_uri|not registered/i);
});

t.test('oidcc-rp-initiated-logout-modified-id-token-hint', async (t) => {
  // OIDCCRpInitiatedLogoutModifiedIdTokenHint: the ID token's header replaced by {"alg": "none"} and its signature
  // dropped (ChangeIdTokenToAlgNone): ExpectInvalidIdTokenHintErrorPage.
  const flow = await signedIn();
  const payload = flow.tokens.id_token.split('.')[1];
  const modified = `${Buffer.from('{"alg": "none"}').toString('base64url')}.${payload}.`;
  const r = await endSession(flow.browser, {
    id_token_hint: modified,
    post_logout_redirect_uri: POST_LOGOUT_REDIRECT_URI,
    state: 'modified-hint-state',
  });
  mustNotRedirect(t, r, /id_token_hint/i);
});

t.test('oidcc-rp-initiated-logout-no-id-token-hint', async (t) => {
  // OIDCCRpInitiatedLogoutNoIdTokenHint (RemoveIdTokenHintFromEndSessionEndpointRequest): post_logout_redirect_uri and
  // state only: ExpectIdTokenHintRequiredErrorPage (or a confirmation), never the redirect.
  const flow = await signedIn();
  const r = await endSession(flow.browser, { post_logout_redirect_uri: POST_LOGOUT_REDIRECT_URI, state: 'no-hint' });
  mustNotRedirect(t, r, /id_token_hint|client_id/i);
});

t.test('oidcc-rp-initiated-logout-no-params', async (t) => {
  // OIDCCRpInitiatedLogoutNoParams (RemoveAllParametersFromEndSessionEndpointRequest): the OP must log the user out
  // (ExpectSuccessfulLogoutPage), perhaps after a confirmation, and not call the post_logout_redirect_uri.
  const flow = await signedIn();
  const r = await endSession(flow.browser, {});
  t.notOk(calledSuite(r.last), 'the suite is not called');
  t.equal(r.last.statusCode, 200, 'a "you are logged out" page');
  t.match(r.last.body, /signed out/i);
  await expectLoggedOut(t, flow.browser);
});

t.test('oidcc-rp-initiated-logout-no-post-logout-redirect-uri', async (t) => {
  // OIDCCRpInitiatedLogoutNoPostLogoutRedirectUri: id_token_hint and state: logged out, a page
  // (ExpectSuccessfulLogoutPage).
  const flow = await signedIn();
  const r = await endSession(flow.browser, { id_token_hint: flow.tokens.id_token, state: 'no-uri-state' });
  t.notOk(calledSuite(r.last), 'the suite is not called');
  t.equal(r.last.statusCode, 200, 'a "you are logged out" page');
  t.match(r.last.body, /signed out/i);
  await expectLoggedOut(t, flow.browser);
});

t.test('oidcc-rp-initiated-logout-no-state', async (t) => {
  // OIDCCRpInitiatedLogoutNoState (RemoveStateFromEndSessionEndpointRequest): back at the post_logout_redirect_uri
  // without a state (CheckNoPostLogoutState), then logged out.
  const flow = await signedIn();
  const r = await endSession(flow.browser, {
    id_token_hint: flow.tokens.id_token,
    post_logout_redirect_uri: POST_LOGOUT_REDIRECT_URI,
  });
  t.notOk('state' in postLogoutRedirect(t, r.last), 'CheckNoPostLogoutState');
  await expectLoggedOut(t, flow.browser);
});

t.test('oidcc-rp-initiated-logout-only-state', async (t) => {
  // OIDCCRpInitiatedLogoutOnlyState: state alone: logged out, a page (ExpectSuccessfulLogoutPage), no redirect.
  const flow = await signedIn();
  const r = await endSession(flow.browser, { state: 'only-state' });
  t.notOk(calledSuite(r.last), 'the suite is not called');
  t.equal(r.last.statusCode, 200, 'a "you are logged out" page');
  t.match(r.last.body, /signed out/i);
  await expectLoggedOut(t, flow.browser);
});

t.test('oidcc-rp-initiated-logout-query-added-to-post-logout-redirect-uri', async (t) => {
  // OIDCCRpInitiatedLogoutQueryAddedToLogoutRedirectUri: the registered URI + "?foo=bar"
  // (AddPostLogoutRedirectUriWithQueryAddedToEndSessionEndpointRequest):
  // ExpectPostLogoutRedirectUriNotRegisteredErrorPage.
  const flow = await signedIn();
  const r = await endSession(flow.browser, {
    id_token_hint: flow.tokens.id_token,
    post_logout_redirect_uri: `${POST_LOGOUT_REDIRECT_URI}?foo=bar`,
    state: 'query-added',
  });
  mustNotRedirect(t, r, /post_logout_redirect_uri|not registered/i);
});

t.test('oidcc-rp-initiated-logout-bad-id-token-hint', async (t) => {
  // OIDCCRpInitiatedLogoutBadIdTokenHint: an ID token "issued" by the client (GenerateFakeIdTokenClaims: iss the
  // client_id, aud the issuer, sub "SubjectID", nonce "flibble") and signed with a key from the client secret
  // (GenerateJWKsFromClientSecret, SignFakeIdToken: HS256): ExpectInvalidIdTokenHintErrorPage.
  const flow = await signedIn();
  const now = Math.floor(Date.now() / 1000);
  const fake = await new jose.SignJWT({ nonce: 'flibble' })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(suite.client.clientId)
    .setSubject('SubjectID')
    .setAudience(issuer)
    .setIssuedAt(now)
    .setExpirationTime(now + 300)
    .sign(new TextEncoder().encode(suite.client.clientSecret));
  const r = await endSession(flow.browser, {
    id_token_hint: fake,
    post_logout_redirect_uri: POST_LOGOUT_REDIRECT_URI,
    state: 'bad-hint-state',
  });
  mustNotRedirect(t, r, /id_token_hint/i);
});
