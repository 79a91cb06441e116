import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, sharedService, type Tenant, type TestService } from '../support/service.js';

/**
 * Two people editing one board at once: each write carries the version it was made on, the
 * second one (made on an older version) is refused with 409 and the first one's cards stay.
 */
forEachBackend('boards: version check of concurrent edits', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  before(async function () {
    this.timeout(120_000);
    t = await sharedService(backend);
    tenant = await createTenant(t, 'Board versions');
  });

  it('counts versions from 1; a write on an older version answers 409 naming both and changes nothing', async () => {
    const pid = tenant.project.id;
    const alice = tenant.owner;
    const made = await alice.post(`/api/boards?projectId=${pid}`, { name: 'Shared', cards: [{ cardType: 'text', text: 'Intro' }] });
    assert.equal(made.status, 201, made.text);
    assert.equal(made.body.version, 1);
    const id = made.body.id;
    // Both load version 1; Alice adds a card first.
    const aliceCards = [{ cardType: 'text', text: 'Intro' }, { cardType: 'text', text: 'Alice was here' }];
    const first = await alice.put(`/api/boards/${id}`, { cards: aliceCards, version: 1 });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.version, 2);
    // Bob's change, made on version 1, would drop Alice's card: refused.
    const second = await alice.put(`/api/boards/${id}`, { cards: [{ cardType: 'text', text: 'Intro' }, { cardType: 'text', text: 'Bob too' }], version: 1 });
    assert.equal(second.status, 409, second.text);
    assert.equal(second.body.error, 'board changed');
    assert.match(second.body.message, /your version 1, now 2/);
    assert.equal(second.body.version, 2);
    const stored = (await alice.get(`/api/boards/${id}`)).body;
    assert.deepEqual(stored.cards.map((c: any) => c.text), ['Intro', 'Alice was here']);
    assert.equal(stored.version, 2);
    // On the current version it goes through; without a version the last write wins as before.
    const third = await alice.put(`/api/boards/${id}`, { name: 'Shared board', version: 2 });
    assert.equal(third.status, 200, third.text);
    assert.equal(third.body.version, 3);
    const blind = await alice.put(`/api/boards/${id}`, { name: 'Renamed blind' });
    assert.equal(blind.status, 200, blind.text);
    assert.equal(blind.body.version, 4);
    // The list shows the version too.
    const listed = (await alice.get(`/api/boards?projectId=${pid}`)).body.find((b: any) => b.id === id);
    assert.equal(listed.version, 4);
  });

  it('two writes on the same version sent at the same moment: exactly one goes through', async () => {
    const made = await tenant.owner.post(`/api/boards?projectId=${tenant.project.id}`, { name: 'Race' });
    const writes = await Promise.all(['A', 'B', 'C'].map((who) =>
      tenant.owner.put(`/api/boards/${made.body.id}`, { cards: [{ cardType: 'text', text: who }], version: 1 })));
    assert.deepEqual(writes.map((w) => w.status).sort(), [200, 409, 409], writes.map((w) => w.text).join('\n'));
    const winner = writes.find((w) => w.status === 200)!.body.cards[0].text;
    const stored = (await tenant.owner.get(`/api/boards/${made.body.id}`)).body;
    assert.deepEqual(stored.cards.map((c: any) => c.text), [winner]);
    assert.equal(stored.version, 2);
  });

  it('refuses a version that is not a positive integer with 400 naming the field', async () => {
    const made = await tenant.owner.post(`/api/boards?projectId=${tenant.project.id}`, { name: 'Strict' });
    for (const version of [0, -1, 1.5, '2']) {
      const r = await tenant.owner.put(`/api/boards/${made.body.id}`, { name: 'x', version });
      assert.equal(r.status, 400, `${JSON.stringify(version)}: ${r.text}`);
      assert.match(JSON.stringify(r.body), /version/);
    }
    assert.equal((await tenant.owner.get(`/api/boards/${made.body.id}`)).body.name, 'Strict');
  });
});
