// The account self-service's types (issue 17; /tmp contract between the /api/me routes and the
// /account pages): what the signed-in user sees of their own account.
import type { Db } from '../../../db/create-db.js';
import type { Config } from '../../config.js';
import type { Mailer } from '../../mail/mailer.js';
import type { PasswordHasher } from '../../passwords.js';
import type { ApplicationService } from '../applications.js';
import type { EmailChangeService } from './email-change.js';

export type { RequestMeta } from '../accounts.js';

export interface MeProfile {
  id: string;
  email: string;
  emailVerified: boolean;
  name: string | null;
  givenName: string | null;
  familyName: string | null;
  picture: string | null;
  /** An e-mail change waiting for confirmation (the address its link was mailed to). */
  pendingEmail: string | null;
  createdAt: string;
}

export interface ProfileUpdate {
  name?: string | null | undefined;
  givenName?: string | null | undefined;
  familyName?: string | null | undefined;
  picture?: string | null | undefined;
}

export interface MeApplication {
  clientId: string;
  clientName: string;
  logoUrl: string | null;
  scopes: string[];
  grantedAt: string;
  lastUsedAt: string | null;
}

export interface MeSession {
  id: string;
  userAgent: string | null;
  ip: string | null;
  createdAt: string;
  lastSeenAt: string;
  expiresAt: string;
  current: boolean;
}

/** The rate limits the service counts against (plugins/infra/rate-limit.ts provides them). */
export interface SelfServiceGuards {
  /**
   * Runs a password check under the account's sign-in limits: `run` throws INVALID_PASSWORD on a wrong
   * password, which counts as a failed sign-in; throws a 429 AppError (retryAfterSeconds) meanwhile.
   */
  confirmPassword<T>(email: string, run: () => Promise<T>): Promise<T>;
  /**
   * Counts one e-mail change request of the account (it sends mail to any address), per account, IP and
   * new address; 429 over a limit.
   */
  countEmailChange(userId: string, ip: string | null, newEmail: string): Promise<void>;
  /**
   * Forgets the rate-limit counts about a deleted account (its sign-in failures, its id); the limits on
   * mail to its address stay.
   */
  forgetAccount(user: { id: string; email: string }): Promise<void>;
}

export interface SelfServiceDeps {
  db: Db;
  config: Config;
  mailer: Mailer;
  applications: Pick<ApplicationService, 'find'>;
  emailChanges: EmailChangeService;
  guards: SelfServiceGuards;
  /** Verifies the current password and hashes a new one, at the configured cost. */
  passwords: PasswordHasher;
}

export const iso = (d: Date | string) => new Date(d).toISOString();
export const isoOrNull = (d: Date | string | null) => (d ? iso(d) : null);
