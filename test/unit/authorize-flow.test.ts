// The authorize state machine (src/oauth/authorize-flow.ts) without a database: one row per case, each named,
// run through nextStep() with the request's progress, the presenting session, the remembered consent and the
// clock given. The cross-user rows are the cases of SECURITY.md §2 (the pending request).
import t, { type Test } from 'tap';
import {
  boundRequestKey,
  browserHash,
  nextStep,
  nothingDone,
  type LevelPolicy,
  type Presenter,
  requiredAcr,
  type RequestProgress,
  type StepParams,
} from '../../src/oauth/authorize-flow.js';
import { parseAuthorizeParams, type RawParams } from '../../src/oauth/authorize-params.js';
import { type FactorSummary, hasSecondFactor } from '../../src/domain/mfa.js';
import { OAuthError } from '../../src/oauth/errors.js';
import { s256Challenge } from '../../src/oauth/pkce.js';
import { hashToken } from '../../src/oauth/tokens.js';

// A fixed clock far from the real one: a decision that read Date.now() instead of `now` would answer otherwise.
const NOW = new Date('2031-03-01T12:00:00.000Z');
const secondsAgo = (s: number) => new Date(NOW.getTime() - s * 1000);

const person = (
  name: string,
  sessionId: string,
  auth_time = secondsAgo(30),
  email_verified = true,
  amr: string[] = ['pwd'],
): Presenter => ({
  session: { id: sessionId, auth_time, amr },
  user: { id: `user-${name}`, email_verified, disabled: false },
});
const alice = person('alice', 'session-alice');
/** Alice again, in another session of hers (another browser, or signed out and in again). */
const aliceLater = person('alice', 'session-alice-2');
const bob = person('bob', 'session-bob');
const mallory = person('mallory', 'session-mallory');

const SCOPES = ['openid', 'profile'];

/** What has happened on the request: a sign-in by `who` (in their session), a consent by `who`. */
const signedInBy = (who: Presenter) => ({
  login_completed_at: secondsAgo(5),
  login_session_id: who.session.id,
  login_user_id: who.user.id,
});
const consentedBy = (who: Presenter, scopes: string[] = SCOPES) => ({
  consent_user_id: who.user.id,
  consent_scopes: scopes,
});

interface Row {
  name: string;
  /** The request's parameters (scope openid profile, no prompt, no max_age unless given). */
  params?: Partial<StepParams>;
  /** What has happened on the request so far (nothing unless given). */
  done?: Partial<RequestProgress>;
  presenter: Presenter | undefined;
  remembered?: string[];
  now?: Date;
  /** MFA and the application's requireMfa (MFA=optional, not required, unless given). */
  policy?: Partial<LevelPolicy>;
  /** The presenting user's second factors (none unless given). */
  factors?: FactorSummary;
  /** A step, or the code of the error redirected to the client (its description is the errors module's). */
  expect: string;
}

const step = (t: Test, row: Row) => {
  const params: StepParams = { scope: SCOPES, prompt: [], ...row.params };
  const request: RequestProgress = { ...nothingDone(params), ...row.done };
  const policy: LevelPolicy = { mfa: 'optional', applicationRequiresMfa: false, ...row.policy };
  const result = nextStep({
    request,
    presenter: row.presenter,
    remembered: row.remembered,
    now: row.now ?? NOW,
    policy,
    hasSecondFactor: row.factors && hasSecondFactor(row.factors),
  });
  if (typeof result === 'string') return result;
  t.ok(result.error instanceof OAuthError, `${row.name}: an OAuthError`);
  return result.error.error;
};

function runTable(name: string, rows: Row[]) {
  t.test(name, async (t) => {
    const names = new Set(rows.map((r) => r.name));
    t.equal(names.size, rows.length, 'every row has its own name');
    for (const row of rows) t.equal(step(t, row), row.expect, row.name);
  });
}

const everything = { presenter: alice, remembered: SCOPES };

runTable("no session (or a disabled user's): sign-in, sign-up with prompt=create, login_required with prompt=none", [
  { name: 'no session: sign-in', presenter: undefined, expect: 'sign-in' },
  {
    name: 'no session, prompt=create: sign-up',
    params: { prompt: ['create'] },
    presenter: undefined,
    expect: 'sign-up',
  },
  {
    name: 'no session, prompt=none: login_required',
    params: { prompt: ['none'] },
    presenter: undefined,
    expect: 'login_required',
  },
  { name: 'no session, prompt=login: sign-in', params: { prompt: ['login'] }, presenter: undefined, expect: 'sign-in' },
  {
    name: 'no session, prompt=consent: sign-in first',
    params: { prompt: ['consent'] },
    presenter: undefined,
    expect: 'sign-in',
  },
  {
    name: 'no session, prompt=login create: sign-up',
    params: { prompt: ['login', 'create'] },
    presenter: undefined,
    expect: 'sign-up',
  },
  {
    name: 'no session, though a sign-in and a consent were recorded on the request (signed out since): sign-in',
    done: { ...signedInBy(alice), ...consentedBy(alice) },
    presenter: undefined,
    remembered: SCOPES,
    expect: 'sign-in',
  },
  {
    name: "a disabled user's session presents nothing: sign-in",
    presenter: { ...alice, user: { ...alice.user, disabled: true } },
    remembered: SCOPES,
    expect: 'sign-in',
  },
  {
    name: "a disabled user's session, signed in and consented on the request, prompt=none: login_required",
    params: { prompt: ['none'] },
    done: { ...signedInBy(alice), ...consentedBy(alice) },
    presenter: { ...alice, user: { ...alice.user, disabled: true } },
    remembered: SCOPES,
    expect: 'login_required',
  },
]);

runTable('a signed-in, verified user with the consent remembered: issue', [
  { name: 'no prompt, consent remembered: issue', ...everything, expect: 'issue' },
  { name: 'prompt=none, consent remembered: issue', params: { prompt: ['none'] }, ...everything, expect: 'issue' },
  {
    name: 'prompt=create with a session: nothing to create, issue',
    params: { prompt: ['create'] },
    ...everything,
    expect: 'issue',
  },
]);

runTable('prompt=login: sign-in, unless signed in on this request by this very session', [
  {
    name: 'prompt=login, no sign-in on the request: sign-in',
    params: { prompt: ['login'] },
    ...everything,
    expect: 'sign-in',
  },
  {
    name: 'prompt=login, signed in on the request by this session: issue',
    params: { prompt: ['login'] },
    done: signedInBy(alice),
    ...everything,
    expect: 'issue',
  },
  {
    name: 'prompt=login, signed in on the request by another session of the same user: sign-in',
    params: { prompt: ['login'] },
    done: signedInBy(aliceLater),
    ...everything,
    expect: 'sign-in',
  },
  {
    name: 'prompt=login, the request names this session but another user: sign-in',
    params: { prompt: ['login'] },
    done: { ...signedInBy(alice), login_user_id: bob.user.id },
    ...everything,
    expect: 'sign-in',
  },
  {
    name: 'prompt=login, session and user on the request but no sign-in completed: sign-in',
    params: { prompt: ['login'] },
    done: { ...signedInBy(alice), login_completed_at: null },
    ...everything,
    expect: 'sign-in',
  },
  {
    name: 'prompt=login consent, signed in here, consent not given here: consent',
    params: { prompt: ['login', 'consent'] },
    done: signedInBy(alice),
    ...everything,
    expect: 'consent',
  },
  {
    name: 'prompt=login consent, signed in and consented here: issue',
    params: { prompt: ['login', 'consent'] },
    done: { ...signedInBy(alice), ...consentedBy(alice) },
    ...everything,
    expect: 'issue',
  },
]);

const signedInAt = (seconds: number) => person('alice', 'session-alice', secondsAgo(seconds));
runTable('max_age: the sign-in may be at most max_age seconds old at `now`, unless it happened on this request', [
  {
    name: 'max_age absent, a sign-in a year old: issue',
    presenter: signedInAt(365 * 86400),
    remembered: SCOPES,
    expect: 'issue',
  },
  {
    name: 'max_age=0, signed in 1 s ago: sign-in',
    params: { max_age: 0 },
    presenter: signedInAt(1),
    remembered: SCOPES,
    expect: 'sign-in',
  },
  {
    name: 'max_age=0, signed in at this very instant: issue',
    params: { max_age: 0 },
    presenter: signedInAt(0),
    remembered: SCOPES,
    expect: 'issue',
  },
  {
    name: 'max_age=60, signed in 61 s ago: sign-in',
    params: { max_age: 60 },
    presenter: signedInAt(61),
    remembered: SCOPES,
    expect: 'sign-in',
  },
  {
    name: 'max_age=60, signed in exactly 60 s ago: issue (not older than max_age)',
    params: { max_age: 60 },
    presenter: signedInAt(60),
    remembered: SCOPES,
    expect: 'issue',
  },
  {
    name: 'max_age=60, signed in 59 s ago: issue',
    params: { max_age: 60 },
    presenter: signedInAt(59),
    remembered: SCOPES,
    expect: 'issue',
  },
  {
    name: 'max_age=60, signed in 59 s before a `now` an hour later: sign-in (the clock passed in counts)',
    params: { max_age: 60 },
    presenter: signedInAt(59),
    remembered: SCOPES,
    now: new Date(NOW.getTime() + 3600_000),
    expect: 'sign-in',
  },
  {
    name: 'max_age elapsed, prompt=none: login_required',
    params: { max_age: 60, prompt: ['none'] },
    presenter: signedInAt(61),
    remembered: SCOPES,
    expect: 'login_required',
  },
  {
    name: 'max_age=0 elapsed, but signed in on this request by this session: issue',
    params: { max_age: 0 },
    done: signedInBy(alice),
    presenter: signedInAt(10),
    remembered: SCOPES,
    expect: 'issue',
  },
  {
    name: 'max_age=0 elapsed, signed in on this request by another session of the same user: sign-in',
    params: { max_age: 0 },
    done: signedInBy(aliceLater),
    presenter: signedInAt(10),
    remembered: SCOPES,
    expect: 'sign-in',
  },
  {
    name: 'max_age elapsed and the e-mail unverified: sign-in comes first',
    params: { max_age: 60 },
    presenter: person('alice', 'session-alice', secondsAgo(61), false),
    remembered: SCOPES,
    expect: 'sign-in',
  },
]);

const MFA_AMR = ['pwd', 'otp', 'mfa'];
const stepped = person('alice', 'session-alice', secondsAgo(30), true, MFA_AMR);
const withTotp: FactorSummary = { passkeys: 0, totp: true, recoveryCodes: 0 };
const withPasskey: FactorSummary = { passkeys: 1, totp: false, recoveryCodes: 0 };
const onlyRecoveryCodes: FactorSummary = { passkeys: 0, totp: false, recoveryCodes: 10 };
const mfaAsked = { acr_values: ['urn:idp:mfa'] };
runTable('level: a required second factor the session lacks: a step-up, enrolment, or the documented errors', [
  { name: 'nothing required, a password session: issue', ...everything, expect: 'issue' },
  {
    name: 'acr_values=urn:idp:pwd, a password session: issue',
    params: { acr_values: ['urn:idp:pwd'] },
    ...everything,
    expect: 'issue',
  },
  {
    name: 'acr_values=urn:idp:mfa, a password session, a TOTP factor: second-factor',
    params: mfaAsked,
    ...everything,
    factors: withTotp,
    expect: 'second-factor',
  },
  {
    name: 'acr_values=urn:idp:mfa, a password session, a passkey: second-factor',
    params: mfaAsked,
    ...everything,
    factors: withPasskey,
    expect: 'second-factor',
  },
  {
    name: 'acr_values=urn:idp:mfa, a password session, no factor: enrol',
    params: mfaAsked,
    ...everything,
    expect: 'enrol',
  },
  {
    name: 'acr_values=urn:idp:mfa, recovery codes alone are no second factor: enrol',
    params: mfaAsked,
    ...everything,
    factors: onlyRecoveryCodes,
    expect: 'enrol',
  },
  {
    name: 'acr_values=urn:idp:mfa, a session with mfa: issue',
    params: mfaAsked,
    presenter: stepped,
    remembered: SCOPES,
    expect: 'issue',
  },
  {
    name: 'acr_values=urn:idp:mfa, prompt=none, a password session with a factor: login_required',
    params: { ...mfaAsked, prompt: ['none'] },
    ...everything,
    factors: withTotp,
    expect: 'login_required',
  },
  {
    name: 'acr_values=urn:idp:mfa, MFA=off: unmet_authentication_requirements',
    params: mfaAsked,
    ...everything,
    policy: { mfa: 'off' },
    factors: withTotp,
    expect: 'unmet_authentication_requirements',
  },
  {
    name: 'acr_values=urn:idp:mfa, MFA=off, prompt=none: login_required (prompt=none first)',
    params: { ...mfaAsked, prompt: ['none'] },
    ...everything,
    policy: { mfa: 'off' },
    expect: 'login_required',
  },
  {
    name: 'the application requires MFA, MFA=off: unmet_authentication_requirements',
    ...everything,
    policy: { mfa: 'off', applicationRequiresMfa: true },
    expect: 'unmet_authentication_requirements',
  },
  {
    name: 'the application requires MFA, a password session with a factor: second-factor',
    ...everything,
    policy: { applicationRequiresMfa: true },
    factors: withTotp,
    expect: 'second-factor',
  },
  {
    name: 'MFA=required, a password session without a factor: enrol',
    ...everything,
    policy: { mfa: 'required' },
    expect: 'enrol',
  },
  {
    name: 'MFA=required, a session with mfa: issue',
    presenter: stepped,
    remembered: SCOPES,
    policy: { mfa: 'required' },
    expect: 'issue',
  },
  {
    name: 'an unknown acr value is ignored: issue',
    params: { acr_values: ['urn:example:gold'] },
    ...everything,
    expect: 'issue',
  },
  {
    name: 'acr_values urn:idp:pwd urn:idp:mfa: any of them satisfies, the weakest is met: issue',
    params: { acr_values: ['urn:idp:mfa', 'urn:idp:pwd'] },
    ...everything,
    expect: 'issue',
  },
  {
    name: 'claims id_token.acr essential urn:idp:mfa: second-factor',
    params: { claims: { id_token: { acr: { essential: true, values: ['urn:idp:mfa'] } } } },
    ...everything,
    factors: withTotp,
    expect: 'second-factor',
  },
  {
    name: 'claims id_token.acr value urn:idp:mfa: enrol without a factor',
    params: { claims: { id_token: { acr: { value: 'urn:idp:mfa' } } } },
    ...everything,
    expect: 'enrol',
  },
  {
    name: 'claims id_token.acr essential, no value: nothing required: issue',
    params: { claims: { id_token: { acr: { essential: true } } } },
    ...everything,
    expect: 'issue',
  },
  {
    name: 'claims id_token.acr null: nothing required: issue',
    params: { claims: { id_token: { acr: null } } },
    ...everything,
    expect: 'issue',
  },
  {
    name: 'max_age comes first: a stale password session asked for mfa: sign-in',
    params: { ...mfaAsked, max_age: 10 },
    ...everything,
    factors: withTotp,
    expect: 'sign-in',
  },
  {
    name: 'prompt=login comes first: sign-in',
    params: { ...mfaAsked, prompt: ['login'] },
    ...everything,
    factors: withTotp,
    expect: 'sign-in',
  },
  {
    name: 'signed in here with a password, mfa asked: second-factor all the same',
    params: { ...mfaAsked, prompt: ['login'] },
    done: signedInBy(alice),
    ...everything,
    factors: withTotp,
    expect: 'second-factor',
  },
  {
    name: 'before the e-mail check: an unverified password session asked for mfa: second-factor',
    params: mfaAsked,
    presenter: person('alice', 'session-alice', secondsAgo(30), false),
    remembered: SCOPES,
    factors: withTotp,
    expect: 'second-factor',
  },
  {
    name: 'before consent: nothing remembered, mfa asked: second-factor',
    params: mfaAsked,
    presenter: alice,
    factors: withTotp,
    expect: 'second-factor',
  },
]);

t.test('requiredAcr: the level of each source, the stronger of two', async (t) => {
  const none: LevelPolicy = { mfa: 'optional', applicationRequiresMfa: false };
  const base: StepParams = { scope: SCOPES, prompt: [] };
  t.equal(requiredAcr(base, none), undefined, 'nothing asked');
  t.equal(requiredAcr(base, { ...none, mfa: 'required' }), 'urn:idp:mfa', 'MFA=required');
  t.equal(requiredAcr(base, { ...none, applicationRequiresMfa: true }), 'urn:idp:mfa', 'requireMfa');
  t.equal(requiredAcr({ ...base, acr_values: ['urn:idp:pwd'] }, none), 'urn:idp:pwd', 'acr_values pwd');
  t.equal(requiredAcr({ ...base, acr_values: ['x', 'urn:idp:mfa'] }, none), 'urn:idp:mfa', 'unknown skipped');
  t.equal(
    requiredAcr(
      {
        ...base,
        acr_values: ['urn:idp:pwd'],
        claims: { id_token: { acr: { essential: true, value: 'urn:idp:mfa' } } },
      },
      none,
    ),
    'urn:idp:mfa',
    'acr_values pwd and an essential acr claim mfa: mfa',
  );
  t.equal(
    requiredAcr({ ...base, claims: { id_token: { acr: { values: ['urn:idp:pwd', 'urn:idp:mfa'] } } } }, none),
    'urn:idp:pwd',
    'claim values: the weakest satisfies',
  );
  t.equal(
    requiredAcr({ ...base, claims: { userinfo: { acr: { value: 'urn:idp:mfa' } } } }, none),
    undefined,
    'userinfo',
  );
});

const unverified = person('alice', 'session-alice', secondsAgo(30), false);
runTable('e-mail verification: verify-email, interaction_required with prompt=none; after sign-in, before consent', [
  { name: 'unverified e-mail: verify-email', presenter: unverified, remembered: SCOPES, expect: 'verify-email' },
  {
    name: 'unverified e-mail, prompt=none: interaction_required',
    params: { prompt: ['none'] },
    presenter: unverified,
    remembered: SCOPES,
    expect: 'interaction_required',
  },
  {
    name: 'unverified e-mail, nothing remembered: verify-email before consent',
    presenter: unverified,
    expect: 'verify-email',
  },
  {
    name: 'unverified e-mail, prompt=none, nothing remembered: interaction_required, not consent_required',
    params: { prompt: ['none'] },
    presenter: unverified,
    expect: 'interaction_required',
  },
  {
    name: 'unverified e-mail, prompt=login, not signed in here: sign-in before verification',
    params: { prompt: ['login'] },
    presenter: unverified,
    expect: 'sign-in',
  },
  {
    name: 'unverified e-mail, prompt=login, signed in here: verify-email',
    params: { prompt: ['login'] },
    done: signedInBy(unverified),
    presenter: unverified,
    expect: 'verify-email',
  },
  {
    name: 'unverified e-mail, consented on this request: verify-email all the same',
    done: consentedBy(unverified),
    presenter: unverified,
    remembered: SCOPES,
    expect: 'verify-email',
  },
]);

runTable('consent: asked until the remembered consent covers the scopes; prompt=consent asks again', [
  { name: 'nothing remembered: consent', presenter: alice, expect: 'consent' },
  {
    name: 'nothing remembered, prompt=none: consent_required',
    params: { prompt: ['none'] },
    presenter: alice,
    expect: 'consent_required',
  },
  {
    name: 'remembered more than requested: issue',
    presenter: alice,
    remembered: ['openid', 'profile', 'email'],
    expect: 'issue',
  },
  {
    name: 'remembered misses one requested scope: consent',
    presenter: alice,
    remembered: ['openid'],
    expect: 'consent',
  },
  {
    name: 'remembered misses one requested scope, prompt=none: consent_required',
    params: { prompt: ['none'] },
    presenter: alice,
    remembered: ['profile'],
    expect: 'consent_required',
  },
  {
    name: 'offline_access requested, remembered without it: consent',
    params: { scope: ['openid', 'offline_access'] },
    presenter: alice,
    remembered: ['openid', 'profile'],
    expect: 'consent',
  },
  {
    name: 'offline_access requested and remembered: issue',
    params: { scope: ['openid', 'offline_access'] },
    presenter: alice,
    remembered: ['openid', 'offline_access'],
    expect: 'issue',
  },
  {
    name: 'prompt=consent, everything remembered: consent',
    params: { prompt: ['consent'] },
    ...everything,
    expect: 'consent',
  },
  {
    name: 'prompt=consent, consent given on this request by this user: issue',
    params: { prompt: ['consent'] },
    done: consentedBy(alice),
    ...everything,
    expect: 'issue',
  },
  {
    name: 'consent given on this request to all its scopes, nothing remembered: issue',
    done: consentedBy(alice),
    presenter: alice,
    expect: 'issue',
  },
  {
    name: 'consent on this request recorded for fewer scopes than it asks, nothing remembered: consent',
    done: consentedBy(alice, ['openid']),
    presenter: alice,
    expect: 'consent',
  },
  {
    name: 'prompt=consent, consent on this request for fewer scopes: consent',
    params: { prompt: ['consent'] },
    done: consentedBy(alice, ['openid']),
    ...everything,
    expect: 'consent',
  },
]);

// SECURITY.md §2: a step recorded on a pending request counts only for whoever did it. The binding cookie keeps
// other browsers out (boundRequestKey below); these rows are what is left when the request's own browser is
// shared: the attacker's request continued by a victim signed in there, the session switched mid-flow.
runTable('cross-user: one person’s sign-in or consent on a request is not another’s', [
  {
    name: 'the reported attack: mallory signed in on R and allowed it; alice, signed in, continues R: consent',
    done: { ...signedInBy(mallory), ...consentedBy(mallory) },
    presenter: alice,
    expect: 'consent',
  },
  {
    name: 'the reported attack with prompt=none: consent_required, no code',
    params: { prompt: ['none'] },
    done: { ...signedInBy(mallory), ...consentedBy(mallory) },
    presenter: alice,
    expect: 'consent_required',
  },
  {
    name: 'the reported attack with prompt=login: alice must sign in herself',
    params: { prompt: ['login'] },
    done: { ...signedInBy(mallory), ...consentedBy(mallory) },
    presenter: alice,
    remembered: SCOPES,
    expect: 'sign-in',
  },
  {
    name: 'mallory’s sign-in on R is not alice’s fresh authentication (max_age=0)',
    params: { max_age: 0 },
    done: signedInBy(mallory),
    presenter: signedInAt(10),
    remembered: SCOPES,
    expect: 'sign-in',
  },
  {
    name: 'a request whose recorded sign-in names the presenting session under another user: not signed in here',
    params: { max_age: 0 },
    done: { ...signedInBy(alice), login_user_id: mallory.user.id },
    presenter: signedInAt(10),
    remembered: SCOPES,
    expect: 'sign-in',
  },
  {
    name: 'mallory’s consent on R is not alice’s, even to the very scopes: consent',
    done: consentedBy(mallory),
    presenter: alice,
    remembered: ['openid'],
    expect: 'consent',
  },
  {
    name: 'mallory’s consent on R with prompt=consent: alice is asked',
    params: { prompt: ['consent'] },
    done: consentedBy(mallory),
    ...everything,
    expect: 'consent',
  },
  {
    name: 'session switched after consent: alice signed in and allowed R, then bob signed in there: consent for bob',
    done: { ...signedInBy(alice), ...consentedBy(alice) },
    presenter: bob,
    expect: 'consent',
  },
  {
    name: 'session switched after sign-in with prompt=login: bob presents alice’s sign-in: sign-in',
    params: { prompt: ['login'] },
    done: signedInBy(alice),
    presenter: bob,
    remembered: SCOPES,
    expect: 'sign-in',
  },
  {
    name: 'session switched to another session of the same user: her consent on R still counts (it is hers)',
    done: { ...signedInBy(alice), ...consentedBy(alice) },
    presenter: aliceLater,
    expect: 'issue',
  },
  {
    name: 'session switched to another session of the same user, prompt=login: sign in again',
    params: { prompt: ['login'] },
    done: { ...signedInBy(alice), ...consentedBy(alice) },
    presenter: aliceLater,
    expect: 'sign-in',
  },
  {
    name: 'the victim’s own remembered consent: issue, for the victim’s session',
    done: { ...signedInBy(mallory), ...consentedBy(mallory) },
    presenter: alice,
    remembered: SCOPES,
    expect: 'issue',
  },
]);

t.test('browser binding: a pending request is looked up only by its id and its own browser’s hash', async (t) => {
  const id = 'r'.repeat(43);
  const rows: Array<{ name: string; id: string; browser: string | undefined; expect: 'none' | 'key' }> = [
    { name: 'no binding cookie: nothing is looked up (never by the id alone)', id, browser: undefined, expect: 'none' },
    { name: 'an empty binding cookie: nothing is looked up', id, browser: '', expect: 'none' },
    {
      name: 'an id longer than 128 characters: nothing is looked up',
      id: 'r'.repeat(129),
      browser: 'b',
      expect: 'none',
    },
    { name: 'an id of 128 characters with a cookie: looked up', id: 'r'.repeat(128), browser: 'b', expect: 'key' },
  ];
  for (const row of rows) {
    const key = boundRequestKey(row.id, row.browser);
    if (row.expect === 'none') t.equal(key, undefined, row.name);
    else t.same(key, { id: row.id, browserHash: hashToken(row.browser!) }, row.name);
  }
  const stored = browserHash('secret-of-browser-a');
  t.equal(boundRequestKey(id, 'secret-of-browser-a')?.browserHash, stored, 'the browser that started it finds it');
  t.not(boundRequestKey(id, 'secret-of-browser-b')?.browserHash, stored, 'another browser’s secret finds nothing');
  t.equal(stored, hashToken('secret-of-browser-a'), 'only the SHA-256 of the secret is stored');
  t.not(stored, 'secret-of-browser-a');
});

t.test('the prompt values the state machine can see: none alone, login, consent, create; nothing else', async (t) => {
  const app = { clientId: 'app', allowedScopes: ['openid', 'profile'] };
  const parse = (prompt: string) => {
    const raw: RawParams = {
      response_type: 'code',
      code_challenge: s256Challenge('v'.repeat(43)),
      code_challenge_method: 'S256',
      prompt,
    };
    try {
      return parseAuthorizeParams(raw, app, 'https://rp.example.com/cb').prompt.join(' ');
    } catch (error) {
      // The public description is fixed; the value refused is in the private detail (in parentheses here).
      const { error: code, error_description, detail } = error as OAuthError;
      return `${code}: ${error_description}${detail ? ` (${detail})` : ''}`;
    }
  };
  const rows: Array<[name: string, prompt: string, expect: string]> = [
    ['absent (empty)', '', ''],
    ['none', 'none', 'none'],
    ['login', 'login', 'login'],
    ['consent', 'consent', 'consent'],
    ['create', 'create', 'create'],
    ['login consent', 'login consent', 'login consent'],
    ['login create', 'login create', 'login create'],
    [
      'select_account is not supported',
      'select_account',
      'invalid_request: prompt has a value that is not supported (prompt select_account)',
    ],
    ['none login', 'none login', 'invalid_request: prompt=none cannot be combined with other values'],
    ['none consent', 'none consent', 'invalid_request: prompt=none cannot be combined with other values'],
    [
      'login select_account',
      'login select_account',
      'invalid_request: prompt has a value that is not supported (prompt select_account)',
    ],
  ];
  for (const [name, prompt, expect] of rows) t.equal(parse(prompt), expect, name);
});
