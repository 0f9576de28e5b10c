// Table types. Row types are derived with Selectable/Insertable/Updateable where they are used.
import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type Json<T> = ColumnType<T, string, string>;

export interface UsersTable {
  id: string;
  email: string;
  password_hash: string | null;
  name: string | null;
  given_name: string | null;
  family_name: string | null;
  picture: string | null;
  email_verified: Generated<boolean>;
  permissions: Json<string[]>;
  disabled: Generated<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ApplicationsTable {
  client_id: string;
  name: string;
  description: string | null;
  logo_url: string | null;
  redirect_uris: Json<string[]>;
  allowed_web_origins: Json<string[]>;
  post_verification_redirect_path: string | null;
  allowed_scopes: Json<string[]>;
  enabled: Generated<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface AuditEventsTable {
  id: Generated<string>;
  type: string;
  actor: string | null;
  user_id: string | null;
  client_id: string | null;
  ip: string | null;
  detail: Json<Record<string, unknown>>;
  created_at: Timestamp;
}

export interface Database {
  users: UsersTable;
  applications: ApplicationsTable;
  audit_events: AuditEventsTable;
}

export type UserRow = Selectable<UsersTable>;
export type NewUserRow = Insertable<UsersTable>;
export type UserUpdate = Updateable<UsersTable>;
export type ApplicationRow = Selectable<ApplicationsTable>;
export type NewApplicationRow = Insertable<ApplicationsTable>;
export type ApplicationUpdate = Updateable<ApplicationsTable>;
