import t from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadStaticApplications, StaticApplicationsError } from '../../src/static-applications.js';

const dir = mkdtempSync(join(tmpdir(), 'idp-static-'));
const write = (name: string, content: string) => {
  const file = join(dir, name);
  writeFileSync(file, content);
  return file;
};

t.test('a valid file is loaded with defaults, sorted and read-only', async (t) => {
  const file = write(
    'ok.json',
    JSON.stringify({
      applications: [
        { clientId: 'zeta', clientName: 'Zeta', redirectUris: ['https://z.example/cb'] },
        {
          clientId: 'alpha',
          clientName: 'Alpha',
          redirectUris: ['http://localhost:3001/cb'],
          allowedWebOrigins: ['http://localhost:3001'],
          allowedScopes: ['openid', 'permissions'],
        },
      ],
    }),
  );
  const apps = loadStaticApplications(file);
  t.same(
    apps.all().map((a) => a.clientId),
    ['alpha', 'zeta'],
  );
  const zeta = apps.get('zeta')!;
  t.equal(zeta.source, 'static');
  t.same(zeta.allowedScopes, ['openid', 'profile', 'email', 'offline_access']);
  t.same(zeta.allowedWebOrigins, []);
  t.equal(zeta.enabled, true);
  t.ok(Object.isFrozen(zeta));
  t.equal(apps.get('missing'), undefined);
  t.equal(apps.source, file);
});

t.test('a bare array is accepted too', async (t) => {
  const file = write(
    'array.json',
    JSON.stringify([{ clientId: 'a', clientName: 'A', redirectUris: ['https://a.example/cb'] }]),
  );
  t.equal(loadStaticApplications(file).all().length, 1);
});

t.test('no file means no static applications', async (t) => {
  t.same(loadStaticApplications(undefined).all(), []);
});

t.test('every problem of a bad file is listed with its path', async (t) => {
  const file = write(
    'bad.json',
    JSON.stringify({
      applications: [
        { clientId: 'dup', clientName: 'A', redirectUris: ['http://evil.example/cb'] },
        {
          clientId: 'dup',
          clientName: 'B',
          redirectUris: ['https://b.example/cb'],
          allowedWebOrigins: ['https://b.example/'],
        },
        { clientName: 'no id', redirectUris: ['https://c.example/cb'], colour: 'red' },
      ],
    }),
  );
  const error = t.throws(() => loadStaticApplications(file)) as StaticApplicationsError;
  t.ok(error instanceof StaticApplicationsError);
  const fields = error.problems.map((p) => p.field);
  t.ok(fields.includes('applications[0].redirectUris.0'), 'http redirect');
  t.ok(fields.includes('applications[1].clientId'), 'duplicate id');
  t.ok(fields.includes('applications[1].allowedWebOrigins.0'), 'bad origin');
  t.ok(fields.includes('applications[2].clientId'), 'missing id');
  t.ok(fields.includes('applications[2].colour'), 'unknown field');
  t.match(error.message, new RegExp(`Invalid static applications file ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
});

t.test('the client id "demo" is reserved for the built-in demo (issue 31, 7(e))', async (t) => {
  const file = write(
    'demo.json',
    JSON.stringify([{ clientId: 'demo', clientName: 'Mine', redirectUris: ['https://mine.example/cb'] }]),
  );
  const error = t.throws(() => loadStaticApplications(file)) as StaticApplicationsError;
  t.same(error.problems, [
    {
      field: '[0].clientId',
      message: '"demo" is reserved for the built-in demo application (DEMO); choose another client id',
    },
  ]);
});

t.test('unreadable and malformed files fail clearly', async (t) => {
  t.throws(() => loadStaticApplications(join(dir, 'missing.json')), { message: /cannot be read: ENOENT/ });
  t.throws(() => loadStaticApplications(write('broken.json', '{ nope')), { message: /is not valid JSON/ });
  t.throws(() => loadStaticApplications(write('object.json', '{"apps": []}')), {
    message: /must be a JSON array of applications/,
  });
});
