// GET /api/admin/audit-events: filters, newest first, cursor paging that stays stable while events are appended.
import t from 'tap';
import { adminHeaders, buildTestApp } from '../helpers/app.js';

t.test('audit events: filters, order and cursor paging', async (t) => {
  const { app } = await buildTestApp(t);
  const created: string[] = [];
  for (let i = 0; i < 5; i++) {
    const res = await app.inject({
      method: 'POST',
      url: '/api/admin/applications',
      headers: adminHeaders,
      payload: { clientName: `App ${i}`, redirectUris: [`https://app${i}.example/cb`] },
    });
    t.equal(res.statusCode, 201);
    created.push(res.json().clientId);
  }
  const user = await app.inject({
    method: 'POST',
    url: '/api/admin/users',
    headers: adminHeaders,
    payload: { email: 'audit@example.com', password: 'correct horse battery' },
  });
  t.equal(user.statusCode, 201);
  const userId = user.json().id as string;
  await app.inject({
    method: 'PATCH',
    url: `/api/admin/applications/${created[0]}`,
    headers: adminHeaders,
    payload: { clientName: 'Renamed' },
  });

  const all = await app.inject({ method: 'GET', url: '/api/admin/audit-events', headers: adminHeaders });
  t.equal(all.statusCode, 200);
  const items = all.json().items as Array<{
    id: string;
    type: string;
    clientId: string | null;
    userId: string | null;
    createdAt: string;
    actor: string | null;
    detail: Record<string, unknown>;
  }>;
  t.equal(items[0]!.type, 'application.updated', 'newest first');
  t.same(
    items.map((e) => Number(e.id)),
    [...items.map((e) => Number(e.id))].sort((a, b) => b - a),
    'ids descend',
  );
  t.equal(items[0]!.actor, 'admin-api');
  t.match(items[0]!.createdAt, /^\d{4}-\d\d-\d\dT/);
  t.notOk(JSON.stringify(items).includes('correct horse'), 'no password in the trail');

  const byType = await app.inject({
    method: 'GET',
    url: '/api/admin/audit-events?type=application.created',
    headers: adminHeaders,
  });
  t.equal(byType.json().items.length, 5);
  t.ok(byType.json().items.every((e: { type: string }) => e.type === 'application.created'));
  const twoTypes = await app.inject({
    method: 'GET',
    url: '/api/admin/audit-events?type=application.updated,user.created',
    headers: adminHeaders,
  });
  t.same(
    twoTypes
      .json()
      .items.map((e: { type: string }) => e.type)
      .sort(),
    ['application.updated', 'user.created'],
  );
  const byClient = await app.inject({
    method: 'GET',
    url: `/api/admin/audit-events?clientId=${created[0]}`,
    headers: adminHeaders,
  });
  t.same(
    byClient.json().items.map((e: { type: string }) => e.type),
    ['application.updated', 'application.created'],
  );
  const byUser = await app.inject({
    method: 'GET',
    url: `/api/admin/audit-events?userId=${userId}`,
    headers: adminHeaders,
  });
  t.same(
    byUser.json().items.map((e: { type: string }) => e.type),
    ['user.created'],
  );
  const future = await app.inject({
    method: 'GET',
    url: `/api/admin/audit-events?from=${new Date(Date.now() + 60000).toISOString()}`,
    headers: adminHeaders,
  });
  t.same(future.json().items, []);
  const past = await app.inject({
    method: 'GET',
    url: `/api/admin/audit-events?to=${new Date(Date.now() + 60000).toISOString()}&type=application.created`,
    headers: adminHeaders,
  });
  t.equal(past.json().items.length, 5);

  // Pages of 2 walk every application.created event exactly once, even with new events appended meanwhile.
  const seen: string[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 5; page++) {
    const res = await app.inject({
      method: 'GET',
      url: `/api/admin/audit-events?type=application.created&limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      headers: adminHeaders,
    });
    t.equal(res.statusCode, 200);
    const body = res.json();
    seen.push(...body.items.map((e: { clientId: string }) => e.clientId));
    await app.inject({
      method: 'POST',
      url: '/api/admin/applications',
      headers: adminHeaders,
      payload: { clientName: `Late ${page}`, redirectUris: ['https://late.example/cb'] },
    });
    cursor = body.nextCursor;
    if (!cursor) break;
  }
  t.same(seen, [...created].reverse(), 'each event once, newest first');

  for (const query of [
    'cursor=bm90LWEtbnVtYmVy',
    'from=yesterday',
    'limit=0',
    'limit=201',
    'type=DROP%20TABLE',
    'unknown=1',
  ]) {
    const res = await app.inject({ method: 'GET', url: `/api/admin/audit-events?${query}`, headers: adminHeaders });
    t.equal(res.statusCode, 400, query);
    t.equal(res.json().error, 'VALIDATION_ERROR', query);
  }
  t.equal((await app.inject({ method: 'GET', url: '/api/admin/audit-events' })).statusCode, 401);
});
