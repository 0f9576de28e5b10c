// Second factors and passkeys (issue 34).
//  - sessions.amr: how the session's user authenticated (RFC 8176 values, e.g. ["pwd"], ["pwd","otp","mfa"],
//    ["hwk","user","mfa"]); a step-up adds to it in place. Existing sessions were password sign-ins.
//  - grants.amr: the session's amr when the grant was made (the ID tokens of its refreshes say the same);
//    null for grants made before this migration (their ID tokens carry no amr/acr).
//  - applications.require_mfa: the application accepts only sessions with a second factor.
//  - webauthn_credentials: passkeys (public keys only), with the signature counter and backup flags.
//  - totp_factors: one TOTP secret per user, encrypted with SECRET_KEY; confirmed_at null while enrolment waits
//    for its first code; last_step is the last time step accepted (a code is accepted once).
//  - recovery_codes: ten single-use codes per set, SHA-256 hashed.
//  - webauthn_challenges: a ceremony's challenge, used once, bound to the browser (browser_hash) and, for a
//    registration or a second factor, to the user.
//  - pending_sign_ins: a first factor passed, the second not yet: bound to the browser by a cookie (only its
//    hash stored), short-lived, with a count of wrong second-factor attempts. No session exists until it is done.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('sessions')
    .addColumn('amr', 'jsonb', (c) => c.notNull().defaultTo(sql`'["pwd"]'::jsonb`))
    .execute();
  await db.schema.alterTable('grants').addColumn('amr', 'jsonb').execute();
  await db.schema
    .alterTable('applications')
    .addColumn('require_mfa', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute();

  await db.schema
    .createTable('webauthn_credentials')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('credential_id', 'text', (c) => c.notNull().unique())
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('counter', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('transports', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('device_type', 'text', (c) => c.notNull())
    .addColumn('backed_up', 'boolean', (c) => c.notNull())
    .addColumn('aaguid', 'text')
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('last_used_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('webauthn_credentials_user_idx').on('webauthn_credentials').column('user_id').execute();

  await db.schema
    .createTable('totp_factors')
    .addColumn('user_id', 'text', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('confirmed_at', 'timestamptz')
    .addColumn('last_step', 'bigint')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('last_used_at', 'timestamptz')
    .execute();

  await db.schema
    .createTable('recovery_codes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('code_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('used_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('recovery_codes_user_idx').on('recovery_codes').column('user_id').execute();

  await db.schema
    .createTable('webauthn_challenges')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('challenge', 'text', (c) => c.notNull())
    .addColumn('purpose', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.references('users.id').onDelete('cascade'))
    .addColumn('browser_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('webauthn_challenges_expiry_idx')
    .on('webauthn_challenges')
    .column('expires_at')
    .execute();

  await db.schema
    .createTable('pending_sign_ins')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('amr', 'jsonb', (c) => c.notNull())
    .addColumn('request_id', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('ip', 'text')
    .addColumn('user_agent', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('pending_sign_ins_expiry_idx').on('pending_sign_ins').column('expires_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    'pending_sign_ins',
    'webauthn_challenges',
    'recovery_codes',
    'totp_factors',
    'webauthn_credentials',
  ]) {
    await db.schema.dropTable(table).execute();
  }
  await db.schema.alterTable('applications').dropColumn('require_mfa').execute();
  await db.schema.alterTable('grants').dropColumn('amr').execute();
  await db.schema.alterTable('sessions').dropColumn('amr').execute();
}
