// The account pages (issue 17): profile, security, connected applications. Server-rendered, plain forms
// (POST, then 303 back with a status code), no JavaScript. The frame is ./layout.ts.
import { SCOPES } from '../../src/oauth/scopes.js';
import { hidden, html } from '../pages/kit.js';
import {
  accountLayout,
  checkbox,
  describeUserAgent,
  errorSummary,
  type FormErrors,
  input,
  when,
  whenText,
} from './layout.js';
import type { ConnectedApplication, LiveSession, MeProfile } from './service.js';

/**
 * The only status lines a page shows after a redirect: the query names one by its code, never its text
 * (an arbitrary `?m=` is ignored, so a link cannot make the page say anything).
 */
export const STATUS_MESSAGES: Readonly<Record<string, string>> = {
  'profile-saved': 'Your profile is saved.',
  'email-sent': 'We sent a confirmation link to the new address. Your e-mail address changes when you open it.',
  'password-changed': 'Your password is changed. Your other sessions were signed out.',
  'session-ended': 'That session is signed out.',
  'access-revoked': 'Access revoked. The application has to ask you again before it can use your account.',
  'passkey-added': 'Your passkey is added. Your other sessions were signed out.',
  'passkey-renamed': 'Your passkey is renamed.',
  'passkey-removed': 'The passkey is removed. Your other sessions were signed out.',
  'totp-enabled': 'Your authenticator app is set up. Your other sessions were signed out.',
  'totp-removed': 'The authenticator app is removed. Your other sessions were signed out.',
  'totp-cancelled': 'The authenticator app setup is cancelled.',
  'recovery-codes-made':
    'New recovery codes are made and the old ones no longer work. Your other sessions were signed out.',
  'identity-linked': 'The identity is linked: it now signs you in to this account.',
  'identity-unlinked': 'The identity is unlinked: it no longer signs you in. Your other sessions were signed out.',
};

export function statusMessage(code: string | undefined): string | undefined {
  return code && Object.hasOwn(STATUS_MESSAGES, code) ? STATUS_MESSAGES[code] : undefined;
}

interface PageBase {
  loginPath: string;
  csrf: string;
  email: string;
  status?: string | undefined;
  errors?: FormErrors | undefined;
}

/** A required password input (current-password unless told). */
function password(form: string, name: string, label: string, errors?: FormErrors, hint?: string, auto?: string) {
  const autocomplete = auto ?? 'current-password';
  return input({ form, name, label, type: 'password', autocomplete, errors, required: true, ...(hint && { hint }) });
}

const action = (loginPath: string, path: string) => `${loginPath}/account${path}`;

export function profilePage(
  o: PageBase & { profile: MeProfile; values?: Record<string, string>; newEmail?: string },
): string {
  const p = o.profile;
  const v = o.values;
  const value = (name: string, current: string | null) => (v ? v[name] : current);
  const text = (name: string, label: string, autocomplete: string, current: string | null) =>
    input({ form: 'profile', name, label, type: 'text', autocomplete, value: value(name, current), errors: o.errors });
  const profileFields = [
    text('name', 'Name', 'name', p.name),
    text('given_name', 'Given name', 'given-name', p.givenName),
    text('family_name', 'Family name', 'family-name', p.familyName),
    input({
      form: 'profile',
      name: 'picture',
      label: 'Picture URL',
      type: 'url',
      autocomplete: 'photo',
      value: value('picture', p.picture),
      hint: 'The https address of an image.',
      errors: o.errors,
    }),
  ];
  const emailFields = [
    input({
      form: 'email',
      name: 'new_email',
      label: 'New e-mail address',
      type: 'email',
      autocomplete: 'email',
      value: o.newEmail,
      hint: 'We send a link to the new address; nothing changes until you open it.',
      errors: o.errors,
      required: true,
    }),
    password('email', 'password', 'Current password', o.errors),
  ];
  return accountLayout({
    ...o,
    tab: 'profile',
    title: 'Profile',
    body: html`<section aria-labelledby="profile-heading">
<h2 id="profile-heading">Name and picture</h2>
<p class="muted">Applications you allow to see your profile receive these. An empty field is cleared.</p>
${errorSummary(o.errors, 'profile', {})}
${p.picture ? html`<p><img class="picture" src="${p.picture}" alt="Your picture" width="64" height="64"></p>` : ''}
<form method="post" action="${action(o.loginPath, '/profile')}" novalidate>
${hidden('csrf', o.csrf)}
${profileFields}
<button type="submit">Save profile</button>
</form>
</section>
<section aria-labelledby="email-heading">
<h2 id="email-heading">E-mail address</h2>
<p><strong>${p.email}</strong> \
${p.emailVerified ? html`<span class="badge">Verified</span>` : html`<span class="badge warn">Not verified</span>`}</p>
${
  p.pendingEmail
    ? html`<p class="muted" id="pending-email">Waiting for confirmation: <strong>${p.pendingEmail}</strong>. \
Open the link we sent to that address to finish the change.</p>`
    : ''
}
${errorSummary(o.errors, 'email', {})}
<form method="post" action="${action(o.loginPath, '/email')}" novalidate>
${hidden('csrf', o.csrf)}
${emailFields}
<button type="submit">Change e-mail address</button>
</form>
</section>`,
  });
}

function sessionItem(o: PageBase, s: LiveSession) {
  const device = describeUserAgent(s.userAgent);
  const target = s.current
    ? ' this browser'
    : ` the session of ${device}${s.ip ? ` from ${s.ip}` : ''}, signed in ${whenText(s.createdAt)}`;
  return html`<li${s.current ? html` class="current"` : ''}>
<h3>${device}${s.current ? html` <span class="badge">This browser</span>` : ''}</h3>
<dl>
<dt>IP address</dt><dd>${s.ip ?? 'Unknown'}</dd>
<dt>Signed in</dt><dd>${when(s.createdAt)}</dd>
<dt>Last seen</dt><dd>${when(s.lastSeenAt)}</dd>
</dl>
<form method="post" action="${action(o.loginPath, '/sessions/revoke')}">
${hidden('csrf', o.csrf)}${hidden('session', s.id)}
<button type="submit" class="secondary">Sign out<span class="visually-hidden">${target}</span></button>
</form>
</li>`;
}

export function securityPage(o: PageBase & { sessions: LiveSession[] }): string {
  // The current session first, then the most recently seen.
  const sessions = [...o.sessions].sort(
    (a, b) => Number(b.current) - Number(a.current) || b.lastSeenAt.localeCompare(a.lastSeenAt),
  );
  return accountLayout({
    ...o,
    tab: 'security',
    title: 'Security',
    body: html`<section aria-labelledby="password-heading">
<h2 id="password-heading">Password</h2>
${errorSummary(o.errors, 'password', {})}
<form method="post" action="${action(o.loginPath, '/password')}" novalidate>
${hidden('csrf', o.csrf)}
<input type="text" name="username" value="${o.email}" autocomplete="username" hidden>
${password('password', 'current_password', 'Current password', o.errors)}
${password('password', 'new_password', 'New password', o.errors, '8 to 128 characters.', 'new-password')}
${password('password', 'confirm_password', 'Repeat the new password', o.errors, undefined, 'new-password')}
<p class="muted">Changing your password signs out every other session and every application's access.</p>
<button type="submit">Change password</button>
</form>
</section>
<section aria-labelledby="sessions-heading">
<h2 id="sessions-heading">Where you are signed in</h2>
${errorSummary(o.errors, 'sessions', {})}
<ul class="items">${sessions.map((s) => sessionItem(o, s))}</ul>
</section>
<section aria-labelledby="export-heading">
<h2 id="export-heading">Your data</h2>
<p>Download everything stored about you (profile, applications and what they may see, sessions, \
the security events of your account) as one JSON file.</p>
<p><a href="${action(o.loginPath, '/export')}" download>Download your data</a></p>
</section>
<section aria-labelledby="delete-heading">
<h2 id="delete-heading">Delete your account</h2>
<p>This deletes your account and everything stored about it, and signs every application out. \
It cannot be undone.</p>
${errorSummary(o.errors, 'delete', {})}
<form method="post" action="${action(o.loginPath, '/delete')}" novalidate>
${hidden('csrf', o.csrf)}
${password('delete', 'password', 'Current password', o.errors)}
<p class="muted">An account you sign in to only through another provider has no password: leave it empty (you may \
be asked to sign in again first).</p>
${checkbox({
  form: 'delete',
  name: 'confirm',
  label: 'I understand that my account and its data are deleted for good.',
  errors: o.errors,
})}
<button type="submit" class="danger">Delete my account</button>
</form>
</section>`,
  });
}

/** A scope in the consent page's words; an unknown one by its name. */
function scopeItem(name: string) {
  const known = SCOPES.find((s) => s.name === name);
  return known
    ? html`<li><strong>${known.label}</strong>: ${known.consentDescription}</li>`
    : html`<li><strong>${name}</strong></li>`;
}

export function applicationsPage(o: PageBase & { applications: ConnectedApplication[] }): string {
  const list = [...o.applications].sort((a, b) => a.clientName.localeCompare(b.clientName));
  return accountLayout({
    ...o,
    tab: 'applications',
    title: 'Connected applications',
    body: html`<p>These applications can use your account. Revoking access signs the application out at once \
(its tokens stop working); it has to ask you again the next time you use it.</p>
${errorSummary(o.errors, 'applications', {})}
${
  list.length === 0
    ? html`<p id="no-applications">No application has access to your account.</p>`
    : html`<ul class="items">${list.map(
        (a) => html`<li>
<div class="item-head">${a.logoUrl ? html`<img src="${a.logoUrl}" alt="" width="40" height="40">` : ''}\
<h2>${a.clientName}</h2></div>
<p>It may:</p>
<ul class="scopes">${a.scopes.map(scopeItem)}</ul>
<dl>
<dt>Allowed</dt><dd>${when(a.grantedAt)}</dd>
<dt>Last used</dt><dd>${when(a.lastUsedAt)}</dd>
</dl>
<form method="post" action="${action(o.loginPath, '/applications/revoke')}">
${hidden('csrf', o.csrf)}${hidden('client_id', a.clientId)}
<button type="submit" class="danger">Revoke access<span class="visually-hidden"> for ${a.clientName}</span></button>
</form>
</li>`,
      )}</ul>`
}`,
  });
}
