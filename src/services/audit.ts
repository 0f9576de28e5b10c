// Reading the audit trail (admin API and admin web): filters by type, user, application and time,
// newest first, with an opaque cursor (the last id of the page) so that paging is stable while new
// events are appended.
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/create-db.js';
import { pageAuditEvents } from '../../db/repositories/audit.js';
import { validationError, type FieldProblem } from '../errors.js';

/** Every event type this service records (the admin web's filter list). */
export const AUDIT_EVENT_TYPES = [
  'application.created',
  'application.updated',
  'application.deleted',
  'application.secret_created',
  'application.secret_rotated',
  'application.secret_revoked',
  'user.created',
  'user.updated',
  'user.deleted',
  'user.signed_up',
  'user.signed_in',
  'user.sign_in_failed',
  'user.email_verified',
  'user.address_taken_over',
  'user.stepped_up',
  'session.revoked',
  'authorization.granted',
  'consent.granted',
  'token.issued',
  'token.revoked',
  'refresh_token.rotated',
  'refresh_token.reuse_detected',
  'code.reuse_detected',
  'password_reset.requested',
  'password_reset.completed',
  'signing_key.rotated',
  'mfa.passkey_added',
  'mfa.passkey_removed',
  'mfa.passkey_renamed',
  'mfa.passkey_counter_regression',
  // An operator's removal of a user's second factors (issue 34).
  'mfa.factor_removed',
  'mfa.factors_reset',
  // The user's own authenticator app and recovery codes (issue 34).
  'mfa.totp_enabled',
  'mfa.totp_removed',
  'mfa.recovery_codes_generated',
  'mfa.recovery_code_used',
  // Upstream identity providers (issue 35).
  'upstream.linked',
  'upstream.unlinked',
  'upstream.provider_created',
  'upstream.provider_updated',
  'upstream.provider_deleted',
  // Resource servers (issue 36).
  'resource_server.created',
  'resource_server.updated',
  'resource_server.deleted',
  'registration_token.created',
  'registration_token.revoked',
];

/**
 * The pseudonym a deleted user's audit events keep (issue 31 item 7a; SECURITY.md): a fresh random id, made
 * once per deletion and recorded only in those events, so the trail of one account stays together while
 * nothing (no key, no table) leads from it back to the user id, the address or the `sub` applications knew.
 */
export function auditPseudonym(): string {
  return `deleted-user:${randomUUID()}`;
}

export interface AuditEvent {
  id: string;
  type: string;
  actor: string | null;
  userId: string | null;
  clientId: string | null;
  ip: string | null;
  detail: Record<string, unknown>;
  createdAt: string;
}

export interface AuditQuery {
  type?: string | undefined;
  userId?: string | undefined;
  clientId?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
  limit?: number | undefined;
  cursor?: string | undefined;
}

export function createAuditService(deps: { db: Db }) {
  return {
    async list(query: AuditQuery): Promise<{ items: AuditEvent[]; nextCursor?: string }> {
      const problems: FieldProblem[] = [];
      const time = (field: 'from' | 'to') => {
        const value = query[field];
        if (value === undefined) return undefined;
        const date = new Date(value);
        if (Number.isNaN(date.getTime()))
          problems.push({ field, message: 'must be a date-time such as 2026-11-22T10:00:00Z' });
        return date;
      };
      const from = time('from');
      const to = time('to');
      let beforeId: string | undefined;
      if (query.cursor !== undefined) {
        beforeId = Buffer.from(query.cursor, 'base64url').toString('utf8');
        if (!/^[1-9]\d{0,18}$/.test(beforeId))
          problems.push({ field: 'cursor', message: 'is not a cursor this API returned' });
      }
      if (problems.length) throw validationError(problems);
      const limit = query.limit ?? 50;
      // One type or a comma-separated list of types.
      const types = query.type
        ?.split(',')
        .map((t) => t.trim())
        .filter(Boolean);
      const rows = await pageAuditEvents(
        deps.db,
        { types, userId: query.userId, clientId: query.clientId, from, to, beforeId },
        limit + 1,
      );
      const items = rows.slice(0, limit).map((r) => ({
        id: String(r.id),
        type: r.type,
        actor: r.actor,
        userId: r.user_id,
        clientId: r.client_id,
        ip: r.ip,
        detail: (typeof r.detail === 'string' ? JSON.parse(r.detail) : r.detail) as Record<string, unknown>,
        createdAt: new Date(r.created_at as unknown as string).toISOString(),
      }));
      return rows.length > limit
        ? { items, nextCursor: Buffer.from(items[items.length - 1]!.id, 'utf8').toString('base64url') }
        : { items };
    },
  };
}

export type AuditService = ReturnType<typeof createAuditService>;
