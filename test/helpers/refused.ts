// The grant handlers' refusals in the unit tests: an OAuthError with this error code, description and status.
import type { Test } from 'tap';
import { OAuthError } from '../../src/oauth/errors.js';

export async function refused(
  t: Test,
  answer: Promise<unknown>,
  error: string,
  description: string,
  message: string,
  status = 400,
) {
  const thrown = await answer.then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(thrown instanceof OAuthError, `${message}: an OAuthError`);
  const e = thrown as OAuthError;
  t.same(
    { error: e.error, description: e.error_description, status: e.statusCode },
    { error, description, status },
    message,
  );
}
