// Hosted-login sessions as the services hand them out: never the cookie value or its hash.
import type { AccountUser } from './user.js';

export interface Session {
  /** The ID token's sid (OpenID Connect Front-Channel Logout §3). */
  id: string;
  /** When the user authenticated in this session: the ID token's auth_time (OpenID Connect Core §2). */
  auth_time: Date;
  /** RFC 8176 methods this session's user authenticated with (src/domain/mfa.ts); its acr follows from them. */
  amr: string[];
}

/** Who presents a live session cookie: the session and its (enabled) user. */
export interface SessionContext {
  session: Session;
  user: AccountUser;
}
