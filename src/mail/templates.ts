import { html } from '../html.js';
import type { MailMessage } from './mailer.js';

export function verificationMail(to: string, link: string, applicationName: string | undefined): MailMessage {
  const forApp = applicationName ? ` to continue to ${applicationName}` : '';
  return {
    kind: 'email-verification',
    to,
    subject: 'Verify your e-mail address',
    link,
    text:
      `Hello,\n\nplease confirm your e-mail address${forApp} on the page this link opens:\n\n${link}\n\n` +
      'Opening the link changes nothing until you press the button there. ' +
      'If you did not ask for it, ignore this mail.\n',
    html:
      html`<p>Hello,</p><p>please confirm your e-mail address${forApp} on the page this link opens:</p>`.value +
      html`<p><a href="${link}">Verify my e-mail address</a></p>`.value +
      html`<p>Opening the link changes nothing until you press the button there. `.value +
      html`If you did not ask for it, ignore this mail.</p>`.value,
  };
}

export function passwordResetMail(to: string, link: string, minutes: number): MailMessage {
  return {
    kind: 'password-reset',
    to,
    subject: 'Reset your password',
    link,
    text:
      `Hello,\n\nsomeone (hopefully you) asked to reset the password of the account ${to}. ` +
      `Open this link to choose a new password:\n\n${link}\n\n` +
      `The link works once and expires in ${minutes} minutes. ` +
      'If you did not ask for it, ignore this mail: your password stays as it is.\n',
    html:
      html`<p>Hello,</p><p>someone (hopefully you) asked to reset the password of the account ${to}. `.value +
      html`Open this link to choose a new password:</p><p><a href="${link}">Choose a new password</a></p>`.value +
      html`<p>The link works once and expires in ${String(minutes)} minutes. `.value +
      html`If you did not ask for it, ignore this mail: your password stays as it is.</p>`.value,
  };
}

const utc = (when: Date) =>
  when
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, ' UTC');

/** `keptSession`: the user changed it while signed in; the session they changed it in stays. */
export function passwordChangedMail(
  to: string,
  when: Date,
  resetLink: string,
  options: { keptSession?: boolean } = {},
): MailMessage {
  const at = utc(when);
  const ended = options.keptSession
    ? 'Every other session was signed out and every application has to sign in again.'
    : 'Every session was signed out and every application has to sign in again.';
  return {
    kind: 'password-changed',
    to,
    subject: 'Your password was changed',
    text:
      `Hello,\n\nthe password of the account ${to} was changed at ${at}. ${ended}\n\n` +
      `If this was not you, reset your password now:\n\n${resetLink}\n`,
    html:
      html`<p>Hello,</p><p>the password of the account ${to} was changed at ${at}. ${ended}</p>`.value +
      html`<p>If this was not you, <a href="${resetLink}">reset your password now</a>.</p>`.value,
  };
}

/**
 * A second factor was added or removed (issue 34): `change` says what, e.g. "A passkey named "Laptop" was
 * added"; `byOperator` when an administrator did it.
 */
export function factorChangedMail(
  to: string,
  change: string,
  when: Date,
  resetLink: string,
  options: { byOperator?: boolean } = {},
): MailMessage {
  const at = utc(when);
  const who = options.byOperator ? 'An administrator made this change.' : 'Your other sessions were signed out.';
  return {
    kind: 'factor-changed',
    to,
    subject: 'The sign-in methods of your account changed',
    text:
      `Hello,\n\nthe sign-in methods of the account ${to} changed at ${at}: ${change}. ${who}\n\n` +
      `If this was not you, reset your password now and review your account's security page:\n\n${resetLink}\n`,
    html:
      html`<p>Hello,</p><p>the sign-in methods of the account ${to} changed at ${at}: ${change}. ${who}</p>`.value +
      html`<p>If this was not you, <a href="${resetLink}">reset your password now</a> `.value +
      html`and review your account's security page.</p>`.value,
  };
}

/** What the mails about a linked identity say (issue 35). */
export interface UpstreamLinkNotice {
  /** The provider's name as its button shows it ("GitHub", "Acme"). */
  provider: string;
  /** The upstream account's address, when it gave one. */
  upstreamEmail: string | null;
  when: Date;
  ip: string | null;
  /** An administrator made the change (not the user). */
  byOperator?: boolean;
  /** Sessions were signed out: every other one (the user acted in one) or all (an administrator). */
  sessionsEnded?: 'others' | 'all' | 'none';
  methodsLink: string;
  resetLink: string;
}

function upstreamNotice(
  to: string,
  o: UpstreamLinkNotice,
  linked: boolean,
): Pick<MailMessage, 'subject' | 'text' | 'html'> {
  const at = utc(o.when);
  const account = o.upstreamEmail ? ` account ${o.upstreamEmail}` : ' account';
  const what = linked
    ? `a ${o.provider}${account} was linked to the account ${to}: it can now sign in to it`
    : `the ${o.provider}${account} was unlinked from the account ${to}: it can no longer sign in to it`;
  const from = o.byOperator
    ? 'An administrator made this change.'
    : o.ip
      ? `The change came from the IP address ${o.ip}.`
      : '';
  const ended =
    o.sessionsEnded === 'all'
      ? 'Every session was signed out.'
      : o.sessionsEnded === 'others'
        ? 'Your other sessions were signed out.'
        : '';
  const tail = [from, ended].filter(Boolean).join(' ');
  const advice = linked
    ? 'If this was not you, sign in, unlink it on your sign-in methods page and reset your password now'
    : 'If this was not you, reset your password now and review your sign-in methods page';
  return {
    subject: linked ? `${o.provider} was linked to your account` : `${o.provider} was unlinked from your account`,
    text:
      `Hello,\n\nat ${at}, ${what}.${tail ? ` ${tail}` : ''}\n\n` + `${advice}:\n\n${o.methodsLink}\n${o.resetLink}\n`,
    html:
      html`<p>Hello,</p><p>at ${at}, ${what}.${tail ? ` ${tail}` : ''}</p>`.value +
      html`<p>${advice}: <a href="${o.methodsLink}">your sign-in methods</a>, `.value +
      html`<a href="${o.resetLink}">reset your password</a>.</p>`.value,
  };
}

/**
 * An upstream identity was linked to the account (issue 35): which provider, when, from which IP, and what to
 * do if it was not the user (unlink it, reset the password).
 */
export function upstreamLinkedMail(to: string, notice: UpstreamLinkNotice): MailMessage {
  return { kind: 'upstream-linked', to, ...upstreamNotice(to, notice, true) };
}

/** An upstream identity was unlinked from the account (issue 35). */
export function upstreamUnlinkedMail(to: string, notice: UpstreamLinkNotice): MailMessage {
  return { kind: 'upstream-unlinked', to, ...upstreamNotice(to, notice, false) };
}

/**
 * A recovery code was used to sign in (issue 34): how many are left, where to manage the sign-in methods, and
 * what to do if it was not the user.
 */
export function recoveryCodeUsedMail(
  to: string,
  when: Date,
  remaining: number,
  links: { methodsLink: string; resetLink: string },
): MailMessage {
  const at = utc(when);
  const left =
    remaining === 0
      ? 'No recovery codes are left: make a new set now.'
      : `${remaining} recovery code${remaining === 1 ? ' is' : 's are'} left.`;
  return {
    kind: 'recovery-code-used',
    to,
    subject: 'A recovery code was used to sign in to your account',
    text:
      `Hello,\n\na recovery code was used to sign in to the account ${to} at ${at}. ${left}\n\n` +
      `If you lost your authenticator, remove it and set up a new one on your sign-in methods page:\n\n` +
      `${links.methodsLink}\n\nIf this was not you, reset your password now:\n\n${links.resetLink}\n`,
    html:
      html`<p>Hello,</p><p>a recovery code was used to sign in to the account ${to} at ${at}. ${left}</p>`.value +
      html`<p>If you lost your authenticator, remove it and set up a new one on your `.value +
      html`<a href="${links.methodsLink}">sign-in methods page</a>.</p>`.value +
      html`<p>If this was not you, <a href="${links.resetLink}">reset your password now</a>.</p>`.value,
  };
}

/** An e-mail change asked for while signed in (issue 17): the link goes to the NEW address. */
export function emailChangeMail(to: string, link: string, previousEmail: string, minutes: number): MailMessage {
  return {
    kind: 'email-change',
    to,
    subject: 'Confirm your new e-mail address',
    link,
    text:
      `Hello,\n\nthe account ${previousEmail} asked to use this address (${to}) from now on. ` +
      `Open this link to confirm the change:\n\n${link}\n\n` +
      `The link works once and expires in ${minutes} minutes. ` +
      'If you did not ask for it, ignore this mail: nothing changes.\n',
    html:
      html`<p>Hello,</p><p>the account ${previousEmail} asked to use this address (${to}) from now on. `.value +
      html`Open this link to confirm the change:</p><p><a href="${link}">Confirm my new address</a></p>`.value +
      html`<p>The link works once and expires in ${String(minutes)} minutes. `.value +
      html`If you did not ask for it, ignore this mail: nothing changes.</p>`.value,
  };
}

/** After a confirmed e-mail change: a notice to the OLD address. */
export function emailChangedMail(to: string, newEmail: string, when: Date): MailMessage {
  const at = utc(when);
  return {
    kind: 'email-changed',
    to,
    subject: 'Your e-mail address was changed',
    text:
      `Hello,\n\nthe account that used this address (${to}) uses ${newEmail} since ${at}; ` +
      'mail about it no longer comes here.\n\n' +
      'If this was not you, your account may be in the wrong hands: contact the operator of this service.\n',
    html:
      html`<p>Hello,</p><p>the account that used this address (${to}) uses ${newEmail} since ${at}; `.value +
      html`mail about it no longer comes here.</p>`.value +
      html`<p>If this was not you, your account may be in the wrong hands: `.value +
      html`contact the operator of this service.</p>`.value,
  };
}

/** A sign-up for a free address (or one held by an unverified account): the link creates the account. */
export function signUpConfirmMail(to: string, link: string, applicationName: string | undefined): MailMessage {
  const forApp = applicationName ? ` (to continue to ${applicationName})` : '';
  return {
    kind: 'sign-up-confirmation',
    to,
    subject: 'Confirm your e-mail address to create your account',
    link,
    text:
      `Hello,\n\nsomeone (hopefully you) signed up with the address ${to}${forApp}. ` +
      `Confirm your e-mail address to create your account:\n\n${link}\n\n` +
      'The link opens a page with a button; no account exists until you press it. ' +
      'If you did not sign up, ignore this mail: nothing is created.\n',
    html:
      html`<p>Hello,</p><p>someone (hopefully you) signed up with the address ${to}${forApp}. `.value +
      html`Confirm your e-mail address to create your account:</p>`.value +
      html`<p><a href="${link}">Confirm and create my account</a></p>`.value +
      html`<p>The link opens a page with a button; no account exists until you press it. `.value +
      html`If you did not sign up, ignore this mail: nothing is created.</p>`.value,
  };
}

/** A sign-up with the address of an existing account: its owner is told, with a way back in. */
export function signUpAttemptMail(to: string, resetLink: string, signInLink: string, minutes: number): MailMessage {
  return {
    kind: 'sign-up-attempt',
    to,
    subject: 'Someone tried to create an account with your address',
    link: resetLink,
    text:
      `Hello,\n\nsomeone tried to create an account with your address ${to}, which has an account already. ` +
      'Nothing was changed.\n\n' +
      `If it was you and you forgot your password, choose a new one with this link:\n\n${resetLink}\n\n` +
      `The link works once and expires in ${minutes} minutes. If you know your password, sign in: ` +
      `${signInLink}\n\nIf it was not you, ignore this mail.\n`,
    html:
      html`<p>Hello,</p><p>someone tried to create an account with your address ${to}, `.value +
      html`which has an account already. Nothing was changed.</p>`.value +
      html`<p>If it was you, <a href="${signInLink}">sign in</a> or `.value +
      html`<a href="${resetLink}">choose a new password</a>.</p>`.value +
      html`<p>The link works once and expires in ${String(minutes)} minutes. `.value +
      html`If it was not you, ignore this mail.</p>`.value,
  };
}

/**
 * An e-mail change asked for with the address of another account (issue 31): its holder is told, with no
 * link that acts; the asker was answered as for a free address, so the request is no account oracle.
 */
export function emailChangeAttemptMail(to: string): MailMessage {
  return {
    kind: 'email-change-attempt',
    to,
    subject: 'Someone asked to move another account to your address',
    text:
      `Hello,\n\nsomeone signed in to another account asked to use your address ${to} for that account. ` +
      'Your address belongs to your account, so nothing changes unless you act: no link was sent, ' +
      'and the other account cannot take your address while your account has it.\n\n' +
      'If this is unexpected, you need not do anything. If you keep receiving such mails, ' +
      'contact the operator of this service.\n',
    html:
      html`<p>Hello,</p><p>someone signed in to another account asked to use your address ${to} `.value +
      html`for that account. Your address belongs to your account, so nothing changes unless you act: `.value +
      html`no link was sent, and the other account cannot take your address while your account has it.</p>`.value +
      html`<p>If this is unexpected, you need not do anything. If you keep receiving such mails, `.value +
      html`contact the operator of this service.</p>`.value,
  };
}
