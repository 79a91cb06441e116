import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { drained } from '../support/ingestion.js';

const require = createRequire(import.meta.url);
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** The real browser SDK, as a customer's site loads it (UMD bundle defining `window.mixpanel`). */
const MIXPANEL_BUNDLE = require.resolve('mixpanel-browser/dist/mixpanel.umd.js');

/** A raw request (fetch refuses to send TRACE and to read some CORS headers). */
function raw(url: string, method: string, headers: Record<string, string> = {}, body?: string) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
    const req = http.request(url, { method, headers }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The customer's site: another origin (another port) serving a page and the SDK bundle. */
async function startSite(): Promise<{ origin: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (req.url === '/mixpanel.js') {
      res.writeHead(200, { 'content-type': 'text/javascript' });
      res.end(fs.readFileSync(MIXPANEL_BUNDLE));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><html><head><script src="/mixpanel.js"></script></head><body>shop</body></html>');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  // `localhost` for the site and 127.0.0.1 for the API: two origins, as on a customer's domain.
  return { origin: `http://localhost:${(server.address() as AddressInfo).port}`, close: () => new Promise((r) => server.close(() => r())) };
}

forEachBackend('HTTP edge: CORS and methods', (backend) => {
  let t: TestService;
  let acme: Tenant;
  before(async () => {
    t = await startTestService(backend, { CORS_ORIGINS: 'https://app.example.test' });
    acme = await createTenant(t, 'Edge');
  });
  after(async () => t?.close());

  it('answers a preflight on the public SDK routes for any origin, echoing it with credentials and the asked headers', async () => {
    for (const path of ['/track', '/track/', '/engage', '/alias', '/flags/evaluate', '/v/0.14/track']) {
      const r = await raw(t.url + path, 'OPTIONS', {
        origin: 'https://shop.customer.test',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, traceparent, x-custom-header',
      });
      assert.equal(r.status, 204, path);
      assert.equal(r.headers['access-control-allow-origin'], 'https://shop.customer.test', path);
      assert.equal(r.headers['access-control-allow-credentials'], 'true');
      assert.match(String(r.headers['access-control-allow-methods']), /POST/);
      assert.equal(r.headers['access-control-allow-headers'], 'authorization, traceparent, x-custom-header');
      assert.equal(r.headers['access-control-max-age'], '7200');
      assert.match(String(r.headers.vary), /Origin/);
    }
  });

  it('puts the origin on ingestion answers, errors included, and exposes Retry-After', async () => {
    const ok = await raw(t.url + '/track', 'POST', { origin: 'https://shop.customer.test', 'content-type': 'application/json' },
      JSON.stringify([{ event: 'e', properties: { token: acme.project.token, distinct_id: 'd1' } }]));
    assert.equal(ok.status, 200, ok.body);
    assert.equal(ok.headers['access-control-allow-origin'], 'https://shop.customer.test');
    assert.match(String(ok.headers['access-control-expose-headers']), /Retry-After/);
    const bad = await raw(t.url + '/track', 'POST', { origin: 'https://shop.customer.test', 'content-type': 'application/json' }, '{nope');
    assert.equal(bad.status, 400);
    assert.equal(bad.headers['access-control-allow-origin'], 'https://shop.customer.test');
    assert.equal(JSON.parse(bad.body).status, 0);
  });

  it('answers /api/* only for the origins in CORS_ORIGINS, and never sends CORS headers for flag secrets or admin routes', async () => {
    const listed = await raw(`${t.url}/api/projects`, 'OPTIONS', { origin: 'https://app.example.test', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' });
    assert.equal(listed.status, 204);
    assert.equal(listed.headers['access-control-allow-origin'], 'https://app.example.test');
    const get = await raw(`${t.url}/api/projects`, 'GET', { origin: 'https://app.example.test', authorization: `Bearer ${acme.tokens.viewer}` });
    assert.equal(get.status, 200);
    assert.equal(get.headers['access-control-allow-origin'], 'https://app.example.test');
    for (const [path, origin] of [['/api/projects', 'https://evil.test'], ['/flags/local-evaluation', 'https://shop.customer.test'], ['/admin/orgs', 'https://app.example.test']]) {
      const pre = await raw(t.url + path, 'OPTIONS', { origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' });
      assert.equal(pre.headers['access-control-allow-origin'], undefined, `${path} from ${origin}`);
      assert.equal(pre.headers['access-control-allow-credentials'], undefined);
    }
  });

  it('answers methods no route serves with 405, Allow and a JSON envelope (404 on unknown paths), never 5xx', async () => {
    for (const method of ['TRACE', 'PROPFIND', 'MKCOL', 'LOCK', 'PURGE']) {
      const r = await raw(`${t.url}/api/projects`, method, { authorization: `Bearer ${acme.tokens.owner}` });
      assert.equal(r.status, 405, `${method}: ${r.body}`);
      assert.equal(r.headers.allow, 'GET, POST, HEAD, OPTIONS');
      assert.equal(JSON.parse(r.body).code, 'method_not_allowed');
      const track = await raw(`${t.url}/track`, method);
      assert.equal(track.status, 405);
      assert.equal(JSON.parse(track.body).status, 0, 'the SDK routes keep their own envelope');
      const unknown = await raw(`${t.url}/nowhere`, method);
      assert.equal(unknown.status, 404);
      assert.equal(JSON.parse(unknown.body).code, 'route_not_found');
    }
    const put = await raw(`${t.url}/api/projects`, 'PUT', { authorization: `Bearer ${acme.tokens.owner}` });
    assert.equal(put.status, 405);
    assert.equal(put.headers.allow, 'GET, POST, HEAD, OPTIONS');
  });
});

const haveChromium = fs.existsSync(CHROMIUM);

forEachBackend('mixpanel-browser on another origin', (backend) => {
  let t: TestService;
  let acme: Tenant;
  let site: { origin: string; close(): Promise<void> };
  let browser: import('puppeteer-core').Browser;

  before(async function () {
    if (!haveChromium) {
      if (process.env.REQUIRE_ALL_BACKENDS === '1') throw new Error(`${CHROMIUM} not found: install Debian's chromium (scripts/services.sh does)`);
      this.skip();
    }
    this.timeout(60_000);
    t = await startTestService(backend);
    acme = await createTenant(t, 'Browser');
    site = await startSite();
    const puppeteer = (await import('puppeteer-core')).default;
    browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  });
  after(async () => {
    await browser?.close();
    await site?.close();
    await t?.close();
  });

  /** Opens the customer's page, runs `script` with the SDK initialised, and waits for its queue to drain. */
  async function onPage(config: Record<string, unknown>, script: string): Promise<{ failed: string[] }> {
    // A fresh profile per visit: the SDK keeps its identity in the site's localStorage.
    const context = await browser.createBrowserContext();
    const page = await context.newPage();
    const failed: string[] = [];
    page.on('requestfailed', (r) => failed.push(`${r.method()} ${r.url()}: ${r.failure()?.errorText}`));
    page.on('response', (r) => { if (r.status() >= 400) failed.push(`${r.request().method()} ${r.url()}: ${r.status()}`); });
    await page.goto(site.origin + '/');
    await page.evaluate(`new Promise((resolve) => {
      mixpanel.init(${JSON.stringify(acme.project.token)}, Object.assign(${JSON.stringify({ api_host: t.url, persistence: 'localStorage', ...config })}, {
        loaded: function (mp) { ${script}; resolve(); },
      }));
    })`);
    // Batches flush on a timer; non-batched calls are sent at once. Wait until nothing is left queued.
    await page.evaluate(`new Promise((resolve) => {
      const done = () => Object.keys(localStorage).filter((k) => k.indexOf('__mpq_') === 0 && localStorage.getItem(k) !== '[]').length === 0;
      const started = Date.now();
      (function poll() { if ((done() && Date.now() - started > 600) || Date.now() - started > 15000) resolve(); else setTimeout(poll, 100); })();
    })`);
    await context.close();
    return { failed };
  }

  const eventsOf = async (distinctId: string) => {
    await drained(t);
    const r = await acme.owner.get(`/api/data/events?projectId=${acme.project.id}&limit=1000&distinctId=${encodeURIComponent(distinctId)}`);
    assert.equal(r.status, 200, r.text);
    return r.body.events as Array<{ event: string; distinct_id: string; properties: Record<string, unknown> }>;
  };

  for (const batch of [true, false]) {
    it(`${batch ? 'batched' : 'one request per call'}: track, register, identify, people.set and alias arrive as one person`, async function () {
      this.timeout(60_000);
      const user = `user-${batch ? 'b' : 'n'}`;
      const { failed } = await onPage(
        { batch_requests: batch, batch_flush_interval_ms: 200, xhr_headers: { 'X-Custom-Header': 'kept' } },
        `mp.register({ plan: 'pro' });
         mp.track('Viewed page', { page: '/pricing' });
         mp.track('Clicked buy');
         mp.identify(${JSON.stringify(user)});
         mp.people.set({ $email: ${JSON.stringify(user + '@example.test')}, name: 'Browser user' });
         mp.track('Bought', { amount: 42 });
         mp.alias(${JSON.stringify(user + '-alias')}, ${JSON.stringify(user)});
         mp.track('After alias')`,
      );
      assert.deepEqual(failed, [], 'no request failed or was refused (CORS included)');
      const events = await eventsOf(user);
      const names = events.map((e) => e.event).sort();
      for (const name of ['Viewed page', 'Clicked buy', 'Bought', 'After alias']) assert.ok(names.includes(name), `${name} in ${names}`);
      // Every event, the anonymous ones before identify included, belongs to the user's cluster.
      assert.ok(events.every((e) => e.distinct_id === events[0].distinct_id), JSON.stringify(events.map((e) => e.distinct_id)));
      assert.equal(events.find((e) => e.event === 'Bought')?.properties.plan, 'pro', 'registered super property');
      assert.equal(events.find((e) => e.event === 'Viewed page')?.properties.page, '/pricing');
      const aliasEvents = await eventsOf(user + '-alias');
      assert.equal(aliasEvents.length, events.length, 'the alias resolves to the same person');
      const profile = await acme.owner.get(`/api/data/users/${encodeURIComponent(user)}?projectId=${acme.project.id}`);
      assert.equal(profile.status, 200, profile.text);
      assert.equal(JSON.stringify(profile.body).includes(`${user}@example.test`), true, profile.text);
    });
  }

  it('reads /flags/evaluate from the page with credentials, as a browser integration does', async function () {
    this.timeout(30_000);
    const flag = await acme.owner.post(`/api/flags?projectId=${acme.project.id}`, {
      key: 'new-checkout', name: 'New checkout', active: true, type: 'release', rules: [{ rolloutPct: 100 }],
    });
    assert.equal(flag.status, 201, flag.text);
    const page = await browser.newPage();
    await page.goto(site.origin + '/');
    const answer = await page.evaluate(async (url: string, token: string) => {
      const r = await fetch(url + '/flags/evaluate', {
        method: 'POST', credentials: 'include',
        headers: { 'content-type': 'application/json', 'x-service-token': token, traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
        body: JSON.stringify({ distinct_id: 'browser-visitor' }),
      });
      return { status: r.status, body: await r.json() };
    }, t.url, acme.project.token);
    await page.close();
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.body.flags['new-checkout'].enabled, true, JSON.stringify(answer.body));
  });
  it("serves mixpanel.flags (GET /flags, Mixpanel's protocol) the variants of /flags/evaluate; its $experiment_started events arrive as events", async function () {
    this.timeout(60_000);
    const defs = [
      { key: 'mp-pricing', variants: [{ key: 'control', rolloutPct: 50, payload: { price: 10 } }, { key: 'cheap', rolloutPct: 50 }], rules: [{ rolloutPct: 100 }] },
      { key: 'mp-banner', rules: [{ rolloutPct: 100 }] },
      { key: 'mp-half', rules: [{ rolloutPct: 50 }] },
      { key: 'mp-retired', active: false, rules: [{ rolloutPct: 100 }] },
      { key: 'mp-nobody' },
    ];
    for (const f of defs) {
      const r = await acme.owner.post(`/api/flags?projectId=${acme.project.id}`, { name: f.key, ...f });
      assert.equal(r.status, 201, r.text);
    }
    const keys = defs.map((f) => f.key);
    const seen = new Set<string>();
    for (let i = 0; i < 6; i++) {
      const user = `flag-user-${i}`;
      const remote = (await t.anon.post('/flags/evaluate', { distinct_id: user }, { headers: { 'x-service-token': acme.project.token } })).body.flags;
      // What Mixpanel's protocol carries for each /flags/evaluate answer (the fallback when not served).
      const expected = keys.map((k) => {
        const r = remote[k];
        if (!r.enabled) return 'fallback';
        return r.payload ?? r.variant ?? true;
      });
      const context = await browser.createBrowserContext();
      const page = await context.newPage();
      const failed: string[] = [];
      page.on('requestfailed', (r) => failed.push(`${r.method()} ${r.url()}: ${r.failure()?.errorText}`));
      page.on('response', (r) => { if (r.status() >= 400) failed.push(`${r.request().method()} ${r.url()}: ${r.status()}`); });
      await page.goto(site.origin + '/');
      const got = await page.evaluate(`new Promise((resolve) => {
        mixpanel.init(${JSON.stringify(acme.project.token)}, {
          api_host: ${JSON.stringify(t.url)}, persistence: 'localStorage', flags: true, batch_requests: false,
          loaded: function (mp) {
            mp.identify(${JSON.stringify(user)});
            Promise.all(${JSON.stringify(keys)}.map(function (k) { return mp.flags.get_variant_value(k, 'fallback'); })).then(resolve);
          },
        });
      })`);
      assert.deepEqual(got, expected, `${user}: ${JSON.stringify(remote)}`);
      await new Promise((r) => setTimeout(r, 800)); // unbatched: the $experiment_started requests are sent at once
      await context.close();
      assert.deepEqual(failed, [], 'no request failed or was refused (the preflight of GET /flags included)');
      const started = (await eventsOf(user)).filter((e) => e.event === '$experiment_started');
      const servedKeys = keys.filter((k) => remote[k].enabled);
      assert.deepEqual(started.map((e) => e.properties['Experiment name']).sort(), [...servedKeys].sort());
      for (const e of started) {
        const r = remote[e.properties['Experiment name'] as string];
        assert.equal(e.properties['Variant name'], r.variant ?? 'on');
        seen.add(`${e.properties['Experiment name']}=${e.properties['Variant name']}`);
      }
    }
    // The identities above cover both variants and both sides of the 50 % rollout.
    for (const v of ['mp-pricing=control', 'mp-pricing=cheap', 'mp-half=on']) assert.ok(seen.has(v), `${v} in ${[...seen]}`);
  });

  it('refuses GET /flags without a valid token or distinct_id (4xx, with CORS headers)', async () => {
    const ctx = encodeURIComponent(JSON.stringify({ distinct_id: 'x' }));
    const origin = { origin: 'https://shop.customer.test' };
    const pre = await raw(`${t.url}/flags/?context=${ctx}`, 'OPTIONS', { ...origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization, traceparent' });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers['access-control-allow-origin'], 'https://shop.customer.test');
    const basic = (u: string) => ({ ...origin, authorization: 'Basic ' + Buffer.from(`${u}:`).toString('base64') });
    const viaBasic = await raw(`${t.url}/flags/?context=${ctx}`, 'GET', basic(acme.project.token));
    assert.equal(viaBasic.status, 200, viaBasic.body);
    assert.ok(JSON.parse(viaBasic.body).flags);
    for (const [url, headers] of [
      [`${t.url}/flags?context=${ctx}`, origin],
      [`${t.url}/flags?context=${ctx}&token=nope`, origin],
      [`${t.url}/flags?context=${ctx}`, basic('nope')],
    ] as const) {
      const r = await raw(url, 'GET', headers);
      assert.equal(r.status, 401, `${url}: ${r.body}`);
      assert.equal(r.headers['access-control-allow-origin'], 'https://shop.customer.test');
    }
    for (const bad of ['', '{}', '[]', 'nope', JSON.stringify({ distinct_id: 3 }), JSON.stringify({ distinct_id: '' })]) {
      const r = await raw(`${t.url}/flags?token=${acme.project.token}&context=${encodeURIComponent(bad)}`, 'GET', origin);
      assert.equal(r.status, 400, `${bad}: ${r.body}`);
    }
  });
});
