import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { embeddedIn } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { useEventStore } from '../support/event-store.js';
import { drained, ev, ingest } from '../support/ingestion.js';
import { waitFor } from '../support/processes.js';
import { openEventStore, sqlString, type EventStore, type StoredEvent } from '../../apps/server/src/ports/events/index.js';
import { MAX_RUNTIME_MATERIALIZED } from '../../apps/server/src/ports/events/schema.js';
import { eventPropLists } from '../../apps/server/src/ingestion/records.js';
import { experimentSql } from '../../apps/server/src/experiments/sql.js';

/**
 * An experiment's `sum` metric reads its property for every event of the metric: on the embedded
 * store (DuckDB) the property is materialised in the background when such an experiment is
 * created or changed (query/property-materializer.ts, EventStore.materialize). The results are the
 * same numbers before and after, events written afterwards fill the column, the key is kept
 * across a restart, and odd keys are safe. ClickHouse is not altered (MATERIALIZED_PROPERTIES
 * stays the way there), so this suite runs on the embedded store only.
 */

const H = 3_600_000;
const T0 = Date.UTC(2024, 2, 4);
const KEY = 'order value';

describe('experiments: a sum metric\'s property materialised at runtime [embedded]', () => {
  let dir: string;
  let t: TestService | undefined;
  let tenant: Tenant;
  let pid: number;

  // Units u0..u9, even ones in control; unit i buys twice, for i and 10 * i (as strings, as sent).
  const units = Array.from({ length: 10 }, (_, i) => ({ id: `u${i}`, variant: i % 2 === 0 ? 'control' : 'treatment', amounts: [i, 10 * i] }));
  const handSum = (variant: string) => units.filter((u) => u.variant === variant).reduce((s, u) => s + u.amounts[0] + u.amounts[1], 0);
  const events = units.flatMap((u, i) => [
    ev('$experiment_started', u.id, { time: T0 + i * 60_000, 'Experiment name': 'checkout-exp', 'Variant name': u.variant }),
    ...u.amounts.map((a, j) => ev('purchase', u.id, { time: T0 + H + i * 60_000 + j, [KEY]: a })),
  ]);

  before(async function () {
    this.timeout(120_000);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'experiments-materialize-'));
    t = await startTestService(embeddedIn(dir));
    tenant = await createTenant(t, 'materialize');
    pid = tenant.project.id;
    const flag = await tenant.owner.post('/api/flags', {
      projectId: pid, key: 'checkout', name: 'checkout', variants: [{ key: 'control', rolloutPct: 50 }, { key: 'treatment', rolloutPct: 50 }], rules: [{ rolloutPct: 100 }],
    });
    assert.equal(flag.status, 201, flag.text);
    assert.equal((await ingest(t, tenant.project.token).post('/track', events)).status, 200);
    await drained(t);
  });
  after(async () => {
    await t?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('materialises the property in the background; the results are the same numbers before and after, new events count, and a restart keeps it', async function () {
    this.timeout(120_000);
    const svc = t!;
    const store = svc.svc.deps.events;
    assert.equal(store.materialized.has(KEY), false);
    // The materialisation waits for this gate, so the results below are read from the lists for sure.
    let open!: () => void;
    const gate = new Promise<void>((r) => { open = r; });
    const materialize = store.materialize!.bind(store);
    store.materialize = (key, share) => gate.then(() => materialize(key, share));

    const spec = { projectId: pid, key: 'checkout-exp', flagKey: 'checkout', startAt: T0, endAt: T0 + 48 * H, metrics: [
      { id: 'revenue', kind: 'sum', event: 'purchase', property: KEY }, { id: 'purchases', kind: 'count', event: 'purchase' },
    ] };
    const created = await tenant.owner.post('/api/experiments', spec);
    assert.equal(created.status, 201, created.text);
    const id = created.body.id as number;
    const results = async () => {
      const r = await tenant.owner.get(`/api/experiments/${id}/results`);
      assert.equal(r.status, 200, r.text);
      return r.body;
    };
    const sums = (body: { metrics: Array<{ id: string; variants: Array<{ key: string; total: number }> }> }) =>
      Object.fromEntries(body.metrics.find((m) => m.id === 'revenue')!.variants.map((v) => [v.key, v.total]));

    const before = await results();
    assert.equal(store.materialized.has(KEY), false, 'read from the lists: the materialisation is still held');
    assert.deepEqual(sums(before), { control: handSum('control'), treatment: handSum('treatment') });

    open();
    await waitFor('the property to be materialised', async () => store.materialized.has(KEY), 20_000, 25);
    delete (store as { materialize?: unknown }).materialize; // the wrapper answers the store's own method again
    const column = store.materialized.get(KEY)!;
    // The stored events carry it, and the experiment's statement reads the column, not the lists.
    const filled = await store.query<{ n: number }>(`SELECT count(*) AS n FROM events WHERE ${column} IS NOT NULL`);
    assert.equal(Number(filled[0].n), 20);
    const q = await svc.svc.services.analyses.contexts.forProject(pid);
    const sql = experimentSql(q, { experimentKey: spec.key, flagKey: spec.flagKey, variants: ['control', 'treatment'], startAt: spec.startAt, endAt: spec.endAt, metrics: created.body.metrics });
    assert.ok(sql.includes(column), sql);
    assert.ok(!sql.includes(sqlString('duckdb', KEY)), sql);

    // An event that changes no number makes the cached answer stale, so the results are computed again, from the column.
    const sender = ingest(svc, tenant.project.token);
    assert.equal((await sender.post('/track', [ev('page', 'u0', { time: T0 + 2 * H })])).status, 200);
    await drained(svc);
    const after = await results();
    assert.equal(after.cached_at, undefined);
    assert.deepEqual(after.metrics, before.metrics);
    assert.deepEqual(after.exposures, before.exposures);

    // Purchases written now fill the column at write time and count in the sum.
    assert.equal((await sender.post('/track', [ev('purchase', 'u1', { time: T0 + 3 * H, [KEY]: 1000 }), ev('purchase', 'u2', { time: T0 + 3 * H, [KEY]: 'n/a' })])).status, 200);
    await drained(svc);
    const later = await results();
    assert.deepEqual(sums(later), { control: handSum('control'), treatment: handSum('treatment') + 1000 });
    const written = await store.query<{ v: string | null }>(`SELECT ${column} AS v FROM events WHERE time = ${T0 + 3 * H} ORDER BY distinct_id`);
    assert.deepEqual(written.map((r) => r.v), ['1000', 'n/a']);

    // Asked again (an update keeping the sum metric), nothing more is materialised.
    const updated = await tenant.owner.put(`/api/experiments/${id}`, { name: 'Checkout' });
    assert.equal(updated.status, 200, updated.text);
    assert.deepEqual(await store.query<{ key: string }>('SELECT key FROM materialized_properties'), [{ key: KEY }]);

    // A restart without MATERIALIZED_PROPERTIES keeps the key and its column.
    await svc.close();
    t = undefined;
    const reopened = openEventStore({ dataDir: dir, duckdbFile: path.join(dir, 'events.duckdb') });
    try {
      await reopened.migrate();
      assert.equal(reopened.materialized.get(KEY), column);
      const values = await reopened.query<{ n: number }>(`SELECT count(*) AS n FROM events WHERE ${column} IS NOT NULL`);
      assert.equal(Number(values[0].n), 22);
    } finally {
      await reopened.close();
    }
  });
});

describe('events: runtime materialisation of odd keys and its limit [embedded]', () => {
  const fixture = useEventStore(embeddedIn(''), { open: false });
  const ODD = [`it's "quoted"`, 'ünïcødé 🚀 ключ', 'k'.repeat(200), `x'); DROP TABLE events; --`, 'Order Value', 'order_value'];
  let n = 0;
  const event = (props: Record<string, string>): StoredEvent => ({
    project_id: 1, id: ++n, event: 'e', distinct_id: `d${n}`, time: T0 + n * 1000, insert_id: `i${n}`, ...eventPropLists(props), received_at: T0,
  });
  const valueOf = (k: string, i: number) => `${i}:${k.slice(0, 3)}`;

  it('adds a column of its own to each odd key, fills it with the right values, and refuses past the limit', async function () {
    this.timeout(60_000);
    const store: EventStore = fixture.open(['configured']);
    try {
      await store.migrate();
      await store.writeEvents(1, [event(Object.fromEntries(ODD.map((k, i) => [k, valueOf(k, i)]))), event({ configured: 'c', other: 'o' })]);
      for (const k of ODD) assert.equal(await store.materialize!(k), 'materialized', k);
      const columns = ODD.map((k) => store.materialized.get(k)!);
      assert.equal(new Set(columns).size, ODD.length, 'distinct keys, distinct columns');
      for (const c of columns) assert.match(c, /^mp_[a-z0-9_]+_[0-9a-f]{8}$/);
      const row = (await store.query<Record<string, string | null>>(`SELECT ${columns.join(', ')} FROM events ORDER BY id`));
      assert.deepEqual(row.map((r) => columns.map((c) => r[c])), [ODD.map(valueOf), ODD.map(() => null)]);
      assert.equal(Number((await store.query<{ n: number }>('SELECT count(*) AS n FROM events'))[0].n), 2);

      // Writes queued behind the materialisation fill the new column (their statement is built in their turn).
      const late = 'late key';
      const queued = [store.materialize!(late), store.writeEvents(1, [event({ [late]: 'w' })]), store.insertEvents([event({ [late]: 'i' })])];
      await Promise.all(queued);
      const lateValues = await store.query<{ v: string | null }>(`SELECT ${store.materialized.get(late)} AS v FROM events ORDER BY id`);
      assert.deepEqual(lateValues.map((r) => r.v), [null, null, 'w', 'i']);

      // A key that already has a column (configured) is not materialised again.
      assert.equal(await store.materialize!('configured'), 'materialized');
      const kept = async () => (await store.query<{ key: string }>('SELECT key FROM materialized_properties')).map((r) => r.key).sort();
      assert.deepEqual(await kept(), [...ODD, late].sort());

      for (let i = ODD.length + 1; i < MAX_RUNTIME_MATERIALIZED; i++) assert.equal(await store.materialize!(`k${i}`), 'materialized');
      assert.equal(await store.materialize!('one too many'), 'store-full');
      assert.equal(store.materialized.has('one too many'), false);
      assert.equal((await kept()).length, MAX_RUNTIME_MATERIALIZED);
    } finally {
      await store.close();
    }
  });
});
