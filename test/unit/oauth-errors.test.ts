// The catalog of public error descriptions (src/oauth/errors.ts): RFC 6749 §5.2 text, fixed per error and
// reason, never the request's input; the request's values go to the private detail.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import {
  allErrorDescriptions,
  ERROR_DESCRIPTIONS,
  OAUTH_PARAMETERS,
  OAuthError,
  parameterError,
} from '../../src/oauth/errors.js';

/** RFC 6749 §4.1.2.1 and §5.2: %x20-21 / %x23-5B / %x5D-7E (ASCII, no `"`, no `\`). */
const RFC6749_TEXT = /^[\x20\x21\x23-\x5b\x5d-\x7e]+$/;
const root = join(import.meta.dirname, '..', '..');

function sources(dir: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(dir, f));
}
const SOURCES = [...sources('src'), ...sources('plugins')].map((file) => ({
  file,
  text: readFileSync(join(root, file), 'utf8'),
}));

t.test('every description is RFC 6749 §5.2 text: ASCII, no quote, no backslash, short', async (t) => {
  const all = allErrorDescriptions();
  t.ok(all.length > 50, 'the catalog is expanded (parameters named)');
  for (const { error, description } of all) {
    t.match(description, RFC6749_TEXT, `${error}: ${description}`);
    t.notOk(description.includes('"') || description.includes('\\'), `${error}: no " or \\: ${description}`);
    t.ok(description.length <= 120, `${error}: at most 120 characters: ${description}`);
  }
});

t.test('no description is listed twice under one error code', async (t) => {
  for (const [error, descriptions] of Object.entries(ERROR_DESCRIPTIONS)) {
    t.equal(new Set(descriptions).size, descriptions.length, error);
  }
});

t.test('the descriptions name only parameters of the fixed list, never one the request made up', async (t) => {
  for (const name of OAUTH_PARAMETERS) {
    const error = parameterError(name, 'must not be repeated');
    t.equal(error.error, 'invalid_request');
    t.equal(error.error_description, `${name} must not be repeated`, name);
    t.equal(error.detail, `parameter ${name}`, `${name}: also in the detail`);
  }
  for (const made of ['x"y', 'é', 'foo', 'client_id ', `${'a'.repeat(5000)}`, '<script>alert(1)</script>']) {
    for (const [problem, text] of [
      ['must not be repeated', 'a parameter must not be repeated'],
      ['is required', 'a required parameter is missing'],
      ['is too long', 'a parameter is too long'],
    ] as const) {
      const error = parameterError(made, problem);
      t.equal(error.error_description, text, `${JSON.stringify(made.slice(0, 20))} ${problem}: not named`);
      t.ok(error.detail?.startsWith(`parameter ${made.slice(0, 100)}`), 'named in the detail');
      t.ok((error.detail ?? '').length <= 1000, 'the detail is bounded');
    }
  }
});

t.test('the detail stays private: not in the JSON body, not in the message of the public text', async (t) => {
  const error = new OAuthError('invalid_scope', 'scope exceeds the original grant', { detail: 'scope profile' });
  t.same(JSON.parse(JSON.stringify(error)), {
    error: 'invalid_scope',
    error_description: 'scope exceeds the original grant',
  });
  t.equal(error.message, 'scope exceeds the original grant');
  t.equal(error.detail, 'scope profile');
  t.equal(error.statusCode, 400);
});

t.test('a free-form description does not compile', async (t) => {
  const input: string = 'openid "profile"';
  // @ts-expect-error request input cannot become a description
  t.ok(new OAuthError('invalid_scope', `unknown scope: ${input}`));
  // @ts-expect-error nor can a text that is not in the catalog
  t.ok(new OAuthError('invalid_request', 'something went wrong'));
  // @ts-expect-error nor a text of the catalog under another error code
  t.ok(new OAuthError('invalid_client', 'the user is not signed in'));
  // @ts-expect-error an error code with no description cannot be thrown
  t.ok(new OAuthError('invalid_token', 'the access token is invalid'));
});

t.test('every throw site in src/ and plugins/ uses the catalog', async (t) => {
  const catalog = new Set(allErrorDescriptions().map((d) => `${d.error} ${d.description}`));
  // The constructors with a string literal as their description: that literal is a catalog entry of that code.
  const site = /new (?:OAuthError|AuthorizeRenderError)\(\s*'([a-z_]+)',\s*(?:'((?:[^'\\]|\\.)*)'|"([^"]*)"|([^,)]+))/g;
  let sites = 0;
  for (const { file, text } of SOURCES) {
    if (file.endsWith(join('oauth', 'errors.ts'))) continue;
    for (const m of text.matchAll(site)) {
      sites++;
      const [, error, single, double, other] = m;
      const literal = single ?? double;
      const where = `${file}: ${m[0].replace(/\s+/g, ' ')}`;
      if (literal !== undefined) {
        t.ok(catalog.has(`${error} ${literal}`), `${where}: a catalog entry of ${error}`);
      } else {
        // A variable: its type is OAuthErrorDescription (tsc checks it); never a template or a concatenation.
        t.notMatch(other ?? '', /[`+]/, `${where}: no text built from values`);
      }
    }
    t.notMatch(text, /error_description:\s*`/, `${file}: no error_description from a template`);
  }
  t.ok(sites >= 60, `the scan found the throw sites (${sites})`);
  // And the catalog holds nothing that no site uses (placeholders and the unnamed fallbacks excepted).
  const all = SOURCES.map((s) => s.text).join('\n');
  for (const [error, descriptions] of Object.entries(ERROR_DESCRIPTIONS)) {
    for (const description of descriptions as readonly string[]) {
      if (description.startsWith('{parameter}') || description.startsWith('a ')) continue;
      const uses = all.split(`'${description}'`).length + all.split(`"${description}"`).length - 2;
      t.ok(uses >= 2, `${error}: "${description}" is used (catalog + at least one site)`);
    }
  }
});
