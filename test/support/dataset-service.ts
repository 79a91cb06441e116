import assert from 'node:assert/strict';
import type { Deps } from '../../apps/server/src/deps.js';
import type { Backend } from './backends.js';
import { startTestService, type TestService } from './service.js';
import { freshProject, loadDataset } from './reference/harness.js';
import type { RefData } from './reference/index.js';
import { upgradeQuery } from '../../apps/server/src/query/ir/upgrade.js';
import type { QueryV2 } from '../../apps/server/src/query/ir/document.js';

/** What a suite that runs analyses over generated datasets calls (valid once its `before` hooks ran). */
export interface DatasetService {
  deps: () => Deps;
  /** A new project (no organisation) holding `data`, loaded as the reference evaluator reads it. */
  projectWith: (data: RefData) => Promise<number>;
  /** The scope the service's query executor takes for a project, as the routes pass it (the organisation does not matter here). */
  scope: (id: number) => { id: number; org_id: null };
  /** A query document upgraded to the current IR version; fails the test if the upgrade refuses it. */
  doc: (q: unknown) => QueryV2;
}

/**
 * The set-up the query suites that check generated datasets against the reference evaluator share,
 * in the suite it is called in: before all, a service of its own on `backend` with `env` (handed to
 * `set`); after all, the service closed. A suite's own `before` hooks run after this one.
 */
export function datasetService(backend: Backend, env: Record<string, string>, set: (t: TestService) => void): DatasetService {
  let t: TestService | undefined;
  before(async function () {
    this.timeout(60_000);
    t = await startTestService(backend, env);
    set(t);
  });
  after(async function () {
    this.timeout(120_000);
    await t?.close();
  });
  const deps = () => t!.svc.deps;
  return {
    deps,
    projectWith: async (data) => {
      const projectId = await freshProject(deps());
      await loadDataset(deps(), projectId, data);
      return projectId;
    },
    scope: (id) => ({ id, org_id: null }),
    doc: (q) => {
      const r = upgradeQuery(q);
      assert.ok(r.ok, JSON.stringify(r));
      return r.query;
    },
  };
}
