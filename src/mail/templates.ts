import { html } from '../html.js';
import type { MailMessage } from './mailer.js';

export function verificationMail(to: string, link: string, applicationName: string | undefined): MailMessage {
  const forApp = applicationName ? ` to continue to ${applicationName}` : '';
  return {
    kind: 'email-verification',
    to,
    subject: 'Verify your e-mail address',
    link,
    text: `Hello,\n\nplease confirm your e-mail address${forApp} by opening this link:\n\n${link}\n\nIf you did not sign up, ignore this mail.\n`,
    html: html`<p>Hello,</p><p>please confirm your e-mail address${forApp} by opening this link:</p><p><a href="${link}">Verify my e-mail address</a></p><p>If you did not sign up, ignore this mail.</p>`.value,
  };
}
