import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { configuredBackends, requireServices, type Backend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { ev, ingest } from '../support/ingestion.js';
import { sleep } from '../support/processes.js';

/**
 * A batch is applied as if its records had arrived one per request, in the order the client sent
 * them: the same calls sent batched (mixpanel-browser's batch mode) and one per request give the
 * same analyses answers. Each run has two projects: one gets the calls one by one, the other in
 * one /track body.
 */
const T0 = Date.UTC(2024, 0, 1, 10);
const MIN = 60_000;
const at = (m: number) => T0 + m * MIN;

/** What mixpanel-browser sends around alias() and identify(), in order. */
const CALLS = [
  // An anonymous visitor browses, then alias() names the person (alias has nothing stored yet: retroactive),
  // and the SDK goes on under the new id.
  ev('view', '$device:a1', { time: at(0) }),
  ev('view', '$device:a1', { time: at(1) }),
  ev('$create_alias', '$device:a1', { alias: 'alice@example.test', time: at(2) }),
  ev('signup', 'alice@example.test', { time: at(3) }),
  ev('buy', 'alice@example.test', { time: at(4) }),
  // An id with history of its own joins bob: only what comes after the alias call moves.
  ev('view', 'legacy-7', { time: at(1) }),
  ev('$create_alias', 'bob', { alias: 'legacy-7', time: at(5) }),
  ev('signup', 'legacy-7', { time: at(6) }),
  ev('buy', 'bob', { time: at(7) }),
  // The $device_id/$user_id rule and an alias of an id already in a cluster (refused), mid-batch.
  ev('view', '$device:c1', { time: at(2) }),
  ev('signup', 'carol', { $device_id: '$device:c1', $user_id: 'carol', time: at(8) }),
  ev('$create_alias', 'dave', { alias: '$device:c1', time: at(9) }),
  ev('buy', '$device:c1', { time: at(10) }),
];
const STORED = CALLS.filter((c) => c.event !== '$create_alias').length;

const ANALYSES: Array<[string, Record<string, unknown>]> = [
  ['/api/query/funnel', { steps: ['view', 'signup', 'buy'], from: '2024-01-01', to: '2024-01-01', windowDays: 1 }],
  ['/api/query/segmentation', { event: '$all_events', from: '2024-01-01', to: '2024-01-01', unit: 'day', type: 'unique' }],
  ['/api/query/flows', { event: 'signup', direction: 'after', steps: 1, from: '2024-01-01', to: '2024-01-01' }],
  ['/api/query/sessions', { from: '2024-01-01', to: '2024-01-01', unit: 'day' }],
];

interface Mode {
  name: string;
  backend: Backend;
  env?: () => Record<string, string>;
}

const modes: Mode[] = configuredBackends().map((backend) => ({ name: backend.name, backend }));
const production = configuredBackends().find((b) => b.name === 'production');
if (production) {
  modes.push({
    name: 'production, JetStream pipeline',
    backend: production,
    env: () => {
      const tag = randomBytes(4).toString('hex');
      return { NATS_URL: process.env.TEST_NATS_URL!, NATS_STREAM: `T_${tag}`, NATS_SUBJECT_PREFIX: `t_${tag}`, NATS_STREAM_STORAGE: 'memory' };
    },
  });
}

for (const mode of modes) {
  describe(`ingestion: batch order [${mode.name}]`, function () {
    this.timeout(90_000);
    let t: TestService;
    let single: Tenant;
    let batched: Tenant;

    before(async function () {
      if (mode.env) requireServices(this, 'TEST_NATS_URL');
      t = await startTestService(mode.backend, mode.env?.() ?? {});
      single = await createTenant(t, 'Single');
      batched = await createTenant(t, 'Batched');
    });
    after(async () => t?.close());

    /** Waits until every event of the project is stored (works for either buffer). */
    async function stored(tenant: Tenant): Promise<void> {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const r = await tenant.owner.get(`/api/data/events?projectId=${tenant.project.id}&limit=1000`);
        assert.equal(r.status, 200, r.text);
        if (r.body.events.length >= STORED) break;
        if (Date.now() > deadline) assert.fail(`only ${r.body.events.length} of ${STORED} events stored`);
        await sleep(100);
      }
      // The links travel with the last record's batch: wait for that batch's own effects too.
      const buffer = t.svc.deps.buffer as { idle?: () => Promise<void> };
      if (buffer.idle) await buffer.idle();
      else await sleep(500);
    }

    const answers = async (tenant: Tenant) => {
      const out: unknown[] = [];
      for (const [path, body] of ANALYSES) {
        const r = await tenant.owner.post(path, { projectId: tenant.project.id, ...body });
        assert.equal(r.status, 200, `${path}: ${r.text}`);
        out.push(r.body);
      }
      return out;
    };

    it('gives the same answers for the same calls batched and sent one per request', async () => {
      for (const call of CALLS) {
        const r = await ingest(t, single.project.token).post('/track', call);
        assert.equal(r.body.status, 1, r.text);
      }
      const r = await ingest(t, batched.project.token).post('/track', CALLS);
      assert.equal(r.status, 200, r.text);
      await stored(single);
      await stored(batched);
      const one = await answers(single);
      const many = await answers(batched);
      assert.deepEqual(many, one);
      // And they are the merged answers: alice's anonymous views, her signup and purchase are one
      // person who converts; legacy-7 keeps its own view (bob has none); carol converts from her device's view.
      const funnel = one[0] as Array<{ count: number; convertedUserIds: string[] }>;
      assert.deepEqual(funnel.map((s) => s.count), [3, 2, 2]);
      assert.deepEqual(funnel[2].convertedUserIds, ['$device:a1', 'carol']);
      const users = await batched.owner.get(`/api/data/events?projectId=${batched.project.id}&distinctId=${encodeURIComponent('$device:a1')}&limit=1000`);
      assert.deepEqual(users.body.events.map((e: { event: string }) => e.event).sort(), ['buy', 'signup', 'view', 'view']);
    });
  });
}
