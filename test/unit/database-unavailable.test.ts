// Which errors mean "the database does not answer" (503 + Retry-After) rather than a bug (500).
import t from 'tap';
import { isDatabaseUnavailable } from '../../src/database-unavailable.js';

const coded = (code: string, message = 'x') => Object.assign(new Error(message), { code });

t.test('connectivity failures are recognized', async (t) => {
  for (const error of [
    coded('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'),
    coded('ECONNRESET'),
    new Error('Connection terminated unexpectedly'),
    new Error('Connection terminated due to connection timeout'),
    new Error('timeout exceeded when trying to connect'),
    new Error('Query read timeout'),
    coded('57P01', 'terminating connection due to administrator command'),
    coded('57P03', 'the database system is starting up'),
    coded('08006'),
    coded('57014', 'canceling statement due to statement timeout'),
    new AggregateError([coded('ECONNREFUSED')], ''),
    new Error('wrapped', { cause: coded('08001') }),
  ]) {
    t.ok(isDatabaseUnavailable(error), error.message || (error as { code?: string }).code || 'aggregate');
  }
});

t.test('everything else is not', async (t) => {
  for (const error of [
    new Error('boom'),
    coded('23505', 'duplicate key value violates unique constraint'),
    coded('42P01', 'relation does not exist'),
    Object.assign(coded('ECONNRESET', 'aborted'), { statusCode: 400 }),
    undefined,
    'ECONNREFUSED',
  ]) {
    t.notOk(isDatabaseUnavailable(error), String((error as Error | undefined)?.message ?? error));
  }
});
