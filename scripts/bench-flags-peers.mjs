/**
 * The peer servers of `npm run bench:flags`, each run by scripts/bench-flags.ts in its own process
 * with plain node, no TypeScript loader:
 *
 *   node scripts/bench-flags-peers.mjs unleash   unleash-server (frontend API) on BENCH_UNLEASH_DB
 *   node scripts/bench-flags-peers.mjs proxy     @unleash/proxy in front of BENCH_UNLEASH_URL
 *   node scripts/bench-flags-peers.mjs floor     a bare node:http server answering BENCH_FLOOR_BODY
 *
 * unleash-server and @unleash/proxy are not dependencies of this project: the benchmark installs
 * them into .bench-peers/ (BENCH_PEERS_DIR). Each mode prints `listening on <url>` once it serves.
 */
import http from 'node:http';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const mode = process.argv[2];
const peers = process.env.BENCH_PEERS_DIR;
const quiet = { debug() {}, info() {}, warn() {}, error: (...a) => console.error(...a), fatal: (...a) => console.error(...a) };

async function unleash() {
  const entry = path.join(peers, 'node_modules/unleash-server/dist/lib/server-impl.js');
  const { start } = await import(pathToFileURL(entry).href);
  const db = new URL(process.env.BENCH_UNLEASH_DB);
  const [admin, backend, frontend] = process.env.BENCH_UNLEASH_TOKENS.split(',');
  const token = (secret, type) => {
    const [project, rest] = secret.split(':');
    return { secret, type, projects: [project], environment: rest.split('.')[0], tokenName: `bench-${type}` };
  };
  const instance = await start({
    db: {
      host: db.hostname, port: Number(db.port || 5432), user: decodeURIComponent(db.username), password: decodeURIComponent(db.password),
      database: db.pathname.slice(1), ssl: false, pool: { min: 0, max: 4 },
    },
    server: { host: '127.0.0.1', port: 0, gracefulShutdownEnable: false },
    authentication: {
      type: 'open-source', enableApiToken: true, createAdminUser: false,
      initApiTokens: [token(admin, 'admin'), token(backend, 'backend'), token(frontend, 'frontend')],
    },
    // new definitions reach the frontend API's cache within a second (default 45 min)
    frontendApi: { refreshIntervalInMs: 1000 },
    getLogger: () => quiet,
    telemetry: false,
    versionCheck: { enable: false },
    enableOAS: false,
  });
  const address = instance.server.address();
  console.log(`listening on http://127.0.0.1:${address.port}`);
}

async function proxy() {
  const require = createRequire(path.join(peers, 'package.json'));
  const { createApp } = require('@unleash/proxy');
  const app = createApp({
    unleashUrl: process.env.BENCH_UNLEASH_URL + '/api/',
    unleashApiToken: process.env.BENCH_UNLEASH_BACKEND_TOKEN,
    clientKeys: [process.env.BENCH_PROXY_KEY],
    refreshInterval: 1000,
    logLevel: 'error',
  });
  const server = app.listen(0, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${server.address().port}`));
}

function floor() {
  const body = Buffer.from(process.env.BENCH_FLOOR_BODY);
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
      res.end(body);
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${server.address().port}`));
}

const modes = { unleash, proxy, floor };
if (!modes[mode]) {
  console.error(`usage: bench-flags-peers.mjs ${Object.keys(modes).join('|')}`);
  process.exit(2);
}
await modes[mode]();
