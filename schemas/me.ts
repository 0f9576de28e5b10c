// /api/me/* (issue 17): the signed-in user's own account. Request bodies are closed
// (additionalProperties: false); responses strict, so nothing but these fields is ever serialised.
import Type from 'typebox';

const Iso = Type.String({ format: 'date-time' });
const NullableString = Type.Union([Type.String(), Type.Null()]);

export const MeProfileSchema = Type.Object(
  {
    id: Type.String(),
    email: Type.String(),
    emailVerified: Type.Boolean(),
    name: NullableString,
    givenName: NullableString,
    familyName: NullableString,
    picture: NullableString,
    pendingEmail: Type.Union([Type.String(), Type.Null()], {
      description: 'an e-mail change waiting for confirmation: the address its link was mailed to',
    }),
    createdAt: Iso,
  },
  { additionalProperties: false },
);

const NullableText = (max: number) => Type.Union([Type.String({ maxLength: max }), Type.Null()]);

export const ProfileUpdateSchema = Type.Object(
  {
    name: Type.Optional(NullableText(200)),
    givenName: Type.Optional(NullableText(200)),
    familyName: Type.Optional(NullableText(200)),
    picture: Type.Optional(NullableText(2048)),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    description: 'the fields to change; null (or an empty string) clears one; picture: https (http on loopback)',
  },
);

export const EmailChangeSchema = Type.Object(
  { newEmail: Type.String({ maxLength: 254 }), password: Type.String({ maxLength: 1024 }) },
  { additionalProperties: false },
);

export const PasswordChangeSchema = Type.Object(
  {
    currentPassword: Type.String({ maxLength: 1024 }),
    // Longer than the rule (128) so that the answer is PASSWORD_TOO_LONG, not a schema error.
    newPassword: Type.String({ maxLength: 4096 }),
  },
  { additionalProperties: false },
);

export const DeleteAccountSchema = Type.Object(
  {
    password: Type.Optional(
      Type.String({
        maxLength: 1024,
        description: 'the current password; an account without one (upstream sign-in) needs a recent sign-in instead',
      }),
    ),
  },
  { additionalProperties: false },
);

export const MeApplicationsSchema = Type.Object(
  {
    applications: Type.Array(
      Type.Object(
        {
          clientId: Type.String(),
          clientName: Type.String(),
          logoUrl: NullableString,
          scopes: Type.Array(Type.String()),
          grantedAt: Iso,
          lastUsedAt: Type.Union([Iso, Type.Null()]),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export const MeSessionsSchema = Type.Object(
  {
    sessions: Type.Array(
      Type.Object(
        {
          id: Type.String(),
          userAgent: NullableString,
          ip: NullableString,
          createdAt: Iso,
          lastSeenAt: Iso,
          expiresAt: Iso,
          current: Type.Boolean({ description: 'the session of this request' }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

/** GET /api/me/identities (issue 35): the identities of other providers linked to the account. */
export const MeIdentitiesSchema = Type.Object(
  {
    identities: Type.Array(
      Type.Object(
        {
          id: Type.String(),
          providerId: Type.String(),
          providerName: Type.String(),
          subject: Type.String({ description: "the upstream provider's identifier of the account" }),
          email: Type.Union([Type.String(), Type.Null()], { description: 'the address the upstream gave' }),
          createdAt: Iso,
          lastUsedAt: Type.Union([Iso, Type.Null()]),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

const Rows = Type.Array(Type.Object({}, { additionalProperties: true }));

export const MeExportSchema = Type.Object(
  {
    exportedAt: Iso,
    profile: Type.Object({}, { additionalProperties: true }),
    applications: Rows,
    grants: Rows,
    sessions: Rows,
    accessTokens: Rows,
    refreshTokens: Rows,
    emailVerifications: Rows,
    passwordResets: Rows,
    emailChanges: Rows,
    auditEvents: Rows,
    linkedIdentities: Rows,
  },
  {
    additionalProperties: false,
    description: 'everything stored about the user (no secret, no hash), as one JSON document (GDPR art. 15/20)',
  },
);

export const StatusSchema = Type.Object({ status: Type.Literal(true) }, { additionalProperties: false });
export const AcceptedSchema = Type.Object(
  { status: Type.Literal(true), message: Type.String() },
  { additionalProperties: false },
);
