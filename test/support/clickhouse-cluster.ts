import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Backend } from './backends.js';
import { startTestService, type TestService } from './service.js';
import { Child, freePort, spawnLogged, tempDir, waitFor } from './processes.js';

/**
 * A two-shard ClickHouse cluster on loopback for the cluster-mode tests: one ZooKeeper (Debian's
 * `zookeeper` package, for ON CLUSTER DDL) and two clickhouse-server processes (the machine's
 * 18.16 binary) with their own ports, data dirs, `remote_servers` (cluster `tally` = two shards,
 * one replica each) and `{shard}`/`{replica}` macros. Nothing is skipped: a missing binary or a
 * server that does not come up fails the run with its log's path.
 */
export const CLUSTER_NAME = 'tally';

function requireFile(file: string, hint: string) {
  if (!fs.existsSync(file)) throw new Error(`${file} is missing (${hint}); the ClickHouse cluster tests need it`);
}

interface Shard { httpPort: number; tcpPort: number; interPort: number; dir: string; child?: Child }

export class ClickHouseCluster {
  private constructor(readonly dir: string, readonly shards: Shard[], private zk: Child) {}

  /**
   * Two shards of one server each; with `replicated`, instead one shard of two replicas
   * (internal_replication, `{replica}` macros r1/r2) for ReplicatedReplacingMergeTree.
   */
  static async start(opts: { replicated?: boolean } = {}): Promise<ClickHouseCluster> {
    requireFile('/usr/share/java/zookeeper.jar', 'apt-get install zookeeper, or run scripts/services.sh');
    requireFile('/usr/bin/java', 'apt-get install zookeeper pulls in a JRE');
    requireFile('/usr/sbin/clickhouse-server', 'apt-get install clickhouse-server, or run scripts/services.sh');
    requireFile('/etc/clickhouse-server/config.xml', 'the config template comes from the Debian package');
    const dir = tempDir('chcluster-');
    // ZooKeeper: standalone, own data dir and client port, admin server off.
    const zkPort = await freePort();
    fs.mkdirSync(path.join(dir, 'zk'), { recursive: true });
    const zkCfg = path.join(dir, 'zoo.cfg');
    fs.writeFileSync(zkCfg, `tickTime=500\ninitLimit=10\nsyncLimit=5\ndataDir=${path.join(dir, 'zk')}\nclientPort=${zkPort}\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=ruok\n`);
    const cp = ['/usr/share/java/zookeeper.jar', ...fs.readdirSync('/usr/share/java').filter((f) => /^(zookeeper-jute|slf4j|log4j|netty|commons-|jline|metrics|snappy|audience|jetty|javax)/.test(f)).map((f) => `/usr/share/java/${f}`)].join(':');
    const zk = spawnLogged('zookeeper', '/usr/bin/java', ['-Xmx256m', '-cp', `/etc/zookeeper/conf:${cp}`, '-Dzookeeper.log.dir=' + dir, 'org.apache.zookeeper.server.quorum.QuorumPeerMain', zkCfg], { logDir: dir, cwd: dir });
    const shards: Shard[] = [];
    for (let i = 0; i < 2; i++) {
      shards.push({ httpPort: await freePort(), tcpPort: await freePort(), interPort: await freePort(), dir: path.join(dir, `shard${i + 1}`) });
    }
    const cluster = new ClickHouseCluster(dir, shards, zk);
    try {
      await waitFor(`zookeeper on ${zkPort} (log: ${zk.logFile})`, async () => {
        if (!zk.running) throw new Error(`zookeeper exited: see ${zk.logFile}`);
        return tcpOpen(zkPort);
      }, 60_000, 200);
      const replica = (s: Shard) => `<replica><host>127.0.0.1</host><port>${s.tcpPort}</port></replica>`;
      const remote = `<remote_servers><${CLUSTER_NAME}>${opts.replicated
        ? `<shard><internal_replication>true</internal_replication>${shards.map(replica).join('')}</shard>`
        : shards.map((s) => `<shard><internal_replication>false</internal_replication>${replica(s)}</shard>`).join('')}</${CLUSTER_NAME}></remote_servers>`;
      const zkXml = `<zookeeper><node><host>127.0.0.1</host><port>${zkPort}</port></node><session_timeout_ms>10000</session_timeout_ms></zookeeper>`;
      const template = fs.readFileSync('/etc/clickhouse-server/config.xml', 'utf8');
      await Promise.all(shards.map(async (s, i) => {
        const data = path.join(s.dir, 'data') + '/';
        fs.mkdirSync(path.join(data, 'tmp'), { recursive: true });
        fs.mkdirSync(path.join(data, 'user_files'), { recursive: true });
        fs.mkdirSync(path.join(s.dir, 'log'), { recursive: true });
        const xml = template
          .replace(/<http_port>\d+<\/http_port>/, `<http_port>${s.httpPort}</http_port>`)
          .replace(/<tcp_port>\d+<\/tcp_port>/, `<tcp_port>${s.tcpPort}</tcp_port>`)
          .replace(/<interserver_http_port>\d+<\/interserver_http_port>/, `<interserver_http_port>${s.interPort}</interserver_http_port>`)
          .replace(/<remote_servers incl="clickhouse_remote_servers" >[\s\S]*?<\/remote_servers>/, remote)
          .replace(/<zookeeper incl="zookeeper-servers" optional="true" \/>/, zkXml)
          .replace(/<macros incl="macros" optional="true" \/>/, `<macros><shard>${opts.replicated ? 1 : i + 1}</shard><replica>r${opts.replicated ? i + 1 : 1}</replica></macros>`)
          .replace(/\/var\/lib\/clickhouse\//g, data)
          .replace(/\/var\/log\/clickhouse-server\//g, path.join(s.dir, 'log') + '/')
          .replace(/<listen_host>::<\/listen_host>/g, '')
          .replace(/<interserver_http_host>[^<]*<\/interserver_http_host>/g, '')
          .replace('</yandex>', '<interserver_http_host>127.0.0.1</interserver_http_host></yandex>')
          .replace(/<users_config>[^<]*<\/users_config>/, `<users_config>/etc/clickhouse-server/users.xml</users_config>`);
        const configFile = path.join(s.dir, 'config.xml');
        fs.writeFileSync(configFile, xml);
        s.child = spawnLogged('clickhouse-server', '/usr/sbin/clickhouse-server', [`--config-file=${configFile}`], { logDir: s.dir, cwd: s.dir });
        await waitFor(`clickhouse-server shard ${i + 1} (log: ${s.child.logFile})`, async () => {
          if (!s.child!.running) throw new Error(`clickhouse-server shard ${i + 1} exited: see ${s.child!.logFile}`);
          const r = await fetch(`http://127.0.0.1:${s.httpPort}/ping`).catch(() => undefined);
          return !!r && r.ok;
        }, 60_000, 200);
      }));
    } catch (err) {
      await cluster.close(false);
      throw err;
    }
    return cluster;
  }

  /** The first shard's HTTP URL: the service talks to one node, which fans out. */
  get url() { return this.shardUrl(0); }
  shardUrl(i: number) { return `http://127.0.0.1:${this.shards[i].httpPort}`; }

  /** Runs a read on one shard (e.g. count its local table). */
  async query(shard: number, sql: string): Promise<string> {
    const r = await fetch(this.shardUrl(shard), { method: 'POST', body: sql });
    const text = await r.text();
    if (!r.ok) throw new Error(`shard ${shard + 1}: ${text}`);
    return text.trim();
  }

  async close(removeDir = true) {
    await Promise.all(this.shards.map((s) => s.child?.kill('SIGTERM', 30_000)));
    await this.zk.kill('SIGTERM', 10_000);
    if (removeDir) fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

async function tcpOpen(port: number): Promise<boolean> {
  const net = (await import('node:net')).default;
  return new Promise<boolean>((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}

/**
 * A backend for startTestService: metadata in an in-memory SQLite (the cluster suites need no
 * PostgreSQL) and a fresh ClickHouse database on the two-shard cluster (CLICKHOUSE_CLUSTER),
 * dropped ON CLUSTER afterwards.
 */
export function clusterBackend(cluster: ClickHouseCluster): Backend {
  return {
    name: 'production',
    async provision() {
      const name = `t_${randomBytes(5).toString('hex')}`;
      return {
        env: { CLICKHOUSE_URL: cluster.url, CLICKHOUSE_DATABASE: name, CLICKHOUSE_CLUSTER: CLUSTER_NAME },
        overrides: { sqliteFile: ':memory:' },
        async drop() {
          await cluster.query(0, `DROP DATABASE IF EXISTS ${name} ON CLUSTER ${CLUSTER_NAME}`).catch(() => undefined);
        },
      };
    },
  };
}

/** What a cluster suite reads once its before hook ran: the cluster, the service and its ClickHouse database. */
export interface ClusterService { cluster: ClickHouseCluster; t: TestService; database: string }

/**
 * Registers the suite's before/after hooks: starts the cluster (`replicated` as for start), a service
 * on it with `env`, and closes both afterwards. The returned object is filled in by the before hook.
 */
export function useClusterService(env: Record<string, string>, opts: { replicated?: boolean } = {}): ClusterService {
  const held = {} as ClusterService;
  before(async function () {
    this.timeout(120_000);
    held.cluster = await ClickHouseCluster.start(opts);
    held.t = await startTestService(clusterBackend(held.cluster), env);
    held.database = held.t.svc.deps.config.clickhouse!.database;
  });
  after(async function () {
    this.timeout(120_000);
    await held.t?.close();
    await held.cluster?.close();
  });
  return held;
}
