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
      `Hello,\n\nplease confirm your e-mail address${forApp} by opening this link:\n\n${link}\n\n` +
      'If you did not sign up, ignore this mail.\n',
    html:
      html`<p>Hello,</p><p>please confirm your e-mail address${forApp} by opening this link:</p>`.value +
      html`<p><a href="${link}">Verify my e-mail address</a></p><p>If you did not sign up, ignore this mail.</p>`.value,
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

export function passwordChangedMail(to: string, when: Date, resetLink: string): MailMessage {
  const at = when
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, ' UTC');
  return {
    kind: 'password-changed',
    to,
    subject: 'Your password was changed',
    text:
      `Hello,\n\nthe password of the account ${to} was changed at ${at}. ` +
      'Every session was signed out and every application has to sign in again.\n\n' +
      `If this was not you, reset your password now:\n\n${resetLink}\n`,
    html:
      html`<p>Hello,</p><p>the password of the account ${to} was changed at ${at}. `.value +
      html`Every session was signed out and every application has to sign in again.</p>`.value +
      html`<p>If this was not you, <a href="${resetLink}">reset your password now</a>.</p>`.value,
  };
}
