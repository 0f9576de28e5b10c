// Single sign-on in one statement: what a signed-in browser's live session must also satisfy for a code to be
// issued at once, each rule stated ONCE in SQL: the conjuncts of the WHERE clause of the one-statement lookup
// (BY_SESSION in db/repositories/issuance.ts), beside the live session itself (liveSessionCtes, the very
// text findLiveSession runs). The TypeScript twin of each rule is the check of the same name in issueChecks
// (src/oauth/authorize-flow.ts), which nextStep() decides with; the two cannot share one table, since src/oauth
// imports no database layer and db/ nothing above it. The parity test (test/integration/sso-rules.test.ts) runs
// every rule through both halves on a real database over generated rows, and checks that the statement finds
// the session exactly when nextStep() answers 'issue'.
//
// The SQL is fixed text (the lookup runs as a named prepared statement): `s` is the live session, `u` its user;
// the placeholders are SQL expressions (with their casts) of the requesting client's id, the request's max_age
// in seconds (null: none), its scopes as a jsonb array, and whether it requires a second factor (a boolean: the
// level requiredAcr answers is urn:idp:mfa, src/oauth/authorize-flow.ts).

export interface SsoPlaceholders {
  client: string;
  maxAge: string;
  scopes: string;
  mfaRequired: string;
}

export type SsoRuleName = 'userActive' | 'emailVerified' | 'signInFresh' | 'levelMet' | 'consentCovers';

export interface SsoRule {
  name: SsoRuleName;
  description: string;
  sql: (p: SsoPlaceholders) => string;
}

export const ssoRules: readonly SsoRule[] = [
  {
    name: 'userActive',
    description: "the session's user is enabled",
    sql: () => 'u.disabled = false',
  },
  {
    name: 'emailVerified',
    description: "the user's e-mail address is verified",
    sql: () => 'u.email_verified',
  },
  {
    name: 'signInFresh',
    description: 'no max_age, or the sign-in is at most max_age seconds old',
    sql: ({ maxAge }) => `${maxAge} is null or s.auth_time >= now() - make_interval(secs => ${maxAge})`,
  },
  {
    name: 'levelMet',
    description: 'no second factor required, or the session was authenticated with one (its amr has mfa)',
    sql: ({ mfaRequired }) => `not ${mfaRequired} or s.amr @> '["mfa"]'::jsonb`,
  },
  {
    name: 'consentCovers',
    description: "the user's remembered consent to the client covers every requested scope",
    sql: ({ client, scopes }) =>
      `exists (select 1 from consents where user_id = s.user_id and client_id = ${client} and scopes @> ${scopes})`,
  },
];

/** Every rule's SQL, as one condition (the lookup's WHERE clause, besides the live session and the join). */
export function ssoRulesSql(p: SsoPlaceholders): string {
  return ssoRules.map((rule) => `(${rule.sql(p)})`).join('\n   and ');
}
