// Admin API bodies for a user's second factors (issue 34): the list (never a secret) and what a reset removed.
// The response schemas describe the domain types exactly (checked at compile time below).
import Type, { type Static } from 'typebox';
import type { Factor } from '../src/domain/mfa.js';

const Nullable = Type.Union([Type.String(), Type.Null()]);

export const FactorSchema = Type.Object({
  id: Type.String({ description: "the passkey's id, 'totp' (authenticator app) or 'recovery-codes' (the set)" }),
  kind: Type.Union([Type.Literal('passkey'), Type.Literal('totp'), Type.Literal('recovery_code')]),
  name: Type.String({ description: "the passkey's name, or what the factor is" }),
  createdAt: Type.String(),
  lastUsedAt: Nullable,
  remaining: Type.Optional(Type.Integer({ description: 'recovery codes: how many are still unused' })),
  backedUp: Type.Optional(Type.Boolean({ description: 'passkeys: synced (backed up) rather than device-bound' })),
});

export const FactorListSchema = Type.Object({ items: Type.Array(FactorSchema) });

export const FactorParamsSchema = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 320 }),
  factorId: Type.String({
    minLength: 1,
    maxLength: 128,
    description: "a passkey's id, 'totp' or 'recovery-codes'",
  }),
});

export const FactorResetSchema = Type.Object({
  passkeys: Type.Integer({ description: 'passkeys removed' }),
  totp: Type.Integer({ description: 'authenticator apps removed (0 or 1)' }),
  recoveryCodes: Type.Integer({ description: 'recovery codes removed, used or not' }),
});

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const describesFactor: Same<Static<typeof FactorSchema>, Factor> = true;
void describesFactor;
