import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { createClient, type ClickHouseClient } from '@clickhouse/client';
import { configuredBackends, requireServices, type Backend } from './support/backends.js';
import { find, helmTemplate, validateObject, type K8sObject } from './support/chart.js';
import { startTestService, type TestService } from './support/service.js';

/**
 * Backups: the chart's optional PostgreSQL CronJob (rendered for a PVC and for object storage), its
 * dump script run for real against the test PostgreSQL, and the restore drill of docs/deploy.md
 * "Backups" replayed on the test servers: pg_dump / pg_restore of the metadata database and
 * ALTER TABLE … FREEZE of every ClickHouse table (18.16), parts attached to a new database, then a
 * second service on the restored stores answers as the first did.
 */

const run = promisify(execFile);
const script = (o: K8sObject[]) => {
  const spec = find(o, 'CronJob', 'tally-pg-backup').spec.jobTemplate.spec.template.spec;
  return [...(spec.initContainers ?? []), ...spec.containers].find((c: any) => c.name === 'pg-dump');
};

describe('PostgreSQL backup CronJob (chart)', function () {
  this.timeout(120_000);

  it('off by default; to a PVC (created, kept on uninstall) with the pg_dump of the bundled database', async () => {
    const off = await helmTemplate('tally');
    assert.ok(off.ok, off.stderr);
    assert.ok(!off.objects.some((o) => o.kind === 'CronJob'));
    const r = await helmTemplate('tally', { set: ['backup.postgresql.enabled=true', 'backup.postgresql.schedule=0 2 * * *', 'backup.postgresql.keep=3'] });
    assert.ok(r.ok, r.stderr);
    const cron = find(r.objects, 'CronJob', 'tally-pg-backup');
    await validateObject(cron);
    assert.equal(cron.spec.schedule, '0 2 * * *');
    assert.equal(cron.spec.concurrencyPolicy, 'Forbid');
    const pvc = find(r.objects, 'PersistentVolumeClaim', 'tally-pg-backups');
    assert.equal(pvc.metadata.annotations?.['helm.sh/resource-policy'], 'keep');
    const pod = cron.spec.jobTemplate.spec.template.spec;
    assert.equal(pod.volumes.find((v: any) => v.name === 'backup').persistentVolumeClaim.claimName, 'tally-pg-backups');
    const c = script(r.objects);
    assert.match(c.image, /^postgres:/);
    assert.equal(c.securityContext.readOnlyRootFilesystem, true);
    assert.equal(c.env.find((e: any) => e.name === 'DATABASE_URL').value, 'postgres://tally@tally-postgresql:5432/tally');
    assert.equal(c.env.find((e: any) => e.name === 'PGPASSWORD').valueFrom.secretKeyRef.key, 'POSTGRES_PASSWORD');
    assert.match(c.args[0], /tail -n \+4/);
  });

  it('to object storage: dump in an init container, rclone uploads it with keys from an existing Secret; missing bucket refused', async () => {
    const r = await helmTemplate('tally', {
      set: ['backup.postgresql.enabled=true', 'backup.postgresql.objectStorage.enabled=true', 'backup.postgresql.objectStorage.bucket=backups', 'backup.postgresql.objectStorage.existingSecret=s3-creds', 'backup.postgresql.objectStorage.endpoint=https://s3.example'],
    });
    assert.ok(r.ok, r.stderr);
    const cron = find(r.objects, 'CronJob', 'tally-pg-backup');
    await validateObject(cron);
    assert.ok(!r.objects.some((o) => o.kind === 'PersistentVolumeClaim' && o.metadata.name === 'tally-pg-backups'));
    const pod = cron.spec.jobTemplate.spec.template.spec;
    assert.equal(pod.initContainers[0].name, 'pg-dump');
    const upload = pod.containers[0];
    assert.match(upload.image, /^rclone\/rclone:\d+\.\d+\.\d+$/);
    const env = new Map<string, any>(upload.env.map((e: any) => [e.name, e]));
    assert.equal(env.get('RCLONE_CONFIG_TARGET_ACCESS_KEY_ID').valueFrom.secretKeyRef.name, 's3-creds');
    assert.equal(env.get('BUCKET').value, 'backups');
    const bad = await helmTemplate('tally', { set: ['backup.postgresql.enabled=true', 'backup.postgresql.objectStorage.enabled=true', 'backup.postgresql.objectStorage.existingSecret=s3'] });
    assert.equal(bad.ok, false);
    assert.match(bad.stderr, /objectStorage\.bucket is required/);
    const badCron = await helmTemplate('tally', { set: ['backup.postgresql.enabled=true', 'backup.postgresql.schedule=daily'] });
    assert.equal(badCron.ok, false);
    assert.match(badCron.stderr, /backup\.postgresql\.schedule/);
  });

  it('external PostgreSQL: the dump reads its URL and password Secret', async () => {
    const r = await helmTemplate('tally', { set: ['backup.postgresql.enabled=true', 'postgresql.enabled=false', 'externalPostgresql.url=postgres://app@db.example:5432/tally', 'externalPostgresql.existingSecret=db'] });
    assert.ok(r.ok, r.stderr);
    const c = script(r.objects);
    assert.equal(c.env.find((e: any) => e.name === 'DATABASE_URL').value, 'postgres://app@db.example:5432/tally');
    assert.equal(c.env.find((e: any) => e.name === 'PGPASSWORD').valueFrom.secretKeyRef.name, 'db');
  });
});

describe('backups on the test servers (restore drill)', function () {
  this.timeout(240_000);
  let production: Backend;
  let tmp: string;
  before(async function () {
    requireServices(this, 'TEST_DATABASE_URL', 'TEST_CLICKHOUSE_URL');
    production = configuredBackends().find((b) => b.name === 'production')!;
    tmp = await mkdtemp(join(tmpdir(), 'tally-backup-'));
  });
  after(async () => tmp && rm(tmp, { recursive: true, force: true }));

  it("the CronJob's dump script, run as rendered: a pg_restore-able dump, the newest `keep` kept", async () => {
    const r = await helmTemplate('tally', { set: ['backup.postgresql.enabled=true', 'backup.postgresql.keep=2'] });
    assert.ok(r.ok, r.stderr);
    const body = (script(r.objects).args[0] as string).replaceAll('/backup', join(tmp, 'cron'));
    await run('mkdir', ['-p', join(tmp, 'cron')]);
    const env = { PATH: process.env.PATH ?? '', DATABASE_URL: process.env.TEST_DATABASE_URL! };
    for (let i = 0; i < 3; i++) {
      await run('sh', ['-ec', body], { env });
      await new Promise((ok) => setTimeout(ok, 1100)); // file names are by the second
    }
    const files = (await readdir(join(tmp, 'cron'))).sort();
    assert.equal(files.length, 2, files.join(', '));
    assert.ok(files.every((f) => /^tally-\d{8}T\d{6}Z\.dump$/.test(f)));
    const { stdout } = await run('pg_restore', ['--list', join(tmp, 'cron', files[1])]);
    assert.match(stdout, /Archive created at/);
  });

  it('pg_dump/pg_restore of PostgreSQL and FREEZE of ClickHouse 18.16: a service on the restored stores answers as the original did', async () => {
    const a = await startTestService(production);
    let b: TestService | undefined;
    const restoredName = `r_${process.pid}_${Date.now()}`;
    const pgUrl = new URL(process.env.TEST_DATABASE_URL!);
    const restoredPg = Object.assign(new URL(pgUrl.toString()), { pathname: `/${restoredName}` }).toString();
    const ch = createClient({ url: process.env.TEST_CLICKHOUSE_URL! });
    try {
      // Some state: an organisation, a project, a flag, events stored by the worker.
      const org = (await a.admin.post('/admin/orgs', { name: 'Backup drill' })).body;
      const project = (await a.admin.post(`/admin/orgs/${org.id}/projects`, { name: 'drill web' })).body;
      const flag = await a.admin.post('/api/flags', { projectId: project.id, key: 'drill-flag', name: 'Drill', active: true, rules: [{ rolloutPct: 50 }] });
      assert.equal(flag.status, 201, JSON.stringify(flag.body));
      const events = Array.from({ length: 20 }, (_, i) => ({ event: i % 2 ? 'Signed up' : 'Viewed', properties: { token: project.token, distinct_id: `u${i % 5}`, time: 1_760_000_000_000 + i * 1000, $insert_id: `drill-${i}`, n: i } }));
      const tracked = await fetch(`${a.url}/track`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(events) });
      assert.equal(tracked.status, 200, await tracked.text());
      const ok = async (t: TestService, path: string) => {
        const r = await t.admin.get(path);
        assert.equal(r.status, 200, `${path}: ${r.text.slice(0, 300)}`);
        return r.body;
      };
      const answers = async (t: TestService) => ({
        orgs: await ok(t, '/admin/orgs'),
        flags: await ok(t, `/api/flags?projectId=${project.id}`),
        events: await ok(t, `/api/data/events?projectId=${project.id}&from=2025-01-01&to=2026-12-31&limit=100`),
      });
      const stored = (x: any): unknown[] => (Array.isArray(x) ? x : x?.events ?? x?.results ?? []);
      let before = await answers(a);
      for (let i = 0; i < 100 && stored(before.events).length !== 20; i++) {
        await new Promise((r) => setTimeout(r, 200));
        before = await answers(a);
      }
      assert.equal(stored(before.events).length, 20, JSON.stringify(before.events).slice(0, 300));
      assert.ok(JSON.stringify(before.flags).includes('drill-flag'), JSON.stringify(before.flags).slice(0, 300));
      assert.ok(JSON.stringify(before.orgs).includes('Backup drill'));
      const source = new URL(a.svc.deps.config.databaseUrl!).pathname.slice(1);
      const chSource = a.svc.deps.config.clickhouse!.database;

      // PostgreSQL: pg_dump (custom format), then pg_restore into a new database.
      const dump = join(tmp, 'drill.dump');
      await run('pg_dump', ['--format=custom', '--no-owner', `--dbname=${Object.assign(new URL(pgUrl.toString()), { pathname: `/${source}` })}`, `--file=${dump}`]);
      const admin = new pg.Client({ connectionString: pgUrl.toString() });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${restoredName}`);
      await admin.end();
      await run('pg_restore', ['--no-owner', '--exit-on-error', `--dbname=${restoredPg}`, dump]);

      // ClickHouse 18.16: FREEZE each MergeTree table, recreate it in a new database, attach the frozen parts.
      await restoreClickHouseByFreeze(ch, chSource, restoredName);

      // A second service on the restored stores (its migrate re-creates the materialized view).
      b = await startTestService({
        name: 'production',
        provision: async () => ({ env: { DATABASE_URL: restoredPg, CLICKHOUSE_URL: process.env.TEST_CLICKHOUSE_URL!, CLICKHOUSE_DATABASE: restoredName }, overrides: {}, drop: async () => {} }),
      });
      const after = await answers(b);
      assert.deepEqual(after, before);
    } finally {
      await b?.close();
      await a.close();
      const c = new pg.Client({ connectionString: pgUrl.toString() });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${restoredName} WITH (FORCE)`).catch(() => undefined);
      await c.end();
      await ch.command({ query: `DROP DATABASE IF EXISTS ${restoredName}` }).catch(() => undefined);
      await ch.close();
    }
  });
});

/** docs/deploy.md "Backups", ClickHouse before BACKUP existed: FREEZE, SHOW CREATE, copy parts to detached/, ATTACH PART. */
async function restoreClickHouseByFreeze(ch: ClickHouseClient, from: string, to: string): Promise<void> {
  const dataDir = '/var/lib/clickhouse';
  assert.ok((await stat(join(dataDir, 'data'))).isDirectory(), 'the drill reads the local server\'s data directory');
  const rows = async <T>(query: string) => (await ch.query({ query, format: 'JSONEachRow' })).json<T>();
  const tables = await rows<{ name: string }>(`SELECT name FROM system.tables WHERE database = '${from}' AND engine LIKE '%MergeTree' ORDER BY name`);
  assert.ok(tables.length >= 4, tables.map((t) => t.name).join(', '));
  await ch.command({ query: `CREATE DATABASE ${to}` });
  const { uid, gid } = await stat(join(dataDir, 'data'));
  const shadows: string[] = [];
  for (const { name } of tables) {
    await ch.command({ query: `ALTER TABLE ${from}.${name} FREEZE` });
    const increment = (await readFile(join(dataDir, 'shadow/increment.txt'), 'utf8')).trim();
    const frozen = join(dataDir, 'shadow', increment, 'data', from, name);
    shadows.push(join(dataDir, 'shadow', increment));
    const [{ statement }] = await rows<{ statement: string }>(`SHOW CREATE TABLE ${from}.${name}`);
    await ch.command({ query: statement.replace(`CREATE TABLE ${from}.${name}`, `CREATE TABLE ${to}.${name}`) });
    const parts = (await readdir(frozen).catch(() => [] as string[])).filter((p) => /^[^.]+_\d+_\d+_\d+(_\d+)?$/.test(p));
    for (const part of parts) {
      const target = join(dataDir, 'data', to, name, 'detached', part);
      await cp(join(frozen, part), target, { recursive: true });
      await run('chown', ['-R', `${uid}:${gid}`, target]);
      await ch.command({ query: `ALTER TABLE ${to}.${name} ATTACH PART '${part}'` });
    }
  }
  // The frozen copies are hard links kept until removed (a real backup copies them off first).
  for (const dir of shadows) await rm(dir, { recursive: true, force: true });
}
