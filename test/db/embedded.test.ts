// The file-backed embedded database: persistence across restarts and the one-process lock.
import t from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { openConfiguredDatabase } from '../../plugins/infra/db.js';
import { DataDirBusyError, acquireDataDirLock } from '../../db/data-dir-lock.js';
import { migrateToLatest } from '../../db/migrate.js';
import { insertApplication, findApplicationRow } from '../../db/repositories/applications.js';
import { testConfig } from '../helpers/app.js';

t.test('data in DATA_DIR survives a restart; a second opener is refused while the first holds it', async (t) => {
  const config = testConfig({ DATABASE_URL: '' });
  const first = await openConfiguredDatabase(config, 'server');
  await migrateToLatest(first.db);
  await insertApplication(first.db, {
    client_id: 'kept',
    name: 'Kept',
    description: null,
    logo_url: null,
    redirect_uris: '[]',
    allowed_web_origins: '[]',
    post_verification_redirect_path: null,
    allowed_scopes: '[]',
  });

  const busy = await openConfiguredDatabase(config, 'idp apps list').then(
    () => t.fail('second open must fail'),
    (error: unknown) => error,
  );
  t.ok(busy instanceof DataDirBusyError);
  t.match((busy as Error).message, /in use by another process \(pid \d+, server/);
  t.match((busy as Error).message, /admin API/);

  await first.close();
  const second = await openConfiguredDatabase(config, 'server');
  t.teardown(() => second.close());
  t.equal((await findApplicationRow(second.db, 'kept'))?.name, 'Kept');
});

t.test('a lock left by a dead process is taken over', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'idp-lock-'));
  writeFileSync(
    join(dir, 'idp.lock'),
    JSON.stringify({ pid: 2 ** 22 + 12345, purpose: 'server', since: 'then', host: hostname() }),
  );
  const release = acquireDataDirLock(dir, 'test');
  t.throws(() => acquireDataDirLock(dir, 'again'), DataDirBusyError);
  release();
  acquireDataDirLock(dir, 'after release')();
});
