// Outgoing mail through nodemailer to SMTP_URL; without SMTP (development), mails are appended to
// DATA_DIR/outbox.jsonl and their links logged, so a new user can still follow them (with DATA_DIR=:memory:
// nothing is written: the mail is only logged).
// Sending never blocks or changes an HTTP response: callers hand the message over and return. A failed
// send is retried after each of MAIL_RETRY_DELAYS; the counts and the last failure are in /readyz.
import { appendFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import type { FastifyBaseLogger } from 'fastify';
import { IN_MEMORY } from '../config.js';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html: string;
  /** The link the mail carries, logged in development outbox mode only. */
  link?: string;
  kind: string;
}

export interface MailStats {
  transport: 'smtp' | 'outbox';
  sent: number;
  /** Sends that gave up after the last retry. */
  failed: number;
  /** Retries made so far (each failed attempt that was tried again). */
  retried: number;
  /** Messages handed over and not yet sent or given up. */
  pending: number;
  lastFailure: { at: string; kind: string; error: string } | null;
}

export interface Mailer {
  /** One attempt, errors thrown to the caller. */
  send(message: MailMessage): Promise<void>;
  /** Sends in the background with retries; failures are logged and counted, never thrown. */
  sendInBackground(message: MailMessage): void;
  stats(): MailStats;
  /** Waits for background sends (with their retries) to settle, at most timeoutMs. */
  drain(timeoutMs?: number): Promise<void>;
  /** Gives pending retries one last attempt now, waits for them (bounded), closes the transport. */
  close(): Promise<void>;
}

export interface MailerOptions {
  smtpUrl?: string | undefined;
  from: string;
  dataDir: string;
  log: FastifyBaseLogger;
  /** Waits before each retry; [] sends once. */
  retryDelaysMs?: number[];
  /** Outbox mode logs each mail's link (development); never in production, where links are secrets. */
  logLinks?: boolean;
}

/** What of an SMTP error may be logged and shown: the code and the server's reply, never credentials. */
function describe(error: unknown): string {
  const e = error as { code?: string; responseCode?: number; response?: string; message?: string };
  const parts = [e.code, e.responseCode, e.response ?? e.message].filter((p) => p !== undefined && p !== '');
  return parts
    .join(' ')
    .replace(/\/\/[^@\s]*@/g, '//***@')
    .slice(0, 300);
}

export function createMailer(options: MailerOptions): Mailer {
  const { log } = options;
  const retryDelays = options.retryDelaysMs ?? [5000, 30000, 120000];
  // Bounded waits, so a silent SMTP server cannot hold a send (and its retries) forever.
  const transport = options.smtpUrl
    ? nodemailer.createTransport({
        url: options.smtpUrl,
        connectionTimeout: 10_000,
        greetingTimeout: 10_000,
        socketTimeout: 30_000,
      } as never)
    : undefined;
  const outbox = join(options.dataDir, 'outbox.jsonl');
  const stats: MailStats = {
    transport: transport ? 'smtp' : 'outbox',
    sent: 0,
    failed: 0,
    retried: 0,
    pending: 0,
    lastFailure: null,
  };
  const inFlight = new Set<Promise<void>>();
  const timers = new Set<{ timer: NodeJS.Timeout; wake: () => void }>();
  let closed = false;

  async function send(message: MailMessage): Promise<void> {
    if (transport) {
      await transport.sendMail({
        from: options.from,
        to: message.to,
        subject: message.subject,
        text: message.text,
        html: message.html,
      });
      log.info({ mail: message.kind }, 'mail sent');
      return;
    }
    const link = message.link && options.logLinks !== false ? `; link: ${message.link}` : '';
    if (options.dataDir === IN_MEMORY) {
      log.warn(`SMTP_URL is not set: ${message.kind} mail for ${message.to} not kept (DATA_DIR=:memory:)${link}`);
      return;
    }
    await mkdir(options.dataDir, { recursive: true });
    const entry = {
      at: new Date().toISOString(),
      from: options.from,
      to: message.to,
      subject: message.subject,
      text: message.text,
    };
    await appendFile(outbox, `${JSON.stringify(entry)}\n`, { mode: 0o600 });
    // Development fallback only: the operator has configured no SMTP, so the link is shown here.
    log.warn(`SMTP_URL is not set: ${message.kind} mail for ${message.to} written to ${outbox}${link}`);
  }

  const wait = (ms: number) =>
    new Promise<void>((resolve) => {
      const entry = {
        timer: setTimeout(() => {
          timers.delete(entry);
          resolve();
        }, ms),
        wake: resolve,
      };
      timers.add(entry);
    });

  async function sendWithRetries(message: MailMessage): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await send(message);
        stats.sent += 1;
        return;
      } catch (error) {
        const reason = describe(error);
        stats.lastFailure = { at: new Date().toISOString(), kind: message.kind, error: reason };
        const delay = retryDelays[attempt];
        if (delay === undefined || closed) {
          stats.failed += 1;
          log.error({ mail: message.kind, attempts: attempt + 1, reason }, 'mail could not be sent; giving up');
          return;
        }
        stats.retried += 1;
        log.warn(
          { mail: message.kind, attempt: attempt + 1, retryInMs: delay, reason },
          'mail could not be sent; will retry',
        );
        await wait(delay);
      }
    }
  }

  return {
    send,
    sendInBackground(message) {
      stats.pending += 1;
      const p = sendWithRetries(message).finally(() => {
        stats.pending -= 1;
        inFlight.delete(p);
      });
      inFlight.add(p);
    },
    stats: () => ({ ...stats, lastFailure: stats.lastFailure && { ...stats.lastFailure } }),
    drain,
    async close() {
      closed = true;
      for (const t of timers) {
        clearTimeout(t.timer);
        t.wake();
      }
      timers.clear();
      await drain(5000);
      transport?.close();
    },
  };

  async function drain(timeoutMs = 5000) {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...inFlight]),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
  }
}

/**
 * Mail kinds the per-recipient cap never holds back: notices, to the account's own address, of a change
 * that someone holding the account (its password or a session) has just made. A flood of other mail must
 * not be able to hide them, and nobody can trigger them for an address without such access.
 */
export const UNCAPPED_MAIL_KINDS: ReadonlySet<string> = new Set([
  'password-changed',
  'email-changed',
  'factor-changed',
  'recovery-code-used',
  // Issue 35: an upstream identity linked or unlinked (by a session of the account, its owner's proof, or an
  // operator).
  'upstream-linked',
  'upstream-unlinked',
]);

/**
 * The per-recipient cap (rate-limit rule MAIL_RECIPIENT, issue 31 item 5) in front of a mailer: every mail
 * handed to sendInBackground, except the UNCAPPED_MAIL_KINDS, first spends one point of its recipient's
 * budget, keyed by the normalised address (never by an account, so deleting and re-creating an account
 * renews nothing); a mail past the budget is dropped and logged (kind only, no address). The check runs in
 * the background like the send itself, so an endpoint's answer and timing never tell whether the mail went
 * out (request-password-reset hides whether an account exists). `allow` answers whether one more mail may
 * go to the address (and counts it); it never throws for a refusal. Any mail path gets the cap by sending
 * through this mailer (app.services.mailer).
 */
export function withRecipientCap(
  mailer: Mailer,
  allow: (to: string) => Promise<boolean>,
  log: Pick<FastifyBaseLogger, 'warn' | 'error'>,
): Mailer {
  const checks = new Set<Promise<void>>();
  const settleChecks = async (timeoutMs: number) => {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...checks]),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
  };
  return {
    send: (message) => mailer.send(message),
    sendInBackground(message) {
      if (UNCAPPED_MAIL_KINDS.has(message.kind)) {
        mailer.sendInBackground(message);
        return;
      }
      const check = allow(message.to).then(
        (allowed) => {
          if (allowed) mailer.sendInBackground(message);
          else
            log.warn(
              { mail: message.kind, rateLimit: 'MAIL_RECIPIENT' },
              'mail not sent: its recipient has had too many account mails lately',
            );
        },
        // Fails closed: a mail that cannot be counted is not sent (the limiters fall back to memory on
        // a store failure, so this is a programming error, not an outage).
        (error: unknown) => log.error({ err: error, mail: message.kind }, 'mail not sent: the recipient cap failed'),
      );
      const tracked = check.finally(() => checks.delete(tracked));
      checks.add(tracked);
    },
    stats: () => mailer.stats(),
    async drain(timeoutMs = 5000) {
      await settleChecks(timeoutMs);
      await mailer.drain(timeoutMs);
    },
    async close() {
      await settleChecks(5000);
      await mailer.close();
    },
  };
}
