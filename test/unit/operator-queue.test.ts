import assert from 'node:assert/strict';
import { WorkQueue, type QueueResult } from '../../operator/src/queue.js';

/** The operator's work queue: collapsing, one worker per key, backoff per key. */
describe('operator work queue', () => {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('collapses a key added many times while it waits, and re-queues one added while in flight', async () => {
    const seen: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => { release = r; });
    const q = new WorkQueue({
      concurrency: 1, backoffBaseMs: 10, backoffMaxMs: 100,
      process: async (key): Promise<QueueResult> => {
        seen.push(key);
        if (seen.length === 1) await gate;
        return { kind: 'done' };
      },
    });
    q.add('a');
    await sleep(5);
    for (let i = 0; i < 50; i++) { q.add('a'); q.add('b'); }
    assert.equal(q.depth, 1, 'b waits once; a is in flight and only marked dirty');
    release();
    await q.idle();
    assert.deepEqual(seen.sort(), ['a', 'a', 'b']);
  });

  it('never runs one key on two workers at once', async () => {
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    const q = new WorkQueue({
      concurrency: 4, backoffBaseMs: 10, backoffMaxMs: 100,
      process: async () => {
        running++; runs++;
        maxRunning = Math.max(maxRunning, running);
        await sleep(5);
        running--;
        return { kind: 'done' };
      },
    });
    for (let i = 0; i < 20; i++) { q.add('k'); await sleep(1); }
    await q.idle();
    assert.equal(maxRunning, 1);
    assert.ok(runs >= 2 && runs < 20, `runs ${runs}`);
  });

  it('retries failures with exponential backoff and forgets it after a success', async () => {
    const times: number[] = [];
    const q = new WorkQueue({
      concurrency: 1, backoffBaseMs: 20, backoffMaxMs: 1000,
      process: async (): Promise<QueueResult> => {
        times.push(Date.now());
        return times.length < 5 ? { kind: 'retry' } : { kind: 'done' };
      },
    });
    q.add('x');
    const end = Date.now() + 5000;
    while (times.length < 5 && Date.now() < end) await sleep(10);
    const gaps = times.slice(1).map((t, i) => t - times[i]);
    assert.equal(times.length, 5);
    // 20, 40, 80, 160 ms (±10% jitter, timers may be late but never early)
    gaps.forEach((g, i) => assert.ok(g >= 20 * 2 ** i * 0.9 - 2, `gap ${i}: ${g}`));
    assert.ok(gaps[3] > gaps[0] * 4, `gaps grow: ${gaps}`);
    assert.equal(q.nextBackoff('x') < 30, true, 'a success resets the backoff');
    await q.shutdown();
  });
});
