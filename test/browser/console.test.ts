import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import http from 'node:http';
import Koa from 'koa';
import type { AddressInfo } from 'node:net';
import { forEachBackend } from '../support/backends.js';
import { startTestService, type TestService } from '../support/service.js';
import { CONSOLE_DIST, consoleMiddleware } from '../../apps/server/src/console/static.js';
import { ensureConsoleBuilt, initialLoadBytes } from '../support/browser.js';

/** Kept for suites that imported it from here; new code imports test/support/browser.js (importing a test file registers its suites too). */
export { ensureConsoleBuilt };

/** The web console's build and how the API serves it (the browser tests are in console-browser). */

function get(url: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
    http.get(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    }).on('error', reject);
  });
}

describe('web console build', function () {
  this.timeout(120_000);
  before(() => ensureConsoleBuilt());

  it('keeps the initial load (JS + CSS, gzip) under 250 KB and fetches nothing from another origin', () => {
    const load = initialLoadBytes();
    assert.ok(load.files.some((f) => f.endsWith('.js')) && load.files.some((f) => f.endsWith('.css')), load.files.join(', '));
    assert.ok(load.gzip < 250 * 1024, `initial load ${load.gzip} bytes gzip (${load.raw} raw) over 250 KB`);
    for (const f of fs.readdirSync(path.join(CONSOLE_DIST, 'assets'))) {
      const text = fs.readFileSync(path.join(CONSOLE_DIST, 'assets', f), 'utf8');
      assert.doesNotMatch(text, /@import\s+url\(|fonts\.googleapis|cdn\.jsdelivr|unpkg\.com/, f);
    }
    const index = fs.readFileSync(path.join(CONSOLE_DIST, 'index.html'), 'utf8');
    assert.doesNotMatch(index, /(?:src|href)="(?:https?:)?\/\//, 'index.html loads nothing from another origin');
  });
});

forEachBackend('web console served by the API', (backend) => {
  let t: TestService;
  before(async function () {
    this.timeout(120_000);
    ensureConsoleBuilt();
    t = await startTestService(backend, { OIDC_CLIENT_ID: 'tally-console' });
  });
  after(async () => t?.close());

  it('answers the console at / and at every bookmarkable address (the browser routes them)', async () => {
    const root = await get(t.url + '/');
    assert.equal(root.status, 200);
    assert.match(String(root.headers['content-type']), /text\/html/);
    assert.match(root.body.toString(), /<div id="app">/);
    assert.equal(root.headers['cache-control'], 'no-cache');
    assert.match(String(root.headers['content-security-policy']), /default-src 'self'/);
    for (const p of ['/sign-in', '/auth/callback?code=x&state=y', '/projects/1/boards/2', '/projects/1/insights', '/projects/1/reports/3', '/projects/1/flags', '/projects/1/people', '/projects/1/events']) {
      const r = await get(t.url + p);
      assert.equal(r.status, 200, p);
      assert.equal(r.body.toString(), root.body.toString(), p);
    }
  });

  it('serves the hashed assets compressed and cached, and 404s an asset that does not exist', async () => {
    const index = (await get(t.url + '/')).body.toString();
    const js = index.match(/src="(\/assets\/[^"]+\.js)"/)![1];
    const r = await get(t.url + js, { 'accept-encoding': 'gzip' });
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-encoding'], 'gzip');
    assert.match(String(r.headers['content-type']), /javascript/);
    assert.match(String(r.headers['cache-control']), /immutable/);
    assert.equal(zlib.gunzipSync(r.body).toString(), fs.readFileSync(path.join(CONSOLE_DIST, js)).toString());
    const plain = await get(t.url + js);
    assert.equal(plain.headers['content-encoding'], undefined);
    const missing = await get(t.url + '/assets/nope-123.js');
    assert.equal(missing.status, 404);
    assert.equal(JSON.parse(missing.body.toString()).error, 'not found');
    const traversal = await get(t.url + '/assets/..%2f..%2fpackage.json');
    assert.equal(traversal.status, 404);
  });

  it('never shadows the API: unknown API paths keep their JSON 404, API routes answer as before', async () => {
    for (const p of ['/api/nope', '/api/boards/x/y/z', '/admin/nope', '/track/nope', '/flags/nope', '/health/nope', '/openapi.json/x', '/decide']) {
      const r = await get(t.url + p);
      assert.equal(r.status, 404, p);
      assert.match(String(r.headers['content-type']), /json/, p);
    }
    assert.equal((await get(t.url + '/health')).status, 200);
    assert.equal((await get(t.url + '/api/projects')).status, 401);
    assert.equal(JSON.parse((await get(t.url + '/openapi.json')).body.toString()).openapi.startsWith('3'), true);
    // A POST to a console address is no route.
    const post = await t.anon.post('/projects/1/boards/2', {});
    assert.equal(post.status, 404);
  });

  it('publishes the identity provider settings the console signs in with', async () => {
    const r = await get(t.url + '/console/config.json');
    assert.equal(r.status, 200);
    assert.deepEqual(JSON.parse(r.body.toString()), { oidcIssuer: t.idp.issuer, oidcClientId: 'tally-console' });
  });
});

describe('web console not built', () => {
  it('still answers: a plain page that says how to build it', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'console-missing-'));
    const app = new Koa();
    app.use(consoleMiddleware({ oidc: undefined }, empty + path.sep));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const r = await get(url + '/projects/1/boards/1');
      assert.equal(r.status, 200);
      assert.match(r.body.toString(), /npm run build:console/);
      const cfg = await get(url + '/console/config.json');
      assert.deepEqual(JSON.parse(cfg.body.toString()), { oidcIssuer: null, oidcClientId: null });
    } finally {
      server.close();
      fs.rmSync(empty, { recursive: true, force: true });
    }
  });
});
