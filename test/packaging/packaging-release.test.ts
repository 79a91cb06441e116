import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse, parseAllDocuments } from 'yaml';
import { CHART_DIR, repoRoot, type K8sObject } from '../support/chart.js';
import { kubeTools } from '../support/kube/tools.js';

/**
 * Release artefacts: `helm package` makes the chart archive, and the archive renders exactly the
 * objects the folder renders; the image's npm dependencies as a CycloneDX SBOM (`npm sbom`); the
 * Dockerfile's base image an exact release and the image carrying its SBOM.
 */

const run = promisify(execFile);
const objects = (text: string) => parseAllDocuments(text).map((d) => d.toJS() as K8sObject).filter((o) => o && typeof o === 'object');
const key = (o: K8sObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;

describe('release artefacts', function () {
  this.timeout(120_000);
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tally-release-'));
  });
  after(async () => rm(dir, { recursive: true, force: true }));

  it('helm package produces tally-<version>.tgz that lints and renders the same objects as charts/tally', async () => {
    const { helm } = await kubeTools();
    const chart = parse(await readFile(join(CHART_DIR, 'Chart.yaml'), 'utf8'));
    const { stdout } = await run(helm, ['package', CHART_DIR, '--destination', dir]);
    const archive = join(dir, `tally-${chart.version}.tgz`);
    assert.match(stdout, /Successfully packaged chart/);
    const { stdout: listing } = await run('tar', ['tzf', archive]);
    for (const f of ['tally/Chart.yaml', 'tally/values.yaml', 'tally/values.schema.json', 'tally/files/prometheus-rules.yaml', 'tally/files/grafana-dashboard.json', 'tally/templates/crds/featureflag.yaml']) {
      assert.ok(listing.split('\n').includes(f), `${f} missing from the archive`);
    }
    await run(helm, ['lint', '--strict', archive]);
    // Values that render every optional part; a fixed Secret name so no generated password differs.
    const values = ['--set', 'credentials.existingSecret=tally-credentials,ingress.enabled=true,serviceMonitor.enabled=true,networkPolicy.enabled=true,prometheusRule.enabled=true,grafanaDashboard.enabled=true,api.autoscaling.enabled=true'];
    const [fromFolder, fromArchive] = await Promise.all([CHART_DIR, archive].map(async (c) => objects((await run(helm, ['template', 'tally', c, '--namespace', 'tally', ...values], { maxBuffer: 32 << 20 })).stdout)));
    assert.ok(fromFolder.length > 20, `${fromFolder.length} objects`);
    assert.deepEqual(fromArchive.map(key).sort(), fromFolder.map(key).sort());
    const byKey = new Map(fromFolder.map((o) => [key(o), o]));
    for (const o of fromArchive) assert.deepEqual(o, byKey.get(key(o)), key(o));
  });

  it('npm sbom: the production dependencies as CycloneDX (koa, zod, the store clients at their locked versions; no dev tools)', async () => {
    const { stdout } = await run('npm', ['sbom', '--sbom-format', 'cyclonedx', '--omit', 'dev', '--package-lock-only'], { cwd: repoRoot, maxBuffer: 64 << 20 });
    const bom = JSON.parse(stdout);
    assert.equal(bom.bomFormat, 'CycloneDX');
    assert.match(bom.specVersion, /^1\.\d+$/);
    const lock = JSON.parse(await readFile(join(repoRoot, 'package-lock.json'), 'utf8'));
    const components = new Map<string, string>((bom.components as Array<{ name: string; group?: string; version: string }>).map((c) => [c.group ? `${c.group}/${c.name}` : c.name, c.version]));
    for (const name of ['koa', 'zod', 'knex', 'pg', '@clickhouse/client', 'nats', '@kubernetes/client-node']) {
      assert.equal(components.get(name), lock.packages[`node_modules/${name}`].version, `${name} in the SBOM at its locked version`);
    }
    for (const dev of ['mocha', 'typescript', 'fast-check']) assert.ok(!components.has(dev), `${dev} (a dev dependency) in the SBOM`);
    assert.ok(bom.components.every((c: { purl?: string }) => c.purl?.startsWith('pkg:npm/')), 'every component has a package URL');
  });

  it('the Dockerfile: base image an exact Node release, the SBOM written into the image', async () => {
    const dockerfile = await readFile(join(repoRoot, 'Dockerfile'), 'utf8');
    const base = /^ARG NODE_IMAGE=(\S+)$/m.exec(dockerfile)?.[1];
    assert.match(base ?? '', /^node:\d+\.\d+\.\d+-bookworm-slim$/, 'an exact version, not node:20');
    assert.match(dockerfile, /npm sbom --sbom-format cyclonedx --omit dev > \/app\/sbom\.cdx\.json/);
    assert.match(dockerfile, /COPY --from=prod-deps .*\/app\/sbom\.cdx\.json/);
  });
});
