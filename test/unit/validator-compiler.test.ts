// The routes' validator (src/validate.ts): a value that passes as it is stays as it is; one that does not is
// converted as @fastify/type-provider-typebox converts it (querystring, params, headers), then checked.
import t from 'tap';
import Type from 'typebox';
import { optionalBody, validatorCompiler } from '../../src/validate.js';

const compile = (schema: Parameters<typeof validatorCompiler>[0]['schema'], httpPart: string) =>
  validatorCompiler({ schema, httpPart, method: 'GET', url: '/' }) as (value: unknown) => {
    value?: unknown;
    error?: unknown;
  };

t.test('a value that already passes comes through unchanged', async (t) => {
  const params = Type.Record(Type.String(), Type.Union([Type.String(), Type.Array(Type.String())]));
  const query = { client_id: 'c', scope: ['openid', 'profile'] };
  t.equal(compile(params, 'querystring')(query).value, query, 'the same object');
});

t.test('a querystring value that does not pass is converted, then checked', async (t) => {
  const list = Type.Object({ limit: Type.Optional(Type.Integer()), types: Type.Optional(Type.Array(Type.String())) });
  const validate = compile(list, 'querystring');
  t.same(validate({ limit: '20', types: 'user.signed_in' }).value, { limit: 20, types: ['user.signed_in'] });
  t.ok(validate({ limit: 'many' }).error, 'not a number: an error');
});

t.test('a body is never converted', async (t) => {
  const body = Type.Object({ limit: Type.Integer() });
  const validate = compile(body, 'body');
  t.same(validate({ limit: 5 }).value, { limit: 5 });
  t.ok(validate({ limit: '5' }).error, 'JSON says what it means: "5" is not 5');
});

t.test('a body marked optionalBody may be left out; when sent, it is checked', async (t) => {
  const validate = compile(optionalBody(Type.Object({ force: Type.Optional(Type.Boolean()) })), 'body');
  t.same(validate(undefined), { value: undefined }, 'no body');
  t.same(validate(null), { value: undefined }, 'no body (null)');
  t.same(validate({ force: true }).value, { force: true });
  t.ok(validate('force').error, 'a body that is not an object is still an error');
  t.ok(compile(Type.Object({}), 'body')(undefined).error, 'without the mark, a body is required');
});
