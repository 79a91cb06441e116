import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { operatorKinds } from '../../operator/src/registry.js';
import { OPERATOR_PERMISSIONS } from '../../operator/src/permissions.js';

const SRC = join(import.meta.dirname, '..', '..', 'operator', 'src');
/** The code without its comments and RBAC reasons (prose may name a kind as an example). */
const code = async (file: string) => (await readFile(join(SRC, file), 'utf8'))
  .replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '').replace(/reason: '(?:[^'\\]|\\.)*'/g, '');

describe('operator kind registry', () => {
  const kinds = operatorKinds();

  it('lists each kind once, with a unique plural and short names, and watches only registered kinds', () => {
    const names = kinds.map((k) => k.definition.kind);
    assert.deepEqual(names, ['Organization', 'Project', 'FlagSecret', 'FeatureFlag', 'ApiToken', 'Experiment']);
    assert.equal(new Set(kinds.map((k) => k.definition.plural)).size, kinds.length);
    assert.equal(new Set(kinds.flatMap((k) => k.definition.shortNames)).size, kinds.flatMap((k) => k.definition.shortNames).length);
    for (const k of kinds) for (const w of k.watches ?? []) assert.ok(names.includes(w.kind), `${k.definition.kind} watches ${w.kind}`);
  });

  it('drives the RBAC rules: every kind (and its status) is listed, watched and patched in its scope', () => {
    const rule = (resource: string) => OPERATOR_PERMISSIONS.find((r) => r.apiGroups.includes('analytics.tally.dev') && r.resources.includes(resource));
    for (const { definition: d } of kinds) {
      const scope = d.scope === 'Cluster' ? 'cluster-scoped' : 'cluster';
      assert.deepEqual([rule(d.plural)?.verbs, rule(d.plural)?.scope], [['list', 'watch', 'patch'], scope], d.kind);
      assert.deepEqual([rule(`${d.plural}/status`)?.verbs, rule(`${d.plural}/status`)?.scope], [['patch'], scope], d.kind);
    }
  });

  it('the controller and its plumbing name no kind: a kind is its module and one registry line', async () => {
    const names = kinds.map((k) => k.definition.kind);
    for (const file of ['controller.ts', 'operator.ts', 'informer.ts', 'cache.ts', 'kube.ts', 'kinds.ts', 'permissions.ts', 'metrics.ts', 'queue.ts']) {
      const text = await code(file);
      for (const name of names) assert.doesNotMatch(text, new RegExp(`\\b${name}\\b`), `${file} names ${name}`);
    }
    // The last kind added is named only by its own files and the registry.
    for (const file of ['reconcile/context.ts', 'reconcile/finalize.ts', 'reconcile/adopt.ts', 'reconcile/tenant-config.ts', 'reconcile/compare.ts', 'tally-api.ts']) {
      assert.doesNotMatch(await code(file), /\bExperiment|experiments?\b/, `${file} names Experiment`);
    }
  });
});
