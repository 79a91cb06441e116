import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse, parseAllDocuments } from 'yaml';
import { repoRoot } from '../support/chart.js';
import { operatorKinds } from '../../operator/src/registry.js';

/**
 * GitOps health: the Argo CD health checks (Lua, resource.customizations format) run by a real Lua
 * 5.4 on status fixtures of each kind, and the Flux example's ordering and waits checked against
 * the repository it points into.
 */

const run = promisify(execFile);
/** Every kind of the operator's registry: a kind added there fails here until argocd-cm-health.yaml has its key. */
const KINDS = operatorKinds().map((k) => k.definition.kind);

/** A JSON value as a Lua table constructor (how Argo CD hands `obj` to the script). */
function toLua(v: unknown): string {
  if (v === null || v === undefined) return 'nil';
  if (typeof v === 'boolean' || typeof v === 'number') return String(v);
  if (typeof v === 'string') return JSON.stringify(v);
  if (Array.isArray(v)) return `{${v.map(toLua).join(', ')}}`;
  return `{${Object.entries(v as Record<string, unknown>).map(([k, x]) => `[${JSON.stringify(k)}] = ${toLua(x)}`).join(', ')}}`;
}

async function health(script: string, obj: unknown): Promise<{ status: string; message: string }> {
  const harness = `obj = ${toLua(obj)}\nlocal f = assert(load(${JSON.stringify(script)}, "health", "t"))\nlocal hs = f()\nio.write(hs.status, "\\t", hs.message or "")`;
  const { stdout } = await run('lua5.4', ['-e', harness]);
  const [status, message] = stdout.split('\t');
  return { status, message };
}

const cond = (status: string, reason: string, message: string, observedGeneration = 3) => ({
  type: 'Ready', status, reason, message, observedGeneration, lastTransitionTime: '2026-01-01T00:00:00Z',
});
const resource = (kind: string, extra: { status?: unknown; metadata?: Record<string, unknown> } = {}) => ({
  apiVersion: 'analytics.tally.dev/v1', kind,
  metadata: { name: 'x', namespace: kind === 'Organization' ? undefined : 'team-shop', generation: 3, ...extra.metadata },
  spec: {},
  ...(extra.status !== undefined ? { status: extra.status } : {}),
});

const FIXTURES: Array<[string, (kind: string) => unknown, string, RegExp]> = [
  ['Ready=True at the current generation', (k) => resource(k, { status: { observedGeneration: 3, conditions: [cond('True', 'Reconciled', 'ok')] } }), 'Healthy', /^Reconciled: ok$/],
  ['Ready=False (Invalid)', (k) => resource(k, { status: { observedGeneration: 3, conditions: [cond('False', 'Invalid', 'variants: rolloutPct must sum to exactly 100')] } }), 'Degraded', /^Invalid: variants/],
  ['Ready=False (NamespaceNotAllowed)', (k) => resource(k, { status: { observedGeneration: 3, conditions: [{ type: 'Other', status: 'True', reason: 'X', message: '' }, cond('False', 'NamespaceNotAllowed', 'team-shop is not listed')] } }), 'Degraded', /^NamespaceNotAllowed/],
  ['no status yet', (k) => resource(k), 'Progressing', /Waiting for the Tally operator/],
  ['status without a Ready condition', (k) => resource(k, { status: { conditions: [] } }), 'Progressing', /Waiting/],
  ['Ready=True of an older generation (a change not yet reconciled)', (k) => resource(k, { metadata: { generation: 4 }, status: { observedGeneration: 3, conditions: [cond('True', 'Reconciled', 'ok')] } }), 'Progressing', /generation 4 yet \(last: 3\)/],
  ['Ready=Unknown', (k) => resource(k, { status: { observedGeneration: 3, conditions: [cond('Unknown', 'Reconciling', 'in progress')] } }), 'Progressing', /Reconciling/],
  ['being deleted', (k) => resource(k, { metadata: { deletionTimestamp: '2026-01-01T00:00:00Z' }, status: { observedGeneration: 3, conditions: [cond('True', 'Reconciled', 'ok')] } }), 'Progressing', /finalizer/],
];

describe('Argo CD health checks (k8s/argocd, lua5.4)', function () {
  this.timeout(60_000);
  let scripts: Record<string, string>;

  before(async () => {
    const cm = parse(await readFile(join(repoRoot, 'k8s/argocd/argocd-cm-health.yaml'), 'utf8'));
    assert.equal(cm.kind, 'ConfigMap');
    assert.equal(cm.metadata.name, 'argocd-cm');
    scripts = cm.data;
  });

  it('one resource.customizations.health key per kind, each the script in k8s/argocd/health.lua', async () => {
    const lua = await readFile(join(repoRoot, 'k8s/argocd/health.lua'), 'utf8');
    assert.deepEqual(Object.keys(scripts).sort(), KINDS.map((k) => `resource.customizations.health.analytics.tally.dev_${k}`).sort());
    for (const [key, script] of Object.entries(scripts)) assert.equal(script.trimEnd(), lua.trimEnd(), key);
  });

  for (const kind of KINDS) {
    it(`${kind}: Healthy, Degraded and Progressing from the status`, async () => {
      const script = scripts[`resource.customizations.health.analytics.tally.dev_${kind}`];
      for (const [what, make, status, message] of FIXTURES) {
        const hs = await health(script, make(kind));
        assert.equal(hs.status, status, `${kind}, ${what}: ${hs.message}`);
        assert.match(hs.message, message, `${kind}, ${what}`);
      }
    });
  }

  it('the harness is real Lua: a script error fails', async () => {
    await assert.rejects(health('return obj.status.conditions[1].type', resource('Project')));
  });
});

describe('Flux example (k8s/examples/gitops/flux)', () => {
  it('CRDs first, then the teams: dependsOn resolves, paths exist in this repository, wait with a timeout, prune only for team resources', async () => {
    const docs = parseAllDocuments(await readFile(join(repoRoot, 'k8s/examples/gitops/flux/tally.yaml'), 'utf8')).map((d) => d.toJS());
    const source = docs.find((d) => d.kind === 'GitRepository');
    assert.ok(source, 'a GitRepository');
    const ks = docs.filter((d) => d.kind === 'Kustomization' && d.apiVersion === 'kustomize.toolkit.fluxcd.io/v1');
    assert.ok(ks.length >= 2);
    const names = new Set(ks.map((k) => k.metadata.name));
    for (const k of ks) {
      assert.equal(k.spec.sourceRef.name, source.metadata.name, k.metadata.name);
      assert.ok(existsSync(join(repoRoot, k.spec.path)), `${k.metadata.name}: path ${k.spec.path} is not in this repository`);
      for (const d of k.spec.dependsOn ?? []) assert.ok(names.has(d.name), `${k.metadata.name} depends on unknown ${d.name}`);
      // Flux ignores healthChecks when wait is true; wait checks every object's Ready condition (kstatus).
      assert.equal(k.spec.wait, true, `${k.metadata.name}: wait`);
      assert.equal(k.spec.healthChecks, undefined, `${k.metadata.name}: healthChecks is ignored with wait`);
      assert.match(String(k.spec.timeout ?? ''), /^\d+m$/, `${k.metadata.name}: a timeout bounds the wait`);
    }
    const crds = ks.find((k) => k.spec.path === './crds');
    assert.ok(crds, 'a Kustomization for ./crds');
    assert.equal(crds.spec.prune, false, 'CRDs never pruned: pruning one deletes every resource of its kind');
    const teams = ks.filter((k) => k !== crds);
    for (const t of teams) assert.ok(t.spec.dependsOn?.some((d: { name: string }) => d.name === crds.metadata.name), `${t.metadata.name} waits for the CRDs`);
  });

  it('what Flux wait (kstatus) reads is in every CRD: status.observedGeneration and Ready conditions', async () => {
    const dir = join(repoRoot, 'crds');
    const kustomization = parse(await readFile(join(dir, 'kustomization.yaml'), 'utf8'));
    for (const file of kustomization.resources as string[]) {
      const crd = parse(await readFile(join(dir, file), 'utf8'));
      const status = crd.spec.versions[0].schema.openAPIV3Schema.properties.status.properties;
      assert.equal(status.observedGeneration.type, 'integer', file);
      assert.equal(status.conditions.items.properties.type.type, 'string', file);
      assert.ok(crd.spec.versions[0].subresources.status, `${file}: status subresource (generation bumps only on spec changes)`);
    }
  });
});
