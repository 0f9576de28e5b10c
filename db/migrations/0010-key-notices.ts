// Key rotation seen by every instance at once (issue 16, part 4): any change of signing_keys (a
// rotation, a retirement, the clean-up of a retired key; by a service, the CLI or psql) sends a notice
// on the channel of migration 0008, in the changing transaction, so every instance's key store
// reloads (src/services/invalidation.ts, KEYS_PAYLOAD) instead of waiting for its refresh interval.
// A statement trigger: one notice per statement, and PostgreSQL folds identical notices of a transaction.
// The channel and payload must stay equal to INVALIDATION_CHANNEL and KEYS_PAYLOAD there.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql
    .raw(
      `create function idp_notify_keys_changed() returns trigger language plpgsql as $$
begin
  perform pg_notify('idp_applications_changed', ':keys');
  return null;
end $$`,
    )
    .execute(db);
  await sql
    .raw(
      `create trigger signing_keys_changed_notify after insert or update or delete on signing_keys
       for each statement execute function idp_notify_keys_changed()`,
    )
    .execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger signing_keys_changed_notify on signing_keys`.execute(db);
  await sql`drop function idp_notify_keys_changed()`.execute(db);
}
