// Schema errors turned into `{ field, message }` lines, the same for Fastify routes, the CLI and the
// static application file.
import type { FastifySchemaCompiler } from 'fastify';
import type { TSchema, Static } from 'typebox';
import { Compile } from 'typebox/compile';
import Value from 'typebox/value';
import { validationError, type FieldProblem } from './errors.js';

/**
 * Fastify's validator for every route: @fastify/type-provider-typebox's, except that a querystring, params or
 * headers value that already satisfies its schema is taken as it is. That one converts every such value first
 * (`Value.Convert`, "5" to 5 for an integer), which walks the schema each time: ~10 µs for authorize's
 * parameters, on every authorization request, for strings that are already strings. A value that does not
 * pass as it is gets the same conversion as before, then the check.
 */
export const validatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  const typeCheck = Compile(schema);
  // A body declared with optionalBody() may be left out altogether (no body, no content type).
  const optionalBody = httpPart === 'body' && (schema as { 'x-optional-body'?: boolean })['x-optional-body'] === true;
  return (value: unknown) => {
    if ((value === undefined || value === null) && optionalBody) return { value: undefined };
    if (typeCheck.Check(value)) return { value };
    if (httpPart === 'body') return { error: typeCheck.Errors(value) as never };
    const converted = Value.Convert(schema, value);
    if (typeCheck.Check(converted)) return { value: converted };
    return { error: typeCheck.Errors(converted) as never };
  };
};

/**
 * A route body that may be left out (a POST without a body): Fastify hands routes a copy of their schema that
 * loses TypeBox's own Optional mark, so this one is an enumerable OpenAPI extension the validator reads.
 */
export function optionalBody<T extends TSchema>(schema: T): T {
  return { ...schema, 'x-optional-body': true } as T;
}

export interface SchemaErrorLike {
  keyword: string;
  instancePath?: string;
  schemaPath?: string;
  params?: unknown;
  message?: string;
}

export function describeSchemaErrors(errors: Iterable<SchemaErrorLike>, prefix = ''): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const seen = new Set<string>();
  const add = (path: string, message: string) => {
    const field = prefix ? (path ? `${prefix}.${path}` : prefix) : path || '(body)';
    if (seen.has(field)) return; // a failed union reports every branch: one line per field is enough
    seen.add(field);
    problems.push({ field, message });
  };
  for (const error of errors) {
    const path = (error.instancePath ?? '').replace(/^\//, '').replaceAll('/', '.');
    const join = (name: string) => (path ? `${path}.${name}` : name);
    const params = (error.params ?? {}) as { requiredProperties?: string[]; additionalProperties?: string[] };
    if (error.keyword === 'required' && params.requiredProperties) {
      for (const name of params.requiredProperties) add(join(name), 'is required');
    } else if (error.keyword === 'additionalProperties' && params.additionalProperties) {
      for (const name of params.additionalProperties) add(join(name), 'is not a known field');
    } else if (error.keyword === 'boolean' && error.schemaPath?.endsWith('/additionalProperties')) {
      add(path, 'is not a known field');
    } else {
      add(path, error.message ?? 'is invalid');
    }
  }
  return problems;
}

export function schemaProblems(schema: TSchema, value: unknown, prefix = ''): FieldProblem[] {
  return describeSchemaErrors(Value.Errors(schema, value), prefix);
}

export function assertSchema<T extends TSchema>(schema: T, value: unknown): Static<T> {
  const problems = schemaProblems(schema, value);
  if (problems.length > 0) throw validationError(problems);
  return value as Static<T>;
}
