import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { createClient, type ClickHouseClient } from '@clickhouse/client';
import { configuredBackends, requireServices, type Backend } from '../support/backends.js';
import { CHART_DIR, find, helmTemplate, validateObject, type K8sObject } from '../support/chart.js';
import { startTestService, type TestService } from '../support/service.js';

/**
 * Backups: the chart's optional PostgreSQL and ClickHouse CronJobs (rendered for a PVC/disk and for
 * object storage), the NetworkPolicies evaluated against their pods' labels, their scripts run for
 * real against the test PostgreSQL and ClickHouse, and the restore drill of docs/deploy.md
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

const chScript = (o: K8sObject[]) => find(o, 'CronJob', 'tally-clickhouse-backup').spec.jobTemplate.spec.template.spec.containers[0];

/** Whether a label selector (matchLabels and matchExpressions) selects these labels. */
function selects(selector: any, labels: Record<string, string>): boolean {
  if (!selector) return false;
  const byLabels = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  const byExpressions = (selector.matchExpressions ?? []).every((e: any) =>
    e.operator === 'In' ? e.values.includes(labels[e.key]) : e.operator === 'NotIn' ? !e.values.includes(labels[e.key])
      : e.operator === 'Exists' ? e.key in labels : e.operator === 'DoesNotExist' ? !(e.key in labels) : false);
  return byLabels && byExpressions;
}
/** Whether a pod of the policy's namespace with these labels may open a connection to the pods the policy selects. */
function admits(policy: K8sObject, labels: Record<string, string>): boolean {
  if (!policy.spec.policyTypes.includes('Ingress')) return true;
  return (policy.spec.ingress ?? []).some((rule: any) => !rule.from || rule.from.some((peer: any) => !peer.namespaceSelector && !peer.ipBlock && selects(peer.podSelector, labels)));
}
const podLabels = (o: K8sObject) => (o.kind === 'CronJob' ? o.spec.jobTemplate.spec.template : o.spec.template).metadata.labels as Record<string, string>;

describe('ClickHouse backup CronJob and NetworkPolicies (chart)', function () {
  this.timeout(120_000);

  it('off by default; to a disk the bundled ClickHouse declares on its own volume (kept on uninstall), the job only sending SQL', async () => {
    const off = await helmTemplate('tally');
    assert.ok(!off.objects.some((o) => o.metadata.name === 'tally-clickhouse-backup' || o.metadata.name === 'tally-clickhouse-backups'));
    assert.doesNotMatch(find(off.objects, 'ConfigMap', 'tally-clickhouse').data['server.xml'], /backups/);
    const r = await helmTemplate('tally', { set: ['backup.clickhouse.enabled=true', 'backup.clickhouse.schedule=0 4 * * *'] });
    assert.ok(r.ok, r.stderr);
    const cron = find(r.objects, 'CronJob', 'tally-clickhouse-backup');
    await validateObject(cron);
    assert.equal(cron.spec.schedule, '0 4 * * *');
    assert.equal(cron.spec.concurrencyPolicy, 'Forbid');
    const c = chScript(r.objects);
    assert.match(c.image, /^curlimages\/curl:\d+\.\d+\.\d+$/);
    assert.equal(c.securityContext.readOnlyRootFilesystem, true);
    const env = new Map<string, any>(c.env.map((e: any) => [e.name, e]));
    assert.equal(env.get('CLICKHOUSE_URL').value, 'http://tally-clickhouse:8123');
    assert.equal(env.get('CLICKHOUSE_PASSWORD').valueFrom.secretKeyRef.key, 'CLICKHOUSE_PASSWORD');
    assert.equal(env.get('BACKUP_METHOD').value, 'auto');
    assert.deepEqual([env.get('BACKUP_TARGET').value, env.get('BACKUP_DISK').value], ['disk', 'backups']);
    // The bundled server (25.8) declares the disk, allows BACKUP to it, and mounts its volume there.
    const xml = find(r.objects, 'ConfigMap', 'tally-clickhouse').data['server.xml'];
    assert.match(xml, /<backups><type>local<\/type><path>\/var\/lib\/clickhouse-backups\/<\/path><\/backups>/);
    assert.match(xml, /<allowed_disk>backups<\/allowed_disk>/);
    const sts = find(r.objects, 'StatefulSet', 'tally-clickhouse').spec.template.spec;
    assert.deepEqual(sts.containers[0].volumeMounts.find((m: any) => m.name === 'backups'), { name: 'backups', mountPath: '/var/lib/clickhouse-backups' });
    assert.equal(sts.volumes.find((v: any) => v.name === 'backups').persistentVolumeClaim.claimName, 'tally-clickhouse-backups');
    assert.equal(find(r.objects, 'PersistentVolumeClaim', 'tally-clickhouse-backups').metadata.annotations?.['helm.sh/resource-policy'], 'keep');
    const bundled = await readFile(join(CHART_DIR, 'values.yaml'), 'utf8');
    assert.match(bundled, /clickhouse-server, tag: "(2[3-9]|[3-9]\d)\./, 'the bundled server has BACKUP (22.8 and later), which auto picks');
  });

  it('to S3 (the server writes there, keys from an existing Secret); missing url or Secret and an unknown target refused', async () => {
    const r = await helmTemplate('tally', { set: ['backup.clickhouse.enabled=true', 'backup.clickhouse.target=s3', 'backup.clickhouse.objectStorage.url=https://b.s3.eu-west-1.amazonaws.com/tally/', 'backup.clickhouse.objectStorage.existingSecret=s3-creds'] });
    assert.ok(r.ok, r.stderr);
    await validateObject(find(r.objects, 'CronJob', 'tally-clickhouse-backup'));
    const env = new Map<string, any>(chScript(r.objects).env.map((e: any) => [e.name, e]));
    assert.equal(env.get('S3_URL').value, 'https://b.s3.eu-west-1.amazonaws.com/tally');
    assert.equal(env.get('AWS_SECRET_ACCESS_KEY').valueFrom.secretKeyRef.name, 's3-creds');
    assert.ok(!r.objects.some((o) => o.metadata.name === 'tally-clickhouse-backups'), 'no disk volume for S3');
    assert.doesNotMatch(find(r.objects, 'ConfigMap', 'tally-clickhouse').data['server.xml'], /allowed_disk/);
    const noUrl = await helmTemplate('tally', { set: ['backup.clickhouse.enabled=true', 'backup.clickhouse.target=s3', 'backup.clickhouse.objectStorage.existingSecret=s3'] });
    assert.equal(noUrl.ok, false);
    assert.match(noUrl.stderr, /objectStorage\.url is required/);
    const noSecret = await helmTemplate('tally', { set: ['backup.clickhouse.enabled=true', 'backup.clickhouse.target=s3', 'backup.clickhouse.objectStorage.url=https://s3.example/b'] });
    assert.equal(noSecret.ok, false);
    assert.match(noSecret.stderr, /objectStorage\.existingSecret is required/);
    const bad = await helmTemplate('tally', { set: ['backup.clickhouse.enabled=true', 'backup.clickhouse.target=nfs'] });
    assert.equal(bad.ok, false);
    assert.match(bad.stderr, /backup\.clickhouse\.target/);
  });

  it('external ClickHouse: the job reads its URL, user and password Secret; the disk is one the servers declare', async () => {
    const r = await helmTemplate('tally', { set: ['backup.clickhouse.enabled=true', 'backup.clickhouse.disk=s3_backups', 'clickhouse.enabled=false', 'externalClickhouse.url=https://ch.example:8443', 'externalClickhouse.existingSecret=ch'] });
    assert.ok(r.ok, r.stderr);
    const env = new Map<string, any>(chScript(r.objects).env.map((e: any) => [e.name, e]));
    assert.equal(env.get('CLICKHOUSE_URL').value, 'https://ch.example:8443');
    assert.equal(env.get('CLICKHOUSE_PASSWORD').valueFrom.secretKeyRef.name, 'ch');
    assert.equal(env.get('BACKUP_DISK').value, 's3_backups');
    assert.ok(!r.objects.some((o) => o.kind === 'PersistentVolumeClaim' && o.metadata.name === 'tally-clickhouse-backups'));
  });

  it('with NetworkPolicies on, each store admits its own backup pods (and the API and worker), and no other store\'s', async () => {
    const r = await helmTemplate('tally', { set: ['networkPolicy.enabled=true', 'backup.postgresql.enabled=true', 'backup.clickhouse.enabled=true'] });
    assert.ok(r.ok, r.stderr);
    const policy = (store: string) => {
      const p = find(r.objects, 'NetworkPolicy', `tally-${store}`);
      assert.ok(selects(p.spec.podSelector, podLabels(find(r.objects, 'StatefulSet', `tally-${store}`))), `tally-${store} applies to the ${store} pods`);
      return p;
    };
    const pg = policy('postgresql');
    const ch = policy('clickhouse');
    const nats = policy('nats');
    const pgBackup = podLabels(find(r.objects, 'CronJob', 'tally-pg-backup'));
    const chBackup = podLabels(find(r.objects, 'CronJob', 'tally-clickhouse-backup'));
    assert.equal(admits(pg, pgBackup), true, 'pg_dump reaches PostgreSQL');
    assert.equal(admits(ch, chBackup), true, 'the ClickHouse backup job reaches ClickHouse');
    assert.equal(admits(pg, chBackup), false);
    assert.equal(admits(ch, pgBackup), false);
    assert.equal(admits(nats, pgBackup) || admits(nats, chBackup), false);
    for (const store of [pg, ch]) for (const role of ['api', 'worker']) assert.ok(admits(store, podLabels(find(r.objects, 'Deployment', `tally-${role}`))), `${store.metadata.name} admits ${role}`);
    assert.equal(admits(pg, { ...pgBackup, 'app.kubernetes.io/instance': 'other' }), false, 'another release\'s backup pods are not admitted');
    // Without backups, the stores admit only the API and worker again.
    const plain = await helmTemplate('tally', { set: ['networkPolicy.enabled=true'] });
    assert.equal(admits(find(plain.objects, 'NetworkPolicy', 'tally-postgresql'), pgBackup), false);
  });
});

describe('ClickHouse backup script on the test server (18.16: FREEZE)', function () {
  this.timeout(120_000);
  let url: string;
  let ch: ClickHouseClient;
  let body: string;
  const db = `bk_${process.pid}_${Date.now()}`;
  const shadows: string[] = [];
  before(async function () {
    requireServices(this, 'TEST_CLICKHOUSE_URL');
    url = process.env.TEST_CLICKHOUSE_URL!;
    ch = createClient({ url });
    const r = await helmTemplate('tally', { set: ['backup.clickhouse.enabled=true'] });
    assert.ok(r.ok, r.stderr);
    body = chScript(r.objects).args[0];
    await ch.command({ query: `CREATE DATABASE ${db}` });
    await ch.command({ query: `CREATE TABLE ${db}.events (day Date, id UInt64, name String) ENGINE = MergeTree PARTITION BY toYYYYMM(day) ORDER BY id` });
    await ch.command({ query: `CREATE TABLE ${db}.profiles (id UInt64, v String) ENGINE = ReplacingMergeTree ORDER BY id` });
    await ch.command({ query: `INSERT INTO ${db}.events VALUES ('2025-01-03', 1, 'a'), ('2025-02-03', 2, 'b')` });
    await ch.command({ query: `INSERT INTO ${db}.profiles VALUES (1, 'x')` });
    await ch.command({ query: `CREATE DATABASE ${db}_empty` });
  });
  after(async () => {
    for (const dir of shadows) await rm(dir, { recursive: true, force: true });
    await ch?.command({ query: `DROP DATABASE IF EXISTS ${db}` }).catch(() => undefined);
    await ch?.command({ query: `DROP DATABASE IF EXISTS ${db}_empty` }).catch(() => undefined);
    await ch?.close();
  });
  const runScript = (env: Record<string, string>) => run('sh', ['-ec', body], {
    env: { PATH: process.env.PATH ?? '', CLICKHOUSE_URL: url, CLICKHOUSE_USER: 'default', CLICKHOUSE_PASSWORD: '', CLICKHOUSE_DATABASE: db, BACKUP_METHOD: 'auto', BACKUP_TARGET: 'disk', BACKUP_DISK: 'backups', ...env },
  });

  it('as rendered, method auto: FREEZE of every MergeTree table into the server\'s shadow/<name>/, the parts holding the rows', async () => {
    const { stdout } = await runScript({});
    assert.match(stdout, /^ClickHouse 18\.16\.\S+: freeze of database bk_/m);
    const name = /as (tally_\d{8}T\d{6}Z)$/m.exec(stdout)?.[1];
    assert.ok(name, stdout);
    const dir = join('/var/lib/clickhouse/shadow', name);
    shadows.push(dir);
    assert.match(stdout, /^froze events$/m);
    assert.match(stdout, /^froze profiles$/m);
    const events = await readdir(join(dir, 'data', db, 'events'));
    assert.equal(events.filter((p) => /^20250[12]_/.test(p)).length, 2, events.join(', '));
    for (const part of events) assert.ok((await stat(join(dir, 'data', db, 'events', part, 'checksums.txt'))).size > 0);
    assert.equal((await readdir(join(dir, 'data', db, 'profiles'))).length, 1);
  });

  it('fails loudly (non-zero, the reason on stderr) when there is nothing to back up or the server refuses', async () => {
    const empty = await runScript({ CLICKHOUSE_DATABASE: `${db}_empty` }).then(() => undefined, (e) => e);
    assert.ok(empty, 'no tables: the job must fail');
    assert.notEqual(empty.code, 0);
    assert.match(empty.stderr, /no MergeTree table in database bk_\S+_empty/);
    // BACKUP forced on a server without it: ClickHouse's refusal is the job's failure.
    const refused = await runScript({ BACKUP_METHOD: 'backup' }).then(() => undefined, (e) => e);
    assert.ok(refused, 'a refused BACKUP must fail the job');
    assert.match(refused.stderr, /ClickHouse refused: Code: 62/);
    const unreachable = await runScript({ CLICKHOUSE_URL: 'http://127.0.0.1:9' }).then(() => undefined, (e) => e);
    assert.ok(unreachable, 'an unreachable server must fail the job');
    assert.match(unreachable.stderr, /ClickHouse refused/);
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
