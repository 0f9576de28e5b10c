// The first admin: while no admin user exists, a one-time setup link (${ADMIN_URL}/setup?token=...; only
// the token's SHA-256 stored; ADMIN_SETUP_TTL; single use) is issued by each start of the server outside
// production, which prints it on the console (never in a log record: app/server.ts), and by
// `idp admin setup-link`, which prints it on the terminal. The link's form creates the first admin and
// signs them in. Once an admin exists, links are void.
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/create-db.js';
import {
  adminExists as adminExistsIn,
  consumeSetupTokens,
  insertSetupToken,
  isSetupTokenLive,
} from '../../db/repositories/admin-setup-tokens.js';
import { appendAuditEvent } from '../../db/repositories/audit.js';
import { insertUser } from '../../db/repositories/users.js';
import type { Config } from '../config.js';
import { AppError, type FieldProblem } from '../errors.js';
import { generateToken, hashToken } from '../oauth/tokens.js';
import { newPasswordProblem, type PasswordHasher } from '../passwords.js';
import { isUniqueViolation } from './db-errors.js';
import type { RequestMeta } from './accounts.js';
import { toAccountUser } from './rows.js';
import type { SessionService } from './sessions.js';

const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;
const EMAIL = /^[^\s@]{1,64}@[^\s@]+\.[^\s@]+$/;

export function createAdminSetupService(deps: {
  db: Db;
  config: Config;
  sessions: SessionService;
  passwords: Pick<PasswordHasher, 'hash'>;
}) {
  const { db, config, passwords } = deps;

  const adminExists = (trx: Db = db) => adminExistsIn(trx);
  const live = (token: string) => TOKEN_SHAPE.test(token) && isSetupTokenLive(db, hashToken(token));

  return {
    adminExists,

    /** A new setup link when there is no admin yet; undefined otherwise. */
    async issueLink(): Promise<string | undefined> {
      if (await adminExists()) return undefined;
      const token = generateToken();
      await insertSetupToken(db, hashToken(token), new Date(Date.now() + config.ttl.adminSetup * 1000));
      return `${config.adminUrl}/setup?token=${token}`;
    },

    /** The link still works (unused, unexpired, and no admin exists). */
    async isUsable(token: string): Promise<boolean> {
      return Boolean(await live(token)) && !(await adminExists());
    },

    /** Creates the first admin (verified, role admin) and a session for them, consuming the link. */
    async complete(token: string, input: { email: string; name: string; password: string }, meta: RequestMeta) {
      const problems: FieldProblem[] = [];
      const email = input.email.trim();
      if (!EMAIL.test(email) || email.length > 254)
        problems.push({ field: 'email', message: 'Enter a valid e-mail address' });
      const passwordProblem = newPasswordProblem(input.password);
      if (passwordProblem) problems.push({ field: 'password', message: passwordProblem.message });
      if (input.name.trim().length > 200) problems.push({ field: 'name', message: 'Use at most 200 characters' });
      if (problems.length) throw new AppError(400, 'VALIDATION_ERROR', problems[0]!.message, problems);
      if (!(await live(token)))
        throw new AppError(400, 'INVALID_TOKEN', 'This setup link is invalid, expired or was used already');
      const passwordHash = await passwords.hash(input.password);
      try {
        return await db.transaction().execute(async (trx) => {
          // This link and every other open one are consumed together (locked in one order: no deadlock).
          if (!(await consumeSetupTokens(trx, hashToken(token)))) {
            throw new AppError(400, 'INVALID_TOKEN', 'This setup link is invalid, expired or was used already');
          }
          if (await adminExists(trx))
            throw new AppError(409, 'ADMIN_EXISTS', 'An admin exists already; sign in instead');
          const user = await insertUser(trx, {
            id: randomUUID(),
            email,
            password_hash: passwordHash,
            name: input.name.trim() || null,
            given_name: null,
            family_name: null,
            picture: null,
            permissions: '[]',
            email_verified: true,
            role: 'admin',
          });
          await appendAuditEvent(trx, {
            type: 'user.created',
            actor: 'setup-link',
            ip: meta.ip,
            userId: user.id,
            detail: { role: 'admin' },
          });
          const { token: sessionToken } = await deps.sessions.create(user.id, meta, trx);
          await appendAuditEvent(trx, {
            type: 'user.signed_in',
            userId: user.id,
            ip: meta.ip,
            detail: { via: 'setup-link' },
          });
          return { user: toAccountUser(user), sessionToken };
        });
      } catch (error) {
        if (isUniqueViolation(error)) {
          throw new AppError(409, 'EMAIL_TAKEN', 'A user with this e-mail address exists already', [
            {
              field: 'email',
              message:
                'A user with this e-mail address exists already; promote it with idp users update <e-mail> --admin',
            },
          ]);
        }
        throw error;
      }
    },
  };
}

export type AdminSetupService = ReturnType<typeof createAdminSetupService>;
