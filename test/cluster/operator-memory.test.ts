import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { CoreV1Api } from '@kubernetes/client-node';
import { envOf, find, helmTemplate } from '../support/chart.js';
import { FakeKube } from '../support/kube/index.js';
import { OPERATOR_USER, POD_NS, grantsFromPermissions, waitFor } from '../support/operator.js';

/**
 * The operator's memory does not grow with the cluster's unrelated Secrets: the operator runs as
 * its own process (`bin/tally.ts operator`, the image's entry) against the fake API
 * with its RBAC; 3,000 Secrets of 8 KB that it did not make and nothing refers to are created, its
 * caches are forced to relist (every watch closed, history expired: 410), and its resident set
 * (VmRSS of the child process, /proc) grows by less than 15 MiB. Every Secret list/watch it made
 * carried a selector. The process gets the NODE_OPTIONS the chart's default render gives the
 * operator container (V8's heap limits change the RSS), so the figure is the one a pod would see.
 */
const MiB = 1024 * 1024;

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((ok) => srv.listen(0, '127.0.0.1', ok));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((ok) => srv.close(() => ok()));
  return port;
}

async function rssOf(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

/** The lowest of a few readings a little apart (a reading in the middle of an allocation burst is not the level). */
async function settledRss(pid: number): Promise<number> {
  let low = Infinity;
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setTimeout(r, 400));
    low = Math.min(low, await rssOf(pid));
  }
  return low;
}

describe('operator memory with unrelated Secrets', function () {
  this.timeout(240_000);
  let fake: FakeKube;
  let child: ChildProcess | undefined;

  after(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child!.once('exit', r));
    }
    await fake?.stop();
  });

  it('3,000 unrelated 8 KB Secrets grow the operator process by less than 15 MiB', async () => {
    fake = await FakeKube.start({ historyLimit: 10_000 });
    fake.enforceRbac(OPERATOR_USER, grantsFromPermissions(POD_NS));
    const port = await freePort();
    const chart = await helmTemplate('tally');
    assert.ok(chart.ok, chart.stderr);
    const container = find(chart.objects, 'Deployment', 'tally-operator').spec.template.spec.containers.find((c: { name: string }) => c.name === 'operator');
    const nodeOptions = envOf(container).get('NODE_OPTIONS')?.value ?? '';
    child = spawn(process.execPath, ['--import', 'tsx', 'bin/tally.ts', 'operator'], {
      env: {
        PATH: process.env.PATH, KUBECONFIG: await fake.kubeconfigFile(OPERATOR_USER, POD_NS),
        OPERATOR_API_URL: 'http://127.0.0.1:9', OPERATOR_KEY: 'memory-test-key', POD_NAMESPACE: POD_NS, LEADER_ELECT: 'false',
        METRICS_PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'error', NODE_OPTIONS: nodeOptions,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    await waitFor('operator ready', async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200, 60_000);
    await waitFor('tenant config written', () => fake.stored('', 'secrets', POD_NS, 'tally-tenant-config'), 30_000);
    const before = await settledRss(child.pid!);

    const core = fake.kubeConfig().makeApiClient(CoreV1Api);
    const value = Buffer.alloc(8 * 1024, 'x').toString('base64').slice(0, 8 * 1024);
    const names = Array.from({ length: 3000 }, (_, i) => [`apps-${i % 10}`, `unrelated-${i}`] as const);
    for (let i = 0; i < names.length; i += 50) {
      await Promise.all(names.slice(i, i + 50).map(([namespace, name]) =>
        core.createNamespacedSecret({ namespace, body: { metadata: { name }, data: { blob: value } } })));
    }
    // Make every cache start again (a list, where the resourceVersion is gone), as after an API server restart.
    const secretCalls = () => fake.requests.filter((r) => r.user === OPERATOR_USER && r.path.endsWith('/secrets') && (r.verb === 'list' || r.verb === 'watch')).length;
    const callsBefore = secretCalls();
    fake.expireHistory();
    fake.closeWatches();
    await waitFor('operator back on its Secrets', () => secretCalls() > callsBefore, 30_000);
    await new Promise((r) => setTimeout(r, 3000));
    const after = await settledRss(child.pid!);
    const grown = (after - before) / MiB;
    console.log(`      operator (NODE_OPTIONS '${nodeOptions}') RSS ${(before / MiB).toFixed(1)} MiB → ${(after / MiB).toFixed(1)} MiB (${grown >= 0 ? '+' : ''}${grown.toFixed(1)} MiB) with 3,000 unrelated 8 KB Secrets`);
    assert.ok(grown < 15, `grew ${grown.toFixed(1)} MiB`);

    const secretReads = fake.requests.filter((r) => r.user === OPERATOR_USER && r.path.endsWith('/secrets') && (r.verb === 'list' || r.verb === 'watch'));
    assert.ok(secretReads.length >= 2);
    for (const r of secretReads) assert.match(decodeURIComponent(r.query), /(labelSelector|fieldSelector)=/, `${r.verb} ${r.path}${r.query}`);
  });
});
