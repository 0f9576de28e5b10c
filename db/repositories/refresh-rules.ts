// When a presented refresh token is current, each rule stated ONCE: its SQL is a conjunct of the WHERE clause
// of the one-statement rotation (ROTATE in db/repositories/issuance.ts: fast, nothing written when any fails),
// and its TypeScript reading of the locked row (lockRefreshToken) says which rule failed, for the refusal
// (src/oauth/grants/refresh-token.ts answers the first failed one in its order). The parity test
// (test/integration/refresh-rules.test.ts) runs every rule through both on a real database over generated
// rows, so a rule whose two halves disagree fails there.
//
// The SQL is fixed text (the rotation runs as a named prepared statement): `r` is the refresh_tokens row,
// `g` its grant, `u` its user; `client` is the placeholder of the requesting client's id.

/** The locked row's columns the rules read (lockRefreshToken's answer). */
export interface RefreshRuleRow {
  client_id: string;
  used_at: Date | string | null;
  revoked_at: Date | string | null;
  grant_revoked_at: Date | string | null;
  expires_at: Date | string;
  absolute_expires_at: Date | string;
  user_disabled: boolean;
}

export type RefreshRuleName = 'sameClient' | 'unrevoked' | 'unused' | 'unexpired' | 'userActive';

export interface RefreshRule {
  name: RefreshRuleName;
  description: string;
  /** The SQL condition; `client` is the placeholder (with its cast) of the requesting client's id. */
  sql: (client: string) => string;
  /** The same condition over the locked row, at `now` (ms since the epoch; the database's now() in the test). */
  holds: (row: RefreshRuleRow, request: { clientId: string; now: number }) => boolean;
}

const time = (value: Date | string) => new Date(value).getTime();

export const refreshRules: readonly RefreshRule[] = [
  {
    name: 'sameClient',
    description: 'issued to the requesting client',
    sql: (client) => `r.client_id = ${client}`,
    holds: (row, { clientId }) => row.client_id === clientId,
  },
  {
    name: 'unrevoked',
    description: 'neither the token nor its grant (family) was revoked',
    sql: () => 'r.revoked_at is null and g.revoked_at is null',
    holds: (row) => row.revoked_at === null && row.grant_revoked_at === null,
  },
  {
    name: 'unused',
    description: 'not presented before (a used token is a retry within the grace window, or a reuse)',
    sql: () => 'r.used_at is null',
    holds: (row) => row.used_at === null,
  },
  {
    name: 'unexpired',
    description: "within its sliding lifetime and its family's absolute lifetime",
    sql: () => 'r.expires_at > now() and r.absolute_expires_at > now()',
    holds: (row, { now }) => time(row.expires_at) > now && time(row.absolute_expires_at) > now,
  },
  {
    name: 'userActive',
    description: 'its user is enabled',
    sql: () => 'u.disabled = false',
    holds: (row) => row.user_disabled === false,
  },
];

/** Every rule's SQL, as one condition (the rotation's WHERE clause, besides the token and the joins). */
export function refreshRulesSql(client: string): string {
  return refreshRules.map((rule) => `(${rule.sql(client)})`).join('\n     and ');
}

/** Every rule over the locked row: true where it holds. */
export function refreshChecks(
  row: RefreshRuleRow,
  request: { clientId: string; now: number },
): Record<RefreshRuleName, boolean> {
  return Object.fromEntries(refreshRules.map((rule) => [rule.name, rule.holds(row, request)])) as Record<
    RefreshRuleName,
    boolean
  >;
}
