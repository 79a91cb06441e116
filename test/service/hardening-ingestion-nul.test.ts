import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, sharedService, type Tenant, type TestService } from '../support/service.js';
import { drained, ev, ingest } from '../support/ingestion.js';

/**
 * Ingestion keeps records holding NUL (a Mixpanel SDK cannot fix a queued record): in an event
 * name, a distinct_id, a property key or value, a profile value or an alias, NUL becomes U+FFFD,
 * the same on DuckDB and ClickHouse, and the stored record is found by the analyses under that
 * name. Other control characters are data on both engines. docs/hardening.md "NUL".
 */
forEachBackend('hardening: NUL and control characters at ingestion', (backend) => {
  let t: TestService;
  let acme: Tenant;
  let pid: number;
  before(async () => {
    t = await sharedService(backend);
    acme = await createTenant(t, 'Nul');
    pid = acme.project.id;
  });

  const seg = (event: string, extra: Record<string, unknown> = {}) =>
    acme.owner.post('/api/query/segmentation', { projectId: pid, event, from: '2024-03-01', to: '2024-03-01', unit: 'day', type: 'unique', ...extra });
  const time = Date.UTC(2024, 2, 1, 12);

  it('event name, distinct_id, property key and value, profile and alias: NUL stored as U+FFFD, counted by the analyses', async () => {
    const c = ingest(t, acme.project.token);
    assert.deepEqual((await c.post('/track', [
      ev('sign\u0000up', '$device:d\u0000', { time, 'pl\u0000an': 'p\u0000ro' }),
      ev('sign\u0000up', 'user-1', { time: time + 1 }),
    ])).body, { status: 1, inserted: 2 });
    assert.equal((await c.post('/engage', { distinct_id: 'user-1', $set: { 'na\u0000me': 'A\u0000da' } })).status, 200);
    assert.equal((await c.post('/alias', { alias: '$device:d\u0000', distinct_id: 'user-1' })).status, 200);
    await drained(t);
    const rows = (await acme.owner.get(`/api/data/events?projectId=${pid}&event=${encodeURIComponent('sign\ufffdup')}`)).body;
    assert.equal(rows.total, 2);
    const anon = rows.events.find((e: any) => e.properties.$insert_id && e.properties['pl\ufffdan']);
    assert.ok(anon, JSON.stringify(rows.events));
    assert.equal(anon.event, 'sign\ufffdup');
    assert.equal(anon.properties['pl\ufffdan'], 'p\ufffdro');
    // The alias (an anonymous device id, so retroactive) merged both records into one person.
    const r = await seg('sign\ufffdup');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.series.map((s: any) => s.data.reduce((a: number, d: any) => a + d.value, 0)), [1]);
    const byPlan = await seg('sign\ufffdup', { filters: [{ key: 'pl\ufffdan', op: 'eq', value: 'p\ufffdro' }] });
    assert.equal(byPlan.status, 200, byPlan.text);
    const profile = (await acme.owner.get(`/api/data/users/user-1?projectId=${pid}`)).body;
    assert.equal(profile.properties?.['na\ufffdme'] ?? profile.profile?.['na\ufffdme'], 'A\ufffdda', JSON.stringify(profile));
    // Asking with the NUL itself is refused at the edge, naming the field.
    const withNul = await seg('sign\u0000up');
    assert.equal(withNul.status, 400);
    assert.match(withNul.body.error, /^event: must not contain NUL/);
  });

  it('other control characters (U+0001, U+001F, U+007F) are data: stored and queried as sent', async () => {
    const name = 'ctl\u0001\u001f\u007fname';
    assert.equal((await ingest(t, acme.project.token).post('/track', ev(name, 'c\u0007', { time, 'k\u0001': 'v\u007f' }))).status, 200);
    await drained(t);
    const rows = (await acme.owner.get(`/api/data/events?projectId=${pid}&event=${encodeURIComponent(name)}`)).body;
    assert.equal(rows.total, 1);
    assert.equal(rows.events[0].distinct_id, 'c\u0007');
    assert.equal(rows.events[0].properties['k\u0001'], 'v\u007f');
    const r = await seg(name, { filters: [{ key: 'k\u0001', op: 'eq', value: 'v\u007f' }] });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.series.map((s: any) => s.data.reduce((a: number, d: any) => a + d.value, 0)), [1]);
  });
});
