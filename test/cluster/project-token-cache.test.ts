import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { startTestService, type TestService } from '../support/service.js';
import { ProjectStore } from '../../apps/server/src/projects/store.js';
import { sleep } from '../support/processes.js';
import { statementsDuring } from '../support/queries.js';

/**
 * The project-token cache on the ingestion and flag paths (projects/store.ts byTokenCached): one
 * store read per token however many requests arrive at once, a stale entry answering while one
 * background read refreshes it, and a deletion through the store forgetting the token at once.
 */
forEachBackend('projects: token cache', (backend) => {
  let t: TestService;
  let store: ProjectStore;
  before(async () => {
    t = await startTestService(backend);
    store = new ProjectStore(t.svc.deps.db);
  });
  after(async () => { await t?.close(); });

  /** Reads of the projects table while `fn` runs. */
  const projectReads = async (fn: () => Promise<void>) =>
    (await statementsDuring(t.svc.deps.db, fn)).filter((q) => /^select .* from [`"]projects[`"]/i.test(q.sql)).length;
  const many = (token: string) => Promise.all(Array.from({ length: 50 }, () => store.byTokenCached(token)));

  it('50 concurrent lookups of a token share one read, cold and after expiry', async () => {
    const p = await store.create({ orgId: null, name: 'token-cache-cold' });
    let got: Array<unknown> = [];
    assert.equal(await projectReads(async () => { got = await many(p.token); }), 1);
    assert.ok(got.every((x) => (x as { id: number }).id === p.id));
    await sleep(2100); // past the entry and its grace: callers wait for one read
    assert.equal(await projectReads(async () => { got = await many(p.token); }), 1);
    assert.ok(got.every((x) => (x as { id: number }).id === p.id));
  });

  it('an expired entry answers at once while one background read refreshes it', async () => {
    // The entry expires 1 s after its read and answers stale for 1 s more; a loaded machine may
    // wake the test outside that second, so such an attempt is tried again with a new project.
    for (let attempt = 1; ; attempt++) {
      const p = await store.create({ orgId: null, name: 'token-cache-stale' });
      const before = Date.now();
      await store.byTokenCached(p.token);
      const filled = Date.now();
      // Renamed by another process: this store's entry still holds the old name.
      await t.svc.deps.db('projects').where({ id: p.id }).update({ name: 'renamed elsewhere' });
      await sleep(1100 - (Date.now() - filled));
      let answers: Array<{ name?: string }> = [];
      let asked = 0;
      const reads = await projectReads(async () => {
        asked = Date.now();
        answers = (await many(p.token)).map((x) => ({ name: x?.name }));
        await sleep(200);
      });
      if ((asked - filled < 1000 || asked - before >= 2000) && attempt < 3) continue;
      assert.ok(answers.every((a) => a.name === 'token-cache-stale'), 'answered from the expired entry, without waiting');
      assert.equal(reads, 1, 'one background refresh');
      assert.equal((await store.byTokenCached(p.token))?.name, 'renamed elsewhere', 'the refresh replaced the entry');
      return;
    }
  });

  it('a project deleted through the store is forgotten at once; unknown tokens share a read and are not remembered', async () => {
    const p = await store.create({ orgId: null, name: 'token-cache-deleted' });
    assert.equal((await store.byTokenCached(p.token))?.id, p.id);
    await store.delete(p.id);
    assert.equal(await store.byTokenCached(p.token), undefined);
    let got: Array<unknown> = [];
    assert.equal(await projectReads(async () => { got = await many('no-such-token'); }), 1);
    assert.ok(got.every((x) => x === undefined));
    assert.equal(await projectReads(async () => { await store.byTokenCached('no-such-token'); }), 1);
  });
});
