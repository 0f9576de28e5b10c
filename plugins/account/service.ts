// What the account pages need of the self-service (issue 17): the methods of /tmp/coord's contract, declared
// here until src/services/self-service.ts lands; then this becomes a re-export of the real type.
import type { FastifyInstance } from 'fastify';

export interface RequestMeta {
  ip: string | null;
  userAgent: string | null;
}

export interface MeProfile {
  id: string;
  email: string;
  emailVerified: boolean;
  name: string | null;
  givenName: string | null;
  familyName: string | null;
  picture: string | null;
  pendingEmail: string | null;
  createdAt: string;
}

export interface ProfileChange {
  name?: string | null;
  givenName?: string | null;
  familyName?: string | null;
  picture?: string | null;
}

export interface ConnectedApplication {
  clientId: string;
  clientName: string;
  logoUrl: string | null;
  scopes: string[];
  grantedAt: string;
  lastUsedAt: string | null;
}

export interface LiveSession {
  id: string;
  userAgent: string | null;
  ip: string | null;
  createdAt: string;
  lastSeenAt: string;
  expiresAt: string;
  current: boolean;
}

export interface AccountSelfService {
  profile(userId: string): Promise<MeProfile>;
  updateProfile(userId: string, change: ProfileChange, meta: RequestMeta): Promise<MeProfile>;
  requestEmailChange(userId: string, input: { newEmail: string; password: string }, meta: RequestMeta): Promise<void>;
  changePassword(
    userId: string,
    currentSessionId: string,
    input: { currentPassword: string; newPassword: string },
    meta: RequestMeta,
  ): Promise<void>;
  listApplications(userId: string): Promise<ConnectedApplication[]>;
  revokeApplication(userId: string, clientId: string, meta: RequestMeta): Promise<void>;
  listSessions(userId: string, currentSessionId: string): Promise<LiveSession[]>;
  revokeSession(userId: string, sessionId: string, meta: RequestMeta): Promise<void>;
  exportData(userId: string): Promise<Record<string, unknown>>;
  deleteAccount(userId: string, input: { password: string }, meta: RequestMeta): Promise<void>;
}

/** app.services.me, read when a request needs it (the service plugin registers it before the pages). */
export function selfService(app: FastifyInstance): AccountSelfService {
  const me = (app.services as unknown as { me?: AccountSelfService }).me;
  if (!me) throw new Error('app.services.me is not registered');
  return me;
}
