// The account pages (issue 17) through app.inject: signed out they send to sign-in (and back, never off-site);
// signed in they show the profile, the sessions and the connected applications; every form with good and bad
// input (CSRF, foreign Origin, validation errors next to their fields), Post/Redirect/Get, security headers.
import t, { type Test } from 'tap';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp } from '../helpers/app.js';
import { startSmtp, linkIn } from '../helpers/smtp.js';
import { confirmMailedLink, cookiesOf, hiddenField, obtainTokens, tokenRequest } from '../helpers/flow.js';

const smtp = await startSmtp();
t.teardown(() => smtp.close());
const { app } = await buildTestApp(t, { env: { SMTP_URL: smtp.url } });
const actor = { actor: 'test' };
const redirectUri = 'https://app.example.com/callback';
const client = await app.services.applications.create(
  {
    clientName: 'Evil <script>alert(1)</script> App',
    redirectUris: [redirectUri],
    allowedScopes: ['openid', 'profile', 'email', 'offline_access'],
  },
  actor,
);
const PASSWORD = 'a good long password';
async function user(email: string, name = 'Pat Person') {
  await app.services.users.create({ email, password: PASSWORD, name, emailVerified: true }, actor);
}
await user('pat@example.com');

type Jar = Record<string, string>;
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

const get = (url: string, jar: Jar = {}, headers: Record<string, string> = {}) =>
  app.inject({ method: 'GET', url, cookies: jar, headers });
const post = (url: string, form: Record<string, string>, jar: Jar, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'POST',
    url,
    cookies: jar,
    payload: new URLSearchParams(form).toString(),
    headers: { ...FORM, ...headers },
  });

/** A browser signed in as `email`: its cookie jar (session and CSRF cookies) and the CSRF token. */
async function signIn(email: string, password = PASSWORD, userAgent = 'Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0') {
  const page = await get('/login/sign-in');
  const jar = cookiesOf(page);
  const csrf = hiddenField(page.body, 'csrf');
  const res = await post('/login/sign-in', { csrf, email, password }, jar, { 'user-agent': userAgent });
  if (res.statusCode !== 303) throw new Error(`sign-in failed: ${res.statusCode}`);
  return { jar: { ...jar, ...cookiesOf(res) }, csrf };
}

/** An account page fetched by a signed-in browser, with its CSRF token. */
async function open(path: string, browser: { jar: Jar }) {
  const res = await get(path, browser.jar);
  return { res, csrf: hiddenField(res.body, 'csrf') };
}

function assertPageHeaders(t: Test, res: LightMyRequestResponse, label: string) {
  t.equal(res.headers['cache-control'], 'no-store', `${label}: no-store`);
  t.match(String(res.headers['content-security-policy']), /frame-ancestors 'none'/, `${label}: CSP frame-ancestors`);
  t.notMatch(String(res.headers['content-security-policy']), /unsafe-inline|unsafe-eval/, `${label}: no unsafe CSP`);
  t.equal(res.headers['x-frame-options'], 'DENY', `${label}: X-Frame-Options`);
  t.equal(res.headers['referrer-policy'], 'no-referrer', `${label}: Referrer-Policy`);
  t.equal(res.headers['x-content-type-options'], 'nosniff', `${label}: nosniff`);
}

/** The `<input>` tag of a field. */
function inputTag(body: string, id: string): string {
  return new RegExp(`<input id="${id}"[^>]*>`).exec(body)?.[0] ?? '';
}

/** The field is marked invalid and points at its error (and hint), which exists. */
function assertInvalid(t: Test, body: string, id: string, describedBy = `${id}-error`) {
  const tag = inputTag(body, id);
  t.match(tag, 'aria-invalid="true"', `${id} is invalid`);
  t.match(tag, `aria-describedby="${describedBy}"`, `${id} points at its error`);
  t.match(body, `<p class="error" id="${id}-error">`, `${id} has its error next to it`);
}

/** The page's structure: one h1, the nav's current tab, a label for every visible input, no script. */
function assertStructure(t: Test, body: string, current: string) {
  t.equal(body.match(/<h1[ >]/g)?.length, 1, 'one h1');
  t.match(body, new RegExp(`<a href="[^"]*" aria-current="page">${current}</a>`), `${current} is the current tab`);
  t.equal(body.match(/aria-current=/g)?.length, 1, 'one current tab');
  t.match(body, /<nav aria-label="Your account">/);
  for (const [, id] of body.matchAll(/<input id="([^"]+)"/g)) t.match(body, `<label for="${id}">`, `${id} is labelled`);
  t.notMatch(body, /<script/i, 'no script');
}

const PAGES = ['/login/account', '/login/account/security', '/login/account/applications'];
const POSTS = [
  '/login/account/profile',
  '/login/account/email',
  '/login/account/password',
  '/login/account/sessions/revoke',
  '/login/account/delete',
  '/login/account/applications/revoke',
];

t.test('signed out, every page and form sends to the sign-in page, which comes back to it', async (t) => {
  for (const path of [...PAGES, '/login/account/export']) {
    const res = await get(path);
    t.equal(res.statusCode, 303, path);
    const location = new URL(String(res.headers.location), 'http://localhost:3000');
    t.equal(location.pathname, '/login/sign-in', `${path}: to sign-in`);
    const back = location.searchParams.get('return_to');
    t.equal(back, path === '/login/account/export' ? '/login/account/security' : path, `${path}: and back`);
  }
  // A form posted with a valid CSRF token but no session: the same redirect, nothing done.
  const page = await get('/login/sign-in');
  const csrf = hiddenField(page.body, 'csrf');
  for (const path of POSTS) {
    const res = await post(path, { csrf, name: 'Mallory' }, cookiesOf(page));
    t.equal(res.statusCode, 303, path);
    t.match(String(res.headers.location), /^\/login\/sign-in\?return_to=%2Flogin%2Faccount/, path);
  }
});

t.test('the sign-in page carries return_to and signing in lands on the account page', async (t) => {
  const page = await get('/login/sign-in?return_to=%2Flogin%2Faccount%2Fsecurity');
  t.equal(page.statusCode, 200);
  t.equal(hiddenField(page.body, 'return_to'), '/login/account/security');
  const form = { csrf: hiddenField(page.body, 'csrf'), email: 'pat@example.com', password: PASSWORD };
  const res = await post('/login/sign-in', { ...form, return_to: '/login/account/security' }, cookiesOf(page));
  t.equal(res.statusCode, 303);
  t.equal(res.headers.location, '/login/account/security');
  const landed = await get('/login/account/security', { ...cookiesOf(page), ...cookiesOf(res) });
  t.equal(landed.statusCode, 200);
});

t.test('the return path cannot leave the login path or this origin', async (t) => {
  const hostile = [
    'https://evil.example/login/account',
    '//evil.example/login/account',
    '/\\evil.example/login/account',
    '/%5Cevil.example',
    '/login/../api/auth/oauth2/token',
    '/login/%2e%2e/admin',
    '/login/account/../../admin',
    '/admin',
    '/loginx/account',
    'javascript:alert(1)',
    '/login/account\r\nSet-Cookie: a=b',
    'http://localhost:3000/login/account',
  ];
  for (const value of hostile) {
    const page = await get(`/login/sign-in?return_to=${encodeURIComponent(value)}`);
    t.notMatch(page.body, /name="return_to"/, `${JSON.stringify(value)} is not carried by the form`);
    const csrf = hiddenField(page.body, 'csrf');
    const form = { csrf, email: 'pat@example.com', password: PASSWORD, return_to: value };
    const res = await post('/login/sign-in', form, cookiesOf(page));
    t.equal(res.statusCode, 303);
    t.equal(res.headers.location, '/login/', `${JSON.stringify(value)}: the default page, not the return path`);
  }
});

t.test('every account page has the hosted pages security headers and structure', async (t) => {
  const browser = await signIn('pat@example.com');
  for (const [path, tab] of [
    ['/login/account', 'Profile'],
    ['/login/account/security', 'Security'],
    ['/login/account/applications', 'Applications'],
  ] as const) {
    const res = await get(path, browser.jar);
    t.equal(res.statusCode, 200, path);
    t.match(res.headers['content-type'], /^text\/html/);
    assertPageHeaders(t, res, path);
    assertStructure(t, res.body, tab);
  }
  for (const path of ['/login/account/signed-out', '/login/account/deleted']) {
    const res = await get(path);
    t.equal(res.statusCode, 200, path);
    assertPageHeaders(t, res, path);
  }
  const css = await get('/login/account/assets/account.css');
  t.equal(css.statusCode, 200);
  t.match(css.headers['content-type'], /text\/css/);
  t.match(css.body, /:focus/, 'focus is visible');
});

t.test('the signed-in page and the welcome page link to the account page', async (t) => {
  const browser = await signIn('pat@example.com');
  const res = await get('/login/', browser.jar);
  t.match(res.body, '<a href="/login/account">Manage your account</a>');
  const welcome = await get('/');
  t.match(welcome.body, '<a href="http://localhost:3000/login/account">', 'so does the welcome page');
});

t.test('the profile page shows the profile and the e-mail with its verified state', async (t) => {
  const browser = await signIn('pat@example.com');
  const { res } = await open('/login/account', browser);
  t.match(res.body, 'id="profile-name" name="name" type="text" autocomplete="name" value="Pat Person"');
  t.match(res.body, '<strong>pat@example.com</strong> <span class="badge">Verified</span>');
  t.match(res.body, '<form method="post" action="/login/account/profile" novalidate>');
  t.match(res.body, '<form method="post" action="/login/account/email" novalidate>');
  t.notMatch(res.body, /role="status"/, 'no status line without a status code');
});

t.test('saving the profile redirects (303) to the page, which says it is saved', async (t) => {
  await user('pia@example.com', 'Pia');
  const browser = await signIn('pia@example.com');
  const { csrf } = await open('/login/account', browser);
  const form = {
    csrf,
    name: '  Pia Q. Public ',
    given_name: 'Pia',
    family_name: '',
    picture: 'https://cdn.example/p.png',
  };
  const res = await post('/login/account/profile', form, browser.jar);
  t.equal(res.statusCode, 303);
  t.equal(res.headers.location, '/login/account?m=profile-saved');
  const after = await get('/login/account?m=profile-saved', browser.jar);
  t.match(after.body, '<p class="notice" role="status">Your profile is saved.</p>');
  t.match(after.body, 'value="Pia Q. Public"', 'the name is trimmed and saved');
  t.match(after.body, 'id="profile-family_name" name="family_name" type="text" autocomplete="family-name">');
  t.match(after.body, '<img class="picture" src="https://cdn.example/p.png"');
  const saved = await app.services.users.get('pia@example.com');
  t.equal(saved.name, 'Pia Q. Public');
  t.equal(saved.familyName, null, 'an empty field clears');
});

t.test('a bad picture URL is a 400 with the error next to the field and in the summary', async (t) => {
  const browser = await signIn('pat@example.com');
  const { csrf } = await open('/login/account', browser);
  const form = { csrf, name: 'Pat "<b>"', given_name: '', family_name: '', picture: 'javascript:alert(1)' };
  const res = await post('/login/account/profile', form, browser.jar);
  t.equal(res.statusCode, 400);
  assertPageHeaders(t, res, 'refused profile');
  t.match(res.body, /<div class="alert" role="alert" id="profile-errors">/);
  t.match(res.body, /<a href="#profile-picture">/, 'the summary links to the field');
  assertInvalid(t, res.body, 'profile-picture', 'profile-picture-hint profile-picture-error');
  t.match(res.body, 'value="Pat &quot;&lt;b&gt;&quot;"', 'what was typed comes back, escaped');
  t.notMatch(res.body, '<b>');
  const still = await get('/login/account', browser.jar);
  t.match(still.body, 'value="Pat Person"', 'nothing was saved');
});

t.test('several profile problems at once: each next to its field, all in the summary', async (t) => {
  const browser = await signIn('pat@example.com');
  const { csrf } = await open('/login/account', browser);
  const form = { csrf, name: 'x'.repeat(201), given_name: 'Pat\u0007', family_name: 'Person', picture: '' };
  const res = await post('/login/account/profile', form, browser.jar);
  t.equal(res.statusCode, 400);
  assertInvalid(t, res.body, 'profile-name');
  assertInvalid(t, res.body, 'profile-given_name');
  t.notMatch(inputTag(res.body, 'profile-family_name'), 'aria-invalid', 'a good field is not marked');
  t.match(res.body, /<a href="#profile-name">[^<]+<\/a><\/li><li><a href="#profile-given_name">/);
  t.match(inputTag(res.body, 'profile-name'), ' autofocus', 'the cursor goes to the first field to fix');
  t.match(res.body, `value="${'x'.repeat(201)}"`, 'what was typed comes back to be fixed');
});

t.test('the status line comes only from the fixed table, never from the query', async (t) => {
  const browser = await signIn('pat@example.com');
  for (const m of ['<script>alert(1)</script>', 'Your account was hacked', 'constructor', 'toString', '__proto__']) {
    const res = await get(`/login/account?m=${encodeURIComponent(m)}`, browser.jar);
    t.equal(res.statusCode, 200, m);
    t.notMatch(res.body, /role="status"/, `${m}: no status line`);
    t.notMatch(res.body, 'hacked');
    t.notMatch(res.body, '<script');
  }
});

t.test('every form refuses a missing or wrong CSRF token and a foreign Origin with a 403 page', async (t) => {
  const browser = await signIn('pat@example.com');
  const { csrf } = await open('/login/account', browser);
  for (const path of POSTS) {
    const fields = { name: 'Mallory', password: PASSWORD, confirm: 'yes', session: 'x', client_id: client.clientId };
    const none = await post(path, fields, browser.jar);
    t.equal(none.statusCode, 403, `${path}: no token`);
    t.match(none.headers['content-type'], /^text\/html/, `${path}: a page, not JSON`);
    t.match(none.body, /This form has expired/);
    assertPageHeaders(t, none, path);
    const wrong = await post(path, { ...fields, csrf: 'x'.repeat(43) }, browser.jar);
    t.equal(wrong.statusCode, 403, `${path}: wrong token`);
    const foreign = await post(path, { ...fields, csrf }, browser.jar, { origin: 'https://evil.example' });
    t.equal(foreign.statusCode, 403, `${path}: foreign origin`);
    t.match(foreign.body, /sent from another site/);
  }
  const same = await post('/login/account/profile', { csrf, name: 'Pat Person' }, browser.jar, {
    origin: 'http://localhost:3000',
  });
  t.equal(same.statusCode, 303, 'the same form from this origin passes');
  const page = await get('/login/account', browser.jar);
  t.match(page.body, 'value="Pat Person"', 'nothing was changed by the refused posts');
  t.equal(await get('/login/account', browser.jar).then((r) => r.statusCode), 200, 'still signed in');
});

t.test('e-mail change: errors next to the fields, then a link to the new address', async (t) => {
  await user('eve@example.com', 'Eve');
  await user('taken@example.com', 'Taken');
  const browser = await signIn('eve@example.com');
  const { csrf } = await open('/login/account', browser);
  const empty = await post('/login/account/email', { csrf, new_email: '', password: '' }, browser.jar);
  t.equal(empty.statusCode, 400);
  t.match(empty.body, /<p class="error" id="email-new_email-error">Enter the new e-mail address<\/p>/);
  t.match(empty.body, /<p class="error" id="email-password-error">Enter your current password<\/p>/);
  t.match(empty.body, /role="alert" id="email-errors"/);

  const wrong = await post(
    '/login/account/email',
    { csrf, new_email: 'eve2@example.com', password: 'nope nope nope' },
    browser.jar,
  );
  t.equal(wrong.statusCode, 400);
  assertInvalid(t, wrong.body, 'email-password');
  t.match(wrong.body, 'value="eve2@example.com"', 'the new address is kept');
  t.notMatch(wrong.body, 'nope nope nope', 'the password is never sent back');

  // Another account's address answers as a free one does (issue 31: the form was an account oracle; it
  // answered 409 with an error on the field): its holder gets a notice with no link, nothing changes.
  const taken = await post(
    '/login/account/email',
    { csrf, new_email: 'taken@example.com', password: PASSWORD },
    browser.jar,
  );
  t.equal(taken.statusCode, 303);
  t.equal(taken.headers.location, '/login/account?m=email-sent');
  const takenPage = await get('/login/account?m=email-sent', browser.jar);
  t.match(takenPage.body, 'role="status">We sent a confirmation link to the new address.');
  t.match(takenPage.body, /id="pending-email">Waiting for confirmation: <strong>taken@example.com<\/strong>/);
  const notice = await smtp.waitFor('taken@example.com');
  t.equal(notice.subject, 'Someone asked to move another account to your address');
  t.notMatch(notice.text, /https?:\/\//, 'no link in the notice');
  t.notMatch(notice.text, 'eve@example.com', 'the notice does not name the asking account');

  const invalid = await post(
    '/login/account/email',
    { csrf, new_email: 'not an address', password: PASSWORD },
    browser.jar,
  );
  t.equal(invalid.statusCode, 400);
  assertInvalid(t, invalid.body, 'email-new_email', 'email-new_email-hint email-new_email-error');

  const ok = await post(
    '/login/account/email',
    { csrf, new_email: 'eve.new@example.com', password: PASSWORD },
    browser.jar,
  );
  t.equal(ok.statusCode, 303);
  t.equal(ok.headers.location, '/login/account?m=email-sent');
  const page = await get('/login/account?m=email-sent', browser.jar);
  t.match(page.body, 'role="status">We sent a confirmation link to the new address.');
  t.match(page.body, '<strong>eve@example.com</strong>', 'the address has not changed yet');
  t.match(page.body, /id="pending-email">Waiting for confirmation: <strong>eve.new@example.com<\/strong>/);
  t.equal(
    takenPage.body.replaceAll('taken@example.com', 'eve.new@example.com'),
    page.body,
    'the page reads the same as for the taken address',
  );
  const mail = await smtp.waitFor('eve.new@example.com');
  const link = new URL(linkIn(mail));
  t.equal(link.pathname, '/login/verify-email/confirm');
  // Confirmed by the account's own browser: the link's page, then its button (issue 31).
  const confirmed = await confirmMailedLink(app, link.href, browser.jar);
  t.equal(confirmed.statusCode, 200);
  const changed = await get('/login/account', browser.jar);
  t.match(changed.body, '<strong>eve.new@example.com</strong>', 'the address changed once confirmed');
  t.notMatch(changed.body, 'id="pending-email"');
  t.same(
    smtp.mails.filter((m) => m.to === 'taken@example.com').map((m) => m.subject),
    ['Someone asked to move another account to your address'],
    'the holder got the notice only',
  );
  const holder = await signIn('taken@example.com');
  const holderPage = await get('/login/account', holder.jar);
  t.match(holderPage.body, '<strong>taken@example.com</strong>', 'the holder keeps the address');
  t.notMatch(holderPage.body, 'id="pending-email"');
});

t.test(
  'password change: a mismatch, a wrong, short or common password are form errors; success signs out the others',
  async (t) => {
    await user('sam@example.com', 'Sam');
    const browser = await signIn('sam@example.com');
    const other = await signIn('sam@example.com');
    const { csrf } = await open('/login/account/security', browser);
    const form = (current: string, next: string, confirm: string) => ({
      csrf,
      current_password: current,
      new_password: next,
      confirm_password: confirm,
    });
    const mismatch = await post(
      '/login/account/password',
      form(PASSWORD, 'new password one', 'new password two'),
      browser.jar,
    );
    t.equal(mismatch.statusCode, 400);
    assertInvalid(t, mismatch.body, 'password-confirm_password');
    t.match(inputTag(mismatch.body, 'password-confirm_password'), ' autofocus', 'the cursor goes to the field');
    t.equal(mismatch.body.match(/ autofocus/g)?.length, 1, 'and only there');
    t.match(mismatch.body, 'The two new passwords are not the same');
    t.notMatch(mismatch.body, 'new password one', 'no password comes back');
    const wrong = await post(
      '/login/account/password',
      form('wrong password!', 'new password one', 'new password one'),
      browser.jar,
    );
    t.equal(wrong.statusCode, 400);
    assertInvalid(t, wrong.body, 'password-current_password');
    const short = await post('/login/account/password', form(PASSWORD, 'short', 'short'), browser.jar);
    t.equal(short.statusCode, 400);
    assertInvalid(t, short.body, 'password-new_password', 'password-new_password-hint password-new_password-error');
    const common = await post('/login/account/password', form(PASSWORD, 'Password123', 'Password123'), browser.jar);
    t.equal(common.statusCode, 400, 'a common password is refused');
    assertInvalid(t, common.body, 'password-new_password', 'password-new_password-hint password-new_password-error');
    t.match(common.body, /id="password-new_password-error">This password is one of the most common ones/);
    t.equal((await get('/login/account', other.jar)).statusCode, 200, 'refusals changed nothing');

    const ok = await post(
      '/login/account/password',
      form(PASSWORD, 'new password one', 'new password one'),
      browser.jar,
    );
    t.equal(ok.statusCode, 303);
    t.equal(ok.headers.location, '/login/account/security?m=password-changed');
    const renewed = { ...browser.jar, ...cookiesOf(ok) };
    t.not(renewed['idp.session'], browser.jar['idp.session'], 'the session cookie gets a new secret');
    t.equal((await get('/login/account', browser.jar)).statusCode, 303, 'a copy of the old cookie is signed out');
    const page = await get('/login/account/security?m=password-changed', renewed);
    t.equal(page.statusCode, 200, 'this session stays, under the new cookie');
    t.match(page.body, 'role="status">Your password is changed.');
    t.equal((await get('/login/account', other.jar)).statusCode, 303, 'the other session is signed out');
    await signIn('sam@example.com', 'new password one');
  },
);

t.test(
  'sessions: listed with device, IP and dates; another one signs out; this one signs this browser out',
  async (t) => {
    await user('kim@example.com', 'Kim');
    const here = await signIn('kim@example.com', PASSWORD, 'Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0');
    const phone = await signIn(
      'kim@example.com',
      PASSWORD,
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Version/17.0 Mobile/15E148 ' +
        'Safari/604.1',
    );
    const { res, csrf } = await open('/login/account/security', here);
    t.match(res.body, /<h3>Firefox on Linux <span class="badge">This browser<\/span><\/h3>/);
    t.match(res.body, /<h3>Safari on iOS<\/h3>/);
    t.match(res.body, /<dt>IP address<\/dt><dd>127\.0\.0\.1<\/dd>/);
    t.match(res.body, /<time datetime="\d{4}-\d\d-\d\dT/);
    t.match(res.body, /Sign out<span class="visually-hidden"> this browser<\/span>/);
    t.match(
      res.body,
      /Sign out<span class="visually-hidden"> the session of Safari on iOS from 127\.0\.0\.1, signed in /,
    );
    const ids = [...res.body.matchAll(/name="session" value="([^"]+)"/g)].map((m) => m[1]!);
    t.equal(ids.length, 2);
    const phoneId = ids[1]!;

    const unknown = await post('/login/account/sessions/revoke', { csrf, session: 'no-such-session' }, here.jar);
    t.equal(unknown.statusCode, 404);
    t.match(unknown.body, /role="alert" id="sessions-errors"/);

    const ended = await post('/login/account/sessions/revoke', { csrf, session: phoneId }, here.jar);
    t.equal(ended.statusCode, 303);
    t.equal(ended.headers.location, '/login/account/security?m=session-ended');
    t.equal((await get('/login/account', phone.jar)).statusCode, 303, 'the phone is signed out');
    const after = await get('/login/account/security?m=session-ended', here.jar);
    t.match(after.body, 'role="status">That session is signed out.');
    t.notMatch(after.body, 'Safari on iOS');

    const own = await post('/login/account/sessions/revoke', { csrf, session: ids[0]! }, here.jar);
    t.equal(own.statusCode, 303);
    t.equal(own.headers.location, '/login/account/signed-out');
    const cleared = (own.cookies as Array<{ name: string; value: string }>).find((c) => c.name === 'idp.session');
    t.equal(cleared?.value, '', 'the session cookie is cleared');
    t.equal((await get('/login/account', here.jar)).statusCode, 303, 'and this browser is signed out');
  },
);

t.test('applications: listed with scopes in words, revoked with one click; its tokens stop working', async (t) => {
  await user('ann@example.com', 'Ann');
  const flow = { clientId: client.clientId, redirectUri, email: 'ann@example.com', password: PASSWORD };
  const { tokens } = await obtainTokens(app, { ...flow, scope: 'openid profile offline_access' });
  const browser = await signIn('ann@example.com');
  const { res, csrf } = await open('/login/account/applications', browser);
  t.match(res.body, '<h2>Evil &lt;script&gt;alert(1)&lt;/script&gt; App</h2>', 'the name, escaped');
  t.notMatch(res.body, '<script>');
  t.match(res.body, '<li><strong>Profile</strong>: See your name and profile picture</li>');
  t.match(res.body, '<li><strong>Stay signed in</strong>:');
  t.match(res.body, /<dt>Allowed<\/dt><dd><time datetime=/);
  t.match(res.body, /Revoke access<span class="visually-hidden"> for Evil &lt;script&gt;/);

  const unknown = await post('/login/account/applications/revoke', { csrf, client_id: 'nope' }, browser.jar);
  t.equal(unknown.statusCode, 404);
  t.match(unknown.body, /role="alert" id="applications-errors"/);

  const revoked = await post('/login/account/applications/revoke', { csrf, client_id: client.clientId }, browser.jar);
  t.equal(revoked.statusCode, 303);
  t.equal(revoked.headers.location, '/login/account/applications?m=access-revoked');
  const after = await get('/login/account/applications?m=access-revoked', browser.jar);
  t.match(after.body, 'role="status">Access revoked.');
  t.match(after.body, 'No application has access to your account.');

  const refresh = await tokenRequest(app, {
    grant_type: 'refresh_token',
    refresh_token: tokens.refresh_token!,
    client_id: client.clientId,
  });
  t.equal(refresh.statusCode, 400);
  t.equal(refresh.json().error, 'invalid_grant');
  const me = await app.inject({
    method: 'GET',
    url: '/api/external/me',
    headers: { authorization: `Bearer ${tokens.access_token}` },
  });
  t.equal(me.statusCode, 401);
});

t.test('the export is a JSON attachment, never cached', async (t) => {
  const browser = await signIn('pat@example.com');
  const res = await get('/login/account/export', browser.jar);
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^application\/json/);
  t.match(String(res.headers['content-disposition']), /^attachment; filename="account-data.json"$/);
  t.equal(res.headers['cache-control'], 'no-store');
  t.match(res.body, 'pat@example.com');
  t.type(res.json(), 'object');
  const page = await get('/login/account/security', browser.jar);
  t.match(page.body, '<a href="/login/account/export" download>Download your data</a>');
});

t.test('account deletion needs the password and the checkbox; then the account and the session are gone', async (t) => {
  await user('del@example.com', 'Del');
  const browser = await signIn('del@example.com');
  const { csrf } = await open('/login/account/security', browser);
  const unchecked = await post('/login/account/delete', { csrf, password: PASSWORD }, browser.jar);
  t.equal(unchecked.statusCode, 400);
  assertInvalid(t, unchecked.body, 'delete-confirm');
  t.match(inputTag(unchecked.body, 'delete-confirm'), 'type="checkbox" value="yes" required');
  const wrong = await post('/login/account/delete', { csrf, password: 'not my password', confirm: 'yes' }, browser.jar);
  t.equal(wrong.statusCode, 400);
  assertInvalid(t, wrong.body, 'delete-password');
  t.equal((await get('/login/account', browser.jar)).statusCode, 200, 'still there');

  const ok = await post('/login/account/delete', { csrf, password: PASSWORD, confirm: 'yes' }, browser.jar);
  t.equal(ok.statusCode, 303);
  t.equal(ok.headers.location, '/login/account/deleted');
  const cleared = (ok.cookies as Array<{ name: string; value: string }>).find((c) => c.name === 'idp.session');
  t.equal(cleared?.value, '', 'the session cookie is cleared');
  t.equal((await get('/login/account', browser.jar)).statusCode, 303);
  const page = await get('/login/account/deleted');
  t.match(page.body, '<h1>Your account is deleted</h1>');
  const again = await get('/login/sign-in');
  const signInAgain = await post(
    '/login/sign-in',
    { csrf: hiddenField(again.body, 'csrf'), email: 'del@example.com', password: PASSWORD },
    cookiesOf(again),
  );
  t.equal(signInAgain.statusCode, 401, 'the account cannot sign in any more');
});

t.test('with rate limits on, repeated wrong passwords get a 429 page with Retry-After, not JSON', async (t) => {
  const limited = await buildTestApp(t, { env: { SMTP_URL: smtp.url, RATE_LIMITS: 'on' } });
  const email = 'limited@example.com';
  await limited.app.services.users.create({ email, password: PASSWORD, emailVerified: true }, actor);
  const page = await limited.app.inject({ method: 'GET', url: '/login/sign-in' });
  let jar = cookiesOf(page);
  const signInForm = { csrf: hiddenField(page.body, 'csrf'), email, password: PASSWORD };
  const signedIn = await limited.app.inject({
    method: 'POST',
    url: '/login/sign-in',
    cookies: jar,
    headers: FORM,
    payload: new URLSearchParams(signInForm).toString(),
  });
  t.equal(signedIn.statusCode, 303);
  jar = { ...jar, ...cookiesOf(signedIn) };
  const csrf = signInForm.csrf;
  let res: LightMyRequestResponse | undefined;
  for (let i = 0; i < 12; i++) {
    res = await limited.app.inject({
      method: 'POST',
      url: '/login/account/delete',
      cookies: jar,
      headers: FORM,
      payload: new URLSearchParams({ csrf, password: `wrong password ${i}`, confirm: 'yes' }).toString(),
    });
    if (res.statusCode !== 400) break;
  }
  t.equal(res?.statusCode, 429, 'the account password guesses are limited');
  t.match(res?.headers['content-type'], /^text\/html/);
  t.match(String(res?.headers['retry-after']), /^\d+$/, 'Retry-After is set');
  t.match(res?.body, /<div class="alert" role="alert" id="delete-errors"><p>Too many/);
  assertPageHeaders(t, res!, '429');
  const account = await limited.app.inject({ method: 'GET', url: '/login/account', cookies: jar });
  t.equal(account.statusCode, 200, 'still signed in, the account still there');
});

t.test('under another LOGIN_URL path the pages, links and return path follow it', async (t) => {
  const other = await buildTestApp(t, { env: { LOGIN_URL: 'http://localhost:3000/id' } });
  await other.app.services.users.create({ email: 'moved@example.com', password: PASSWORD, emailVerified: true }, actor);
  const signedOut = await other.app.inject({ method: 'GET', url: '/id/account/applications' });
  t.equal(signedOut.statusCode, 303);
  t.equal(signedOut.headers.location, '/id/sign-in?return_to=%2Fid%2Faccount%2Fapplications');
  const page = await other.app.inject({ method: 'GET', url: String(signedOut.headers.location) });
  t.equal(hiddenField(page.body, 'return_to'), '/id/account/applications');
  const form = { csrf: hiddenField(page.body, 'csrf'), email: 'moved@example.com', password: PASSWORD };
  const res = await other.app.inject({
    method: 'POST',
    url: '/id/sign-in',
    cookies: cookiesOf(page),
    headers: FORM,
    payload: new URLSearchParams({ ...form, return_to: '/id/account/applications' }).toString(),
  });
  t.equal(res.headers.location, '/id/account/applications');
  const off = await other.app.inject({
    method: 'POST',
    url: '/id/sign-in',
    cookies: cookiesOf(page),
    headers: FORM,
    payload: new URLSearchParams({ ...form, return_to: '/login/account' }).toString(),
  });
  t.equal(off.headers.location, '/id/', 'a path outside this login path is not a return path');
  const account = await other.app.inject({
    method: 'GET',
    url: '/id/account/applications',
    cookies: { ...cookiesOf(page), ...cookiesOf(res) },
  });
  t.equal(account.statusCode, 200);
  t.match(account.body, '<link rel="stylesheet" href="/id/account/assets/account.css">');
  t.match(account.body, '<a href="/id/account/security">Security</a>');
  t.match(account.body, '<form method="post" action="/id/sign-out">');
  t.notMatch(account.body, '/login/', 'nothing points at the default path');
});
