import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { sharedService, type Tenant, type TestService } from '../support/service.js';
import { reportsWorld } from '../support/reports.js';

forEachBackend('lexicon', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let other: Tenant;
  let pid: number;
  reportsWorld(backend, 'lex', (w) => ({ t, tenant, other, pid } = w), sharedService);

  it('observed event names merged with entries; PUT upserts and keeps members it is not given; hidden is flagged, not removed', async () => {
    const viewer = t.client(tenant.tokens.viewer);
    const member = t.client(tenant.tokens.member);
    const first = await viewer.get(`/api/lexicon/events?projectId=${pid}`);
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.body.map((e: any) => [e.name, e.count, e.observed, e.hidden, e.description]), [
      ['view', 4, true, false, null], ['buy', 2, true, false, null], ['signup', 2, true, false, null],
    ]);
    const put = await member.put(`/api/lexicon/events/buy?projectId=${pid}`, { description: 'A completed checkout', displayName: 'Purchase', tags: ['revenue', 'revenue', 'core'] });
    assert.equal(put.status, 200, put.text);
    assert.deepEqual(
      { name: put.body.name, count: put.body.count, description: put.body.description, displayName: put.body.displayName, tags: put.body.tags, hidden: put.body.hidden },
      { name: 'buy', count: 2, description: 'A completed checkout', displayName: 'Purchase', tags: ['revenue', 'core'], hidden: false },
    );
    const hide = await member.put(`/api/lexicon/events/buy?projectId=${pid}`, { hidden: true });
    assert.equal(hide.body.hidden, true);
    assert.equal(hide.body.description, 'A completed checkout', 'members left out keep their value');
    const ahead = await member.put(`/api/lexicon/events/${encodeURIComponent('Plan upgraded')}?projectId=${pid}`, { description: 'not sent yet' });
    assert.equal(ahead.status, 200, ahead.text);
    assert.equal(ahead.body.observed, false);
    assert.equal(ahead.body.count, 0);
    const after = await viewer.get(`/api/lexicon/events?projectId=${pid}`);
    assert.deepEqual(after.body.map((e: any) => [e.name, e.hidden, e.observed]), [
      ['view', false, true], ['buy', true, true], ['signup', false, true], ['Plan upgraded', false, false],
    ]);
    const cleared = await member.put(`/api/lexicon/events/buy?projectId=${pid}`, { description: null, hidden: false });
    assert.equal(cleared.body.description, null);
    assert.equal(cleared.body.displayName, 'Purchase');
  });

  it('observed property keys merged with entries', async () => {
    const member = t.client(tenant.tokens.member);
    const put = await member.put(`/api/lexicon/properties/country?projectId=${pid}`, { displayName: 'Country', hidden: true });
    assert.equal(put.status, 200, put.text);
    assert.deepEqual([put.body.key, put.body.count, put.body.sampleValues, put.body.hidden, put.body.observed], ['country', 5, ['de', 'fr'], true, true]);
    await member.put(`/api/lexicon/properties/plan?projectId=${pid}`, { tags: ['billing'] });
    const list = await t.client(tenant.tokens.viewer).get(`/api/lexicon/properties?projectId=${pid}`);
    assert.deepEqual(list.body.map((p: any) => [p.key, p.hidden, p.observed, p.tags]), [['country', true, true, []], ['plan', false, false, ['billing']]]);
  });

  it('bad input names its path; viewers cannot write; another organisation cannot read or write', async () => {
    const member = t.client(tenant.tokens.member);
    for (const [body, re] of [
      [{ hidden: 'yes' }, /^hidden: /], [{ tags: 'a' }, /^tags: /], [{ tags: [''] }, /^tags\.0: /],
      [{ displayName: 'x'.repeat(201) }, /^displayName: /], [{ colour: 'red' }, /colour/],
    ] as const) {
      const r = await member.put(`/api/lexicon/events/view?projectId=${pid}`, body);
      assert.equal(r.status, 400, r.text);
      assert.match(r.body.error, re);
    }
    assert.equal((await member.put(`/api/lexicon/events/${'e'.repeat(256)}?projectId=${pid}`, {})).status, 400);
    assert.equal((await t.client(tenant.tokens.viewer).put(`/api/lexicon/events/view?projectId=${pid}`, { hidden: true })).status, 403);
    const list = await t.client(tenant.tokens.viewer).get(`/api/lexicon/events?projectId=${pid}`);
    assert.equal(list.body.find((e: any) => e.name === 'view').hidden, false, 'nothing written');
    const foreign = t.client(other.tokens.owner);
    assert.equal((await foreign.get(`/api/lexicon/events?projectId=${pid}`)).status, 403);
    assert.equal((await foreign.put(`/api/lexicon/properties/country?projectId=${pid}`, { hidden: false })).status, 403);
    const theirs = await foreign.get(`/api/lexicon/events?projectId=${other.project.id}`);
    assert.deepEqual(theirs.body, [], "another project's names and entries do not leak");
  });
});
