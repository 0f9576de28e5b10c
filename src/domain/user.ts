// User accounts as the services hand them out. No type here carries a secret column: the password
// hash stays in db/ (UserRow); a User says only whether there is one. The services map rows to these
// types (src/services/rows.ts), so a plugin never holds a row.
import Type, { type Static } from 'typebox';
import type { FieldProblem } from '../errors.js';
import type { ClaimSource } from '../oauth/claims.js';
import { webUrlProblem } from '../oauth/redirect-uri.js';
import { isCommonPassword, PASSWORD_TOO_COMMON_MESSAGE } from '../passwords.js';
import { Nullable, Text } from './fields.js';

/** admin: may use the admin web (ADMIN_URL); user: everyone else. */
export type Role = 'user' | 'admin';

/** An account as the admin API, the admin web and the CLI show it. */
export interface User {
  id: string;
  email: string;
  name: string | null;
  givenName: string | null;
  familyName: string | null;
  picture: string | null;
  emailVerified: boolean;
  permissions: string[];
  disabled: boolean;
  role: Role;
  hasPassword: boolean;
  createdAt: string;
  updatedAt: string;
}

/**
 * The signed-in user as the hosted login and the protocol see it. The profile fields carry the names
 * of the claims they become (OpenID Connect Core §5.1), so it is a claims source as it stands.
 */
export interface AccountUser extends ClaimSource {
  disabled: boolean;
  role: Role;
}

export const RoleSchema = Type.Union([Type.Literal('user'), Type.Literal('admin')], { description: 'user or admin' });
const Email = Type.String({ minLength: 3, maxLength: 254, pattern: '^[^\\s@]+@[^\\s@]+$' });
const Password = Type.String({ minLength: 8, maxLength: 128 });
const Permissions = Type.Array(Type.String({ minLength: 1, maxLength: 200, pattern: '^\\S+$' }), {
  maxItems: 200,
  uniqueItems: true,
});

export const UserCreateSchema = Type.Object(
  {
    email: Email,
    password: Type.Optional(Password),
    name: Type.Optional(Nullable(Text(200))),
    givenName: Type.Optional(Nullable(Text(200))),
    familyName: Type.Optional(Nullable(Text(200))),
    picture: Type.Optional(Nullable(Text(2048))),
    emailVerified: Type.Optional(Type.Boolean()),
    permissions: Type.Optional(Permissions),
    disabled: Type.Optional(Type.Boolean()),
    role: Type.Optional(RoleSchema),
  },
  { additionalProperties: false },
);
export type UserCreate = Static<typeof UserCreateSchema>;

/** The same fields as create, each optional, at least one. */
export const UserUpdateSchema = Type.Partial(UserCreateSchema, { additionalProperties: false, minProperties: 1 });
export type UserUpdate = Static<typeof UserUpdateSchema>;

/** Rules beyond the shape, shared by create and update. */
export function userProblems(input: Partial<UserCreate>): FieldProblem[] {
  const problems: FieldProblem[] = [];
  // Operators are refused a common password too (admin API, admin web, CLI, seed): the account's owner
  // would sign in with it, and an attacker tries it first.
  if (input.password && isCommonPassword(input.password))
    problems.push({ field: 'password', message: PASSWORD_TOO_COMMON_MESSAGE });
  if (input.picture) {
    const problem = webUrlProblem(input.picture);
    if (problem) problems.push({ field: 'picture', message: problem });
  }
  return problems;
}
