// A user's TOTP factor (migration 0018): one row per user, its secret sealed by the service. Every write that
// decides something is one conditional statement, so two requests at once cannot both win.
import { sql } from 'kysely';
import type { Db } from '../create-db.js';

/**
 * A new, unconfirmed secret for the user: inserted, or replacing an unconfirmed one (an enrolment started
 * again). Answers false when the user has a confirmed one (it must be removed first): nothing is written.
 */
export async function putUnconfirmedTotp(db: Db, userId: string, sealedSecret: string): Promise<boolean> {
  const row = await db
    .insertInto('totp_factors')
    .values({ user_id: userId, secret: sealedSecret })
    .onConflict((oc) =>
      oc
        .column('user_id')
        .doUpdateSet({ secret: sealedSecret, created_at: sql`now()`, last_step: null, last_used_at: null })
        .where('totp_factors.confirmed_at', 'is', null),
    )
    .returning('user_id')
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Confirms the unconfirmed secret the code was checked against (the same sealed value: an enrolment started
 * again meanwhile is not confirmed by a code of the one it replaced), recording the code's step as used.
 */
export async function confirmTotp(db: Db, userId: string, sealedSecret: string, step: number): Promise<boolean> {
  const row = await db
    .updateTable('totp_factors')
    .set({ confirmed_at: sql`now()`, last_step: step })
    .where('user_id', '=', userId)
    .where('secret', '=', sealedSecret)
    .where('confirmed_at', 'is', null)
    .returning('user_id')
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Accepts a code of time step `step` once: only when no code of this step or a later one was accepted before
 * (`last_step < step`), in one statement (two requests with the same code: one row updated, one not).
 */
export async function acceptTotpStep(db: Db, userId: string, sealedSecret: string, step: number): Promise<boolean> {
  const row = await db
    .updateTable('totp_factors')
    .set({ last_step: step, last_used_at: sql`now()` })
    .where('user_id', '=', userId)
    .where('secret', '=', sealedSecret)
    .where('confirmed_at', 'is not', null)
    .where((eb) => eb.or([eb('last_step', 'is', null), eb('last_step', '<', String(step))]))
    .returning('user_id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Removes the user's TOTP factor; `confirmed`: whether it had been confirmed (undefined: there was none). */
export async function deleteTotp(db: Db, userId: string): Promise<{ confirmed: boolean } | undefined> {
  const row = await db
    .deleteFrom('totp_factors')
    .where('user_id', '=', userId)
    .returning('confirmed_at')
    .executeTakeFirst();
  return row && { confirmed: row.confirmed_at !== null };
}
