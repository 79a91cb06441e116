import assert from 'node:assert/strict';
import net from 'node:net';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { forEachBackend } from '../support/backends.js';
import { createTenant, sharedService, type Tenant, type TestService } from '../support/service.js';
import {
  bucket,
  evaluateFlag,
  notFoundResult,
  rolloutBucket,
  variantBucket,
  type FlagConfig,
  type FlagResult,
} from '../../apps/flag-evaluation/src/index.js';
import { compileProject, memberOrder } from '../../apps/server/src/flags/plan.js';
import { evaluationJson, select } from '../../apps/server/src/flags/evaluator.js';
import { LiveFlagsCache } from '../../apps/server/src/flags/live.js';
import type { FeatureFlag } from '../../apps/server/src/flags/schema.js';
import { pathTable, route } from '../../apps/server/src/http/route.js';

/**
 * The `POST /flags/evaluate` fast path (flags/plan.ts, evaluator.ts `evaluateJson`) against the
 * general one: bucketing by the JavaScript SHA-1 against node:crypto, the compiled plan's response
 * text against JSON.stringify of what evaluateFlag answers (the previous response), byte for byte,
 * and the live-flags cache's background reload.
 */

const cryptoBucket = (s: string) => parseInt(createHash('sha1').update(s, 'utf8').digest('hex').slice(0, 13), 16) / 2 ** 52;

describe('flag bucketing: the JavaScript SHA-1 agrees with node:crypto', () => {
  it('for ASCII strings of every length over several blocks', () => {
    for (let n = 0; n <= 300; n++) {
      const s = Array.from({ length: n }, (_, i) => String.fromCharCode(32 + ((i * 31 + n * 7) % 95))).join('');
      assert.equal(bucket(s), cryptoBucket(s), `length ${n}`);
    }
    const long = 'x'.repeat(5000); // past the JS digest's limit: node:crypto
    assert.equal(bucket(long), cryptoBucket(long));
  });

  it('for random strings (non-ASCII, lone surrogates: node:crypto), and the joined forms', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 80 }), fc.string({ maxLength: 80 }), fc.string({ unit: 'grapheme-ascii', maxLength: 200 }), (a, b, c) => {
        for (const s of [a, b, c]) assert.equal(bucket(s), cryptoBucket(s));
        assert.equal(rolloutBucket(c, a), cryptoBucket(`${c}.${a}`));
        assert.equal(variantBucket(b, c), cryptoBucket(`${b}.${c}.variant`));
      }),
      { numRuns: 2000 },
    );
  });
});

/** What the previous code answered: evaluateFlag per flag into an object, JSON.stringify'd. */
function reference(list: FlagConfig[], distinctId: string, canonical: string, inCohort: (id: number) => boolean, keys?: string[]): string {
  const byKey = new Map(list.map((f) => [f.key, f]));
  const entries: Array<[string, FlagConfig | undefined]> = keys ? keys.map((k) => [k, byKey.get(k)]) : [...byKey];
  const who = { bucketingId: canonical, overrideIds: canonical === distinctId ? [distinctId] : [distinctId, canonical], inCohort };
  const out: Record<string, FlagResult> = {};
  for (const [key, flag] of entries) out[key] = flag ? evaluateFlag(flag, who) : notFoundResult();
  return JSON.stringify({ flags: out });
}

const IDS = ['u1', 'u2', 'vip', 'vip-2', 'ü-user', '$device:abc', '7', ''];
const KEYS = ['a', 'b', 'beta', '0', '1', '10', '2', '007', '4294967295', '4294967294', 'x-y', 'z_9'];
const VARIANT_KEYS = ['a', 'b', 'c', 'ü', 'q"uote', 'missing'];

const arbFlag = (key: string) =>
  fc.record({
    active: fc.boolean(),
    variants: fc.uniqueArray(
      fc.record({ key: fc.constantFrom(...VARIANT_KEYS.slice(0, 5)), rolloutPct: fc.integer({ min: 0, max: 100 }), payload: fc.option(fc.jsonValue({ maxDepth: 2 }), { nil: undefined }) }, { requiredKeys: ['key', 'rolloutPct'] }),
      { selector: (v) => v.key, maxLength: 4 },
    ),
    rules: fc.array(
      fc.record({
        rolloutPct: fc.oneof(fc.constantFrom(0, 100), fc.integer({ min: 0, max: 100 })),
        cohortId: fc.constantFrom(1, 2, 3),
        distinctIds: fc.uniqueArray(fc.constantFrom(...IDS), { maxLength: 3 }),
        variant: fc.constantFrom(...VARIANT_KEYS),
      }, { requiredKeys: ['rolloutPct'] }),
      { maxLength: 6 },
    ),
  }).map((f): FlagConfig => ({ key, ...f }));

const arbProject = fc.uniqueArray(fc.constantFrom(...KEYS), { maxLength: KEYS.length }).chain((keys) => fc.tuple(...keys.map(arbFlag)));

describe('POST /flags/evaluate fast path: the compiled plan answers the bytes of JSON.stringify(evaluateFlag…)', () => {
  it('for random flags, identities, cohorts and flag_keys', () => {
    fc.assert(
      fc.property(
        arbProject,
        fc.constantFrom(...IDS, 'someone-else'),
        fc.option(fc.constantFrom(...IDS), { nil: undefined }),
        fc.subarray([1, 2, 3]),
        fc.option(fc.array(fc.constantFrom(...KEYS, '__proto__', 'nope', 'constructor', 'enabled'), { maxLength: 8 }), { nil: undefined }),
        (list, distinctId, linked, members, keys) => {
          const canonical = linked ?? distinctId;
          const inCohort = (id: number) => members.includes(id);
          const plan = compileProject(list, JSON.stringify(list));
          const got = evaluationJson(plan, select(plan, keys), distinctId, canonical, inCohort);
          assert.equal(got, reference(list, distinctId, canonical, inCohort, keys));
          // the cohorts checked are those of the active selected flags, as the general path reads them
          const wanted = new Set((keys ? list.filter((f) => keys.includes(f.key)) : list).filter((f) => f.active).flatMap((f) => f.rules.map((r) => r.cohortId).filter((c) => c !== undefined)));
          assert.deepEqual(new Set(select(plan, keys).cohortIds), wanted);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('for the benchmark flags and 2,000 ids (on and off the override lists)', () => {
    const list: FlagConfig[] = Array.from({ length: 100 }, (_, i) => ({
      key: `bench-flag-${i}`,
      active: true,
      variants: [
        { key: 'a', rolloutPct: 34, payload: { color: 'red', i } },
        { key: 'b', rolloutPct: 33, payload: { color: 'green', i } },
        { key: 'c', rolloutPct: 33, payload: { color: 'blue', i } },
      ],
      rules: [
        ...Array.from({ length: 8 }, (_, r) => ({ rolloutPct: 100, distinctIds: Array.from({ length: 5 }, (_, k) => `vip-${i}-${r}-${k}`), variant: 'abc'[r % 3] })),
        { rolloutPct: 10, variant: 'b' },
        { rolloutPct: 50 },
      ],
    }));
    const plan = compileProject(list, JSON.stringify(list));
    const none = () => false;
    for (let u = 0; u < 2000; u++) {
      const id = u % 10 === 0 ? `vip-${u % 100}-${u % 8}-${u % 5}` : `user-${u}`;
      assert.equal(evaluationJson(plan, plan, id, id, none), reference(list, id, id, none));
    }
  });

  it('member order is that of a JS object (integer-like keys first, __proto__ never a member)', () => {
    const keys = ['b', '10', 'a', '2', '__proto__', '007', '4294967295', '4294967294', 'b', '2'];
    const o: Record<string, number> = {};
    for (const k of keys) o[k] = 0;
    assert.deepEqual(memberOrder(keys).map((i) => keys[i]), Object.keys(o));
    assert.deepEqual(memberOrder(keys).map((i) => keys[i]), ['2', '10', '4294967294', 'b', 'a', '007', '4294967295']);
  });
});

describe('live flags cache: a project in use is reloaded in the background past 3/4 of its TTL', () => {
  const flag = (key: string): FeatureFlag => ({
    id: 1, project_id: 1, key, name: key, description: null, active: true, type: 'release', variants: [], rules: [{ rolloutPct: 100 }],
    created_by: null, managed_by: null, archived_at: null, created_at: 0, updated_at: 0,
  });

  it('serves the entry while it reloads, never an entry past the TTL, and keeps the plan of unchanged definitions', async () => {
    let key = 'one';
    let loads = 0;
    let release: (() => void) | undefined;
    let clock = 0;
    const cache = new LiveFlagsCache({ ttlMs: 1000, now: () => clock, load: async () => {
      loads++;
      if (loads > 1) await new Promise<void>((r) => (release = r));
      return [flag(key)];
    } });
    const settle = () => new Promise((r) => setImmediate(r));
    const first = await cache.get(1);
    assert.equal(loads, 1);
    clock = 749;
    assert.equal(cache.get(1), first, 'under 3/4 of the TTL: the entry, no reload');
    assert.equal(loads, 1);
    clock = 750;
    assert.equal(cache.get(1), first, 'past 3/4 of the TTL: still the entry …');
    assert.equal(loads, 2, '… and one background reload');
    clock = 999;
    assert.equal(cache.get(1), first);
    assert.equal(loads, 2, 'one reload at a time');
    release!();
    await settle();
    const second = cache.get(1) as Awaited<ReturnType<LiveFlagsCache['get']>>;
    assert.notEqual(second, first);
    assert.equal(second.loadedAt, 750, 'the reload is as old as its start');
    assert.equal(second.plan, first.plan, 'same definitions: the compiled plan is kept');
    // an entry whose reload does not come back in time is not served past the TTL
    key = 'two';
    clock = 1500;
    assert.equal(cache.get(1), second);
    assert.equal(loads, 3);
    clock = 1750;
    const waiting = cache.get(1);
    assert.ok(waiting instanceof Promise, 'expired: the request waits for the reload in flight');
    assert.equal(loads, 3);
    release!();
    const third = await waiting;
    assert.deepEqual(third.list.map((f) => f.key), ['two']);
    assert.notEqual(third.plan, first.plan);
    // a write through this process drops the entry at once
    cache.invalidate(1);
    const fourth = cache.get(1);
    assert.ok(fourth instanceof Promise);
    release!();
    await fourth;
  });

  it('with a revision source: an unchanged revision keeps the entry (younger) without re-reading the flags; a moved one reloads', async () => {
    let loads = 0;
    let revision = 7;
    let clock = 0;
    const cache = new LiveFlagsCache({ ttlMs: 1000, now: () => clock, load: async () => {
      loads++;
      return [flag(`k${revision}`)];
    }, revisionOf: async () => revision });
    const settle = () => new Promise((r) => setTimeout(r, 5));
    const first = await cache.get(1);
    assert.equal(first.revision, 7);
    clock = 800;
    assert.equal(cache.get(1), first);
    await settle();
    assert.equal(loads, 1, 'same revision: the flags are not read again');
    assert.equal(first.loadedAt, 800, '… and the entry counts as loaded at the check');
    clock = 1700;
    assert.equal(cache.get(1), first, 'within the TTL of the check: served as is');
    revision = 8;
    await settle();
    assert.equal(loads, 1, 'the check at 1700 found the old number');
    clock = 2500;
    assert.equal(cache.get(1), first, 'past 3/4 of the TTL: served while the moved revision reloads it');
    await settle();
    assert.equal(loads, 2);
    const second = await cache.get(1);
    assert.deepEqual(second.list.map((f) => f.key), ['k8']);
    assert.equal(second.revision, 8);
    // a write through this process drops the entry even when the revision source lags
    cache.invalidate(1);
    revision = 8;
    await cache.get(1);
    assert.equal(loads, 3);
  });

  it('a failed background reload rejects nothing unhandled; the next load after expiry reports it', async () => {
    let fail = false;
    let clock = 0;
    const cache = new LiveFlagsCache({ ttlMs: 1000, now: () => clock, load: async () => {
      if (fail) throw new Error('store down');
      return [flag('one')];
    } });
    const first = await cache.get(1);
    fail = true;
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      clock = 800;
      assert.equal(cache.get(1), first);
      await new Promise((r) => setTimeout(r, 20));
      clock = 1000;
      await assert.rejects(async () => cache.get(1), /store down/);
      await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(unhandled, []);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

describe('route path table: remembered answers are the answers', () => {
  it('for known and unknown paths, past the memo bound', () => {
    const routes = [
      route({ method: 'post', path: '/flags/evaluate', tag: 'Flags', summary: '', auth: 'projectToken', handler: () => 1 }),
      route({ method: 'get', path: '/api/flags/{id}', tag: 'Flags', summary: '', auth: 'api', handler: () => 1 }),
      route({ method: 'put', path: '/api/flags/{id}', tag: 'Flags', summary: '', auth: 'api', handler: () => 1 }),
    ];
    const lookup = pathTable(routes);
    const expect = (p: string) =>
      p === '/flags/evaluate' || p === '/flags/evaluate/' ? { methods: ['post'], auth: ['projectToken'], envelopes: ['status'] }
        : /^\/api\/flags\/[^/]+\/?$/.test(p) ? { methods: ['get', 'put'], auth: ['api'], envelopes: ['error'] } : undefined;
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 2500; i++) {
        for (const p of ['/flags/evaluate', '/flags/evaluate/', `/api/flags/${i}`, `/nope/${i}`, '/api/flags/1/x']) assert.deepEqual(lookup(p), expect(p), p);
      }
    }
  });
});

forEachBackend('POST /flags/evaluate fast path over HTTP', (backend) => {
  let t: TestService;
  let ev: Tenant;
  before(async () => {
    t = await sharedService(backend);
    ev = await createTenant(t, 'FlagFast');
  });

  const evaluate = (body: unknown) => t.anon.post('/flags/evaluate', body, { headers: { 'x-service-token': ev.project.token } });

  it('answers, header and bytes, what JSON.stringify of evaluateFlag gives, for many ids', async () => {
    const mk = async (body: Record<string, unknown>) => {
      const r = await ev.owner.post('/api/flags', { name: 'n', ...body });
      assert.equal(r.status, 201, JSON.stringify(r.body));
    };
    for (let i = 0; i < 6; i++) {
      await mk({
        key: `bench-flag-${i}`,
        variants: [{ key: 'a', rolloutPct: 34, payload: { color: 'red', i, note: 'ünïcode ✓' } }, { key: 'b', rolloutPct: 33, payload: [i, null] }, { key: 'c', rolloutPct: 33 }],
        rules: [
          ...Array.from({ length: 3 }, (_, r) => ({ rolloutPct: 100, distinctIds: [`vip-${i}-${r}`], variant: 'abc'[r] })),
          { rolloutPct: 10, variant: 'b' },
          { rolloutPct: 50 },
        ],
      });
    }
    await mk({ key: '42', rules: [{ rolloutPct: 30 }] });
    await mk({ key: '7', active: false, rules: [{ rolloutPct: 100 }] });
    await mk({ key: 'empty' });
    const list = (await ev.owner.get('/api/flags')).body as FeatureFlag[];
    const none = () => false;
    for (let u = 0; u < 60; u++) {
      const id = u % 6 === 0 ? `vip-${u % 6}-${u % 3}` : `user-${u}`;
      const r = await evaluate({ distinct_id: id });
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('content-type'), 'application/json; charset=utf-8');
      assert.equal(Number(r.headers.get('content-length')), Buffer.byteLength(r.text));
      assert.equal(r.text, reference(list, id, id, none));
      const keys = ['42', 'nope', `bench-flag-${u % 6}`, '__proto__', '7', '42'];
      const k = await evaluate({ distinct_id: id, flag_keys: keys });
      assert.equal(k.text, reference(list, id, id, none, keys));
    }
  });

  it('sends the status line and headers Koa sent (CORS ones included), and keeps the connection', async () => {
    const p = await ev.owner.post('/api/flags', { name: 'n', key: 'raw-one', rules: [{ rolloutPct: 100 }] });
    assert.equal(p.status, 201);
    const body = JSON.stringify({ distinct_id: 'u1', flag_keys: ['raw-one'] });
    const request = (extra: string) =>
      `POST /flags/evaluate HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nx-service-token: ${ev.project.token}\r\n${extra}content-length: ${body.length}\r\n\r\n${body}`;
    const answer = '{"flags":{"raw-one":{"enabled":true,"variant":null,"payload":null,"reason":"rule:0"}}}';
    const tail = `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${answer.length}\r\nDate: X\r\nConnection: keep-alive\r\nKeep-Alive: timeout=65\r\n\r\n${answer}`;
    // what Koa's response path sent for this route (captured from it before the direct write)
    const expected = [
      `HTTP/1.1 200 OK\r\n${tail}`,
      `HTTP/1.1 200 OK\r\nVary: Origin\r\nAccess-Control-Allow-Origin: https://shop.example\r\nAccess-Control-Allow-Credentials: true\r\nAccess-Control-Expose-Headers: Retry-After, ETag\r\n${tail}`,
    ];
    const url = new URL(t.url);
    const sock = net.connect(Number(url.port), url.hostname);
    let buf = '';
    sock.on('data', (d) => (buf += d));
    const next = async () => {
      while (!buf.includes('}}}')) await new Promise((r) => setTimeout(r, 5));
      const end = buf.indexOf('}}}') + 3;
      const one = buf.slice(0, end);
      buf = buf.slice(end);
      return one.replace(/Date: [^\r]*/, 'Date: X');
    };
    try {
      // one keep-alive connection, one request after the other
      sock.write(request(''));
      assert.equal(await next(), expected[0]);
      sock.write(request('origin: https://shop.example\r\n'));
      assert.equal(await next(), expected[1]);
      sock.write(request(''));
      assert.equal(await next(), expected[0]);
    } finally {
      sock.destroy();
    }
  });

  it('keeps the errors and their envelopes', async () => {
    for (const [body, status, error] of [
      [{}, 400, 'distinct_id required'],
      [[], 400, 'distinct_id required'],
      [{ distinct_id: null }, 400, 'distinct_id required'],
      [{ distinct_id: 'u', flag_keys: [1] }, 400, 'flag_keys: must be an array of strings'],
      [{ distinct_id: 'u\u0000' }, 400, 'distinct_id: must not contain NUL characters'],
      [{ distinct_id: 'u', flag_keys: ['a\u0000'] }, 400, 'flag_keys.0: must not contain NUL characters'],
    ] as const) {
      const r = await evaluate(body);
      assert.equal(r.status, status, JSON.stringify(r.body));
      assert.deepEqual(r.body, { status: 0, error });
    }
    const empty = await evaluate({ distinct_id: 'u', flag_keys: [] });
    assert.equal(empty.text, '{"flags":{}}');
  });
});
