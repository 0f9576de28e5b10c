// Cache invalidation between instances (src/services/invalidation.ts): every change that may end a
// bearer token or change what UserInfo says about its user sends a notice on the channel that
// application changes already use, from the database itself, in the changing transaction (delivered
// if and only if it commits, whoever wrote it: a service, the CLI, an operator in psql). Row triggers
// with a WHEN clause, so that the hot writes (a session's last_seen_at, a new token) pay nothing;
// PostgreSQL sends one notice per transaction however many rows changed (identical payloads fold).
// The channel and payload must stay equal to INVALIDATION_CHANNEL and ACCESS_PAYLOAD there.
// Applications have no trigger: the application service notifies with the client id in its
// transaction (db/repositories/applications.ts), and a manual edit of an application row is meant to
// wait for the cache expiry (CORS_CACHE_TTL; the tests hold it to that).
import { type Kysely, sql } from 'kysely';

const CHANNEL = 'idp_applications_changed';
const PAYLOAD = ':access';

export async function up(db: Kysely<any>): Promise<void> {
  await sql
    .raw(
      `create function idp_notify_access_changed() returns trigger language plpgsql as $$
begin
  perform pg_notify('${CHANNEL}', '${PAYLOAD}');
  return null;
end $$`,
    )
    .execute(db);
  for (const table of ['access_tokens', 'grants', 'sessions']) {
    await sql
      .raw(
        `create trigger ${table}_revoked_notify after update of revoked_at on ${table} for each row
         when (old.revoked_at is distinct from new.revoked_at) execute function idp_notify_access_changed()`,
      )
      .execute(db);
  }
  const claims = 'email, email_verified, name, given_name, family_name, picture, permissions, disabled, password_hash';
  const pick = (row: string) =>
    claims
      .split(', ')
      .map((c) => `${row}.${c}`)
      .join(', ');
  await sql
    .raw(
      `create trigger users_changed_notify after update on users for each row
       when ((${pick('old')}) is distinct from (${pick('new')})) execute function idp_notify_access_changed()`,
    )
    .execute(db);
  await sql
    .raw(
      `create trigger users_deleted_notify after delete on users for each row
       execute function idp_notify_access_changed()`,
    )
    .execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger users_deleted_notify on users`.execute(db);
  await sql`drop trigger users_changed_notify on users`.execute(db);
  for (const table of ['access_tokens', 'grants', 'sessions']) {
    await sql.raw(`drop trigger ${table}_revoked_notify on ${table}`).execute(db);
  }
  await sql`drop function idp_notify_access_changed()`.execute(db);
}
