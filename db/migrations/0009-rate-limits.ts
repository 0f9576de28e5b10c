// Shared rate limits (src/rate-limit.ts): with DATABASE_URL every instance counts in this table through
// rate-limiter-flexible's RateLimiterPostgres (created here, not by the library at run time: the
// server's database user then needs no CREATE right, and the table is in the one migration set).
// The columns are the library's (key, points, expire in epoch milliseconds; null = never), except
// that the key is text, not varchar(255): a rule's prefix plus an e-mail address may be longer.
// Expired rows are deleted by the clean-up job (db/repositories/cleanup.ts), not by the library.
// On the embedded database the counts live in the process's memory; the table stays empty there.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`create table rate_limits (
    key text primary key,
    points integer not null default 0,
    expire bigint
  )`.execute(db);
  await sql`create index rate_limits_expire_idx on rate_limits (expire)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table rate_limits`.execute(db);
}
