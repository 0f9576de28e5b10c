// A PostgreSQL adapter for node-oidc-provider, in the style of its example adapters: one table of JSON payloads
// keyed by (id, type), with the grant id, uid and user code as indexed columns for the lookups the provider makes
// (revokeByGrantId, findByUid, findByUserCode), an expiry checked on read and a consumed mark. One pg.Pool.
import pg from 'pg';

let pool;

const DDL = `
create table if not exists oidc_payloads (
  id text not null,
  type text not null,
  payload jsonb not null,
  grant_id text,
  user_code text,
  uid text,
  expires_at timestamptz,
  consumed_at integer,
  primary key (id, type)
);
create index if not exists oidc_payloads_grant_id on oidc_payloads (grant_id);
create index if not exists oidc_payloads_uid on oidc_payloads (uid);
create index if not exists oidc_payloads_user_code on oidc_payloads (user_code);`;

const live = '(expires_at is null or expires_at > now())';
const epoch = () => Math.floor(Date.now() / 1000);

function rowPayload(rows) {
  const row = rows[0];
  if (!row) return undefined;
  return row.consumed_at ? { ...row.payload, consumed: row.consumed_at } : row.payload;
}

export class PgAdapter {
  static async connect(connectionString, max) {
    pool = new pg.Pool({ connectionString, max });
    await pool.query(DDL);
  }

  static end() {
    return pool?.end();
  }

  constructor(type) {
    this.type = type;
  }

  async upsert(id, payload, expiresIn) {
    const expiresAt = expiresIn ? new Date(Date.now() + expiresIn * 1000) : null;
    await pool.query(
      'insert into oidc_payloads (id, type, payload, grant_id, user_code, uid, expires_at) ' +
        'values ($1, $2, $3, $4, $5, $6, $7) on conflict (id, type) do update set payload = excluded.payload, ' +
        'grant_id = excluded.grant_id, user_code = excluded.user_code, uid = excluded.uid, ' +
        'expires_at = excluded.expires_at',
      [id, this.type, payload, payload.grantId ?? null, payload.userCode ?? null, payload.uid ?? null, expiresAt],
    );
  }

  async find(id) {
    const { rows } = await pool.query(
      `select payload, consumed_at from oidc_payloads where id = $1 and type = $2 and ${live}`,
      [id, this.type],
    );
    return rowPayload(rows);
  }

  async findByUid(uid) {
    const { rows } = await pool.query(
      `select payload, consumed_at from oidc_payloads where uid = $1 and type = $2 and ${live}`,
      [uid, this.type],
    );
    return rowPayload(rows);
  }

  async findByUserCode(userCode) {
    const { rows } = await pool.query(
      `select payload, consumed_at from oidc_payloads where user_code = $1 and type = $2 and ${live}`,
      [userCode, this.type],
    );
    return rowPayload(rows);
  }

  async consume(id) {
    await pool.query('update oidc_payloads set consumed_at = $3 where id = $1 and type = $2', [id, this.type, epoch()]);
  }

  async destroy(id) {
    await pool.query('delete from oidc_payloads where id = $1 and type = $2', [id, this.type]);
  }

  async revokeByGrantId(grantId) {
    await pool.query('delete from oidc_payloads where grant_id = $1', [grantId]);
  }
}
