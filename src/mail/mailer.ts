// Outgoing mail through nodemailer to SMTP_URL; without SMTP (development), mails are appended to
// DATA_DIR/outbox.jsonl and their links logged, so a new user can still follow them.
// Sending never blocks or changes an HTTP response: callers fire and forget.
import { appendFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import type { FastifyBaseLogger } from 'fastify';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html: string;
  /** The link the mail carries, logged in development outbox mode only. */
  link?: string;
  kind: string;
}

export interface Mailer {
  send(message: MailMessage): Promise<void>;
  /** Starts sending in the background; failures are logged, never thrown to the caller. */
  sendInBackground(message: MailMessage): void;
  close(): void;
}

export function createMailer(options: { smtpUrl?: string | undefined; from: string; dataDir: string; log: FastifyBaseLogger }): Mailer {
  const { log } = options;
  const transport = options.smtpUrl ? nodemailer.createTransport(options.smtpUrl) : undefined;
  const outbox = join(options.dataDir, 'outbox.jsonl');

  async function send(message: MailMessage): Promise<void> {
    if (transport) {
      await transport.sendMail({ from: options.from, to: message.to, subject: message.subject, text: message.text, html: message.html });
      log.info({ mail: message.kind }, 'mail sent');
      return;
    }
    await mkdir(options.dataDir, { recursive: true });
    const entry = { at: new Date().toISOString(), from: options.from, to: message.to, subject: message.subject, text: message.text };
    await appendFile(outbox, `${JSON.stringify(entry)}\n`, { mode: 0o600 });
    // Development fallback only: the operator has configured no SMTP, so the link is shown here.
    log.warn(`SMTP_URL is not set: ${message.kind} mail for ${message.to} written to ${outbox}${message.link ? `; link: ${message.link}` : ''}`);
  }

  return {
    send,
    sendInBackground(message) {
      send(message).catch((error: unknown) => log.error({ err: error, mail: message.kind }, 'mail could not be sent'));
    },
    close() {
      transport?.close();
    },
  };
}
