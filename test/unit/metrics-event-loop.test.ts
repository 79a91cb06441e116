import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { registry } from '../../apps/server/src/metrics/registry.js';

/** `tally_eventloop_active_seconds_total`: the main thread's running time, whose rate is the event loop's utilisation. */
describe('metrics: event loop utilisation', () => {
  const read = async () => {
    const metric = registry.getSingleMetric('tally_eventloop_active_seconds_total');
    assert.ok(metric, 'registered');
    return (await metric.get()).values[0].value;
  };

  it('counts the time the main thread runs, not the time it waits', async () => {
    const a = await read();
    const until = performance.now() + 150;
    while (performance.now() < until); // running
    const b = await read();
    await new Promise((r) => setTimeout(r, 300)); // waiting
    const c = await read();
    assert.ok(b - a >= 0.14, `running 150 ms counted ${b - a} s`);
    assert.ok(c - b < 0.1, `waiting 300 ms counted ${c - b} s`);
    assert.match(await registry.metrics(), /^tally_eventloop_active_seconds_total \d/m);
  });
});
