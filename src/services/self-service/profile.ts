// The profile: what the user may change about themselves (names and picture; the address only by a
// confirmed e-mail change, the password only with the current one).
import { appendAuditEvent } from '../../../db/repositories/audit.js';
import { findPendingEmailChange } from '../../../db/repositories/email-changes.js';
import { updateUserRow } from '../../../db/repositories/users.js';
import type { UserRow } from '../../../db/tables.js';
import { validationError, type FieldProblem } from '../../errors.js';
import { webUrlProblem } from '../../oauth/redirect-uri.js';
import { currentUser, signedOut } from './common.js';
import { iso, type MeProfile, type ProfileUpdate, type RequestMeta, type SelfServiceDeps } from './types.js';

export function toProfile(row: UserRow, pendingEmail: string | null): MeProfile {
  return {
    id: row.id,
    email: row.email,
    emailVerified: row.email_verified,
    name: row.name,
    givenName: row.given_name,
    familyName: row.family_name,
    picture: row.picture,
    pendingEmail,
    createdAt: iso(row.created_at),
  };
}

const NAME_FIELDS = [
  ['name', 'name'],
  ['givenName', 'given_name'],
  ['familyName', 'family_name'],
] as const;

/** The columns to write, or the problems: names trimmed (empty clears), at most 200 characters. */
function profileChanges(input: ProfileUpdate) {
  const problems: FieldProblem[] = [];
  const changes: Partial<Record<'name' | 'given_name' | 'family_name' | 'picture', string | null>> = {};
  const fields: string[] = [];
  for (const [field, column] of NAME_FIELDS) {
    const value = input[field];
    if (value === undefined) continue;
    if (value !== null && typeof value !== 'string') {
      problems.push({ field, message: 'Use text or null' });
      continue;
    }
    const text = value?.trim() || null;
    if (text && [...text].length > 200) problems.push({ field, message: 'Use at most 200 characters' });
    else if (text && /\p{Cc}/u.test(text)) problems.push({ field, message: 'Use no control characters' });
    changes[column] = text;
    fields.push(field);
  }
  if (input.picture !== undefined) {
    const picture = typeof input.picture === 'string' ? input.picture.trim() || null : input.picture;
    const problem =
      picture === null
        ? undefined
        : typeof picture !== 'string'
          ? 'Use a URL or null'
          : /\s/.test(picture)
            ? 'must not contain white space'
            : webUrlProblem(picture);
    if (problem) problems.push({ field: 'picture', message: problem });
    changes.picture = picture;
    fields.push('picture');
  }
  return { problems, changes, fields };
}

export function createProfileMethods(deps: SelfServiceDeps) {
  const { db } = deps;

  async function profile(userId: string): Promise<MeProfile> {
    const row = await currentUser(db, userId);
    const pending = await findPendingEmailChange(db, userId);
    return toProfile(row, pending?.email ?? null);
  }

  async function updateProfile(userId: string, input: ProfileUpdate, meta: RequestMeta): Promise<MeProfile> {
    const { problems, changes, fields } = profileChanges(input);
    if (problems.length) throw validationError(problems);
    if (fields.length === 0) return profile(userId);
    await db.transaction().execute(async (trx) => {
      const row = await updateUserRow(trx, userId, changes);
      if (!row || row.disabled) throw signedOut();
      // The audit trail names the fields, never their values.
      await appendAuditEvent(trx, { type: 'user.updated', actor: 'self', userId, ip: meta.ip, detail: { fields } });
    });
    return profile(userId);
  }

  return { profile, updateProfile };
}
