// Who made a row (issue 31, items 4 and 7(e)): users.created_by and applications.created_by name the
// built-in writer that created it, 'seed' (SEED_FILE, idp seed) or 'demo' (the demo's own application),
// and are null for everything else (sign-up, the admin API, admin web and CLI). The seed takes over no
// row it did not create (unless its file says "replace": true), and the demo neither overwrites nor
// disables an application "demo" that an operator made.
//
// Rows from before this migration: marked only when the audit trail shows that writer created them
// (for users the 'user.created' event with actor 'seed' written by SEED_FILE starts; for applications the
// latest 'application.created' event of the client id, with actor 'seed' or 'demo'; the demo's
// application also when it still carries the demo's own description). Everything else stays null, the
// safe side: a row whose origin is not known is not the seed's or the demo's. Rows `idp seed` created
// (actor cli:NAME, like `idp users create`) or whose events were purged are therefore treated as made by
// someone else: the next seed stops and names them (adding "replace": true to the entry takes them over
// once, after which they are the seed's), and the demo stays off with a warning (delete or rename that
// application and restart). No row is changed in any other way.
import type { Kysely } from 'kysely';
import { sql } from 'kysely';

const DEMO_DESCRIPTION = 'The live demo relying party of this identity provider (DEMO=on), at /demo.';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('users').addColumn('created_by', 'text').execute();
  await db.schema.alterTable('applications').addColumn('created_by', 'text').execute();
  await sql`
    update users set created_by = 'seed'
    where exists (
      select 1 from audit_events e
      where e.type = 'user.created' and e.actor = 'seed' and e.user_id = users.id
    )`.execute(db);
  await sql`
    update applications set created_by = latest.actor
    from (
      select distinct on (client_id) client_id, actor
      from audit_events
      where type = 'application.created' and client_id is not null
      order by client_id, created_at desc
    ) latest
    where latest.client_id = applications.client_id and latest.actor in ('seed', 'demo')`.execute(db);
  await sql`
    update applications set created_by = 'demo'
    where client_id = 'demo' and created_by is null and description = ${DEMO_DESCRIPTION}`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('applications').dropColumn('created_by').execute();
  await db.schema.alterTable('users').dropColumn('created_by').execute();
}
