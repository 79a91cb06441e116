import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { useEventStore } from '../support/event-store.js';
import type { StoredEvent } from '../../apps/server/src/ports/events/index.js';
import { dialectFor } from '../../apps/server/src/query/dialects/index.js';
import { EventMatcher } from '../../apps/server/src/query/engine/filters.js';
import { flowNamesOf, runFlows } from '../../apps/server/src/query/kinds/flows/compile.js';

/**
 * Flows with very many (or very long) event names: ClickHouse inlines the range's names into the
 * paths' SQL only while they stay short enough for the server's query size limit, and reads them
 * in the query past it; the answer is the same either way.
 */
forEachBackend('flows: many and long event names', (backend) => {
  const T0 = Date.UTC(2024, 4, 6);
  const range = { fromMs: T0, toEndMs: T0 + 86_400_000 };
  const fixture = useEventStore(backend);

  let n = 0;
  const event = (projectId: number, name: string, distinctId: string, t: number): StoredEvent => ({
    project_id: projectId, id: ++n, event: name, distinct_id: distinctId, time: T0 + t, insert_id: `i${n}`,
    prop_keys: [], prop_values: [], prop_types: '', received_at: T0,
  });
  const context = (projectId: number) => {
    const d = dialectFor(fixture.store.dialect, fixture.store.materialized);
    return { d, projectId, events: new EventMatcher(d, new Map()), overrides: false };
  };
  /** `names` long names once each by a filler id, and the path start → b → c → d by ann and bob. */
  const load = async (projectId: number, names: number, length: number) => {
    const filler = Array.from({ length: names }, (_, i) => event(projectId, `${String(i).padStart(5, '0')}-${"x'".repeat(length / 2)}`, 'filler', i));
    const path = ['start', 'b', 'c', 'd'].flatMap((e, i) => [event(projectId, e, 'ann', 60_000 + i), event(projectId, e, 'bob', 70_000 + i)]);
    await fixture.store.writeEvents(projectId, [...filler, ...path]);
  };
  const expected = { paths: [{ path: ['start', 'b', 'c', 'd'], count: 2 }], total: 2 };

  it('inlines names that fit and reads them in the query past the limit, with the same paths', async () => {
    await load(1, 100, 200); // about 40 KB of names: inlined
    await load(2, 600, 200); // about 240 KB: past the limit
    for (const [projectId, inlined] of [[1, true], [2, false]] as const) {
      const q = context(projectId);
      const names = await flowNamesOf(fixture.store, q, range);
      if (fixture.store.dialect === 'clickhouse') assert.equal(names !== undefined, inlined, `project ${projectId}`);
      else assert.equal(names, undefined); // DuckDB reads no names first
      assert.deepEqual(await runFlows(fixture.store, q, { event: 'start', direction: 'after', steps: 3, limit: 1 }, range), expected);
    }
  });
});
