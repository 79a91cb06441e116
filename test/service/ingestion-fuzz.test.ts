import assert from 'node:assert/strict';
import fc from 'fast-check';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { Client, type Reply } from '../support/http.js';
import { drained } from '../support/ingestion.js';

/**
 * Hostile bodies against /track, /engage and /alias: wrong types, huge strings, deep nesting,
 * invalid UTF-8, `__proto__` keys, NaN/Infinity, non-object properties, 501-record batches.
 * None may answer 5xx, crash the process, poison the worker, or store part of a rejected batch.
 */
const SPEC_ERRORS = new Set([
  'invalid json', 'batch too large', 'invalid token', 'payload too large', 'alias and distinct_id required',
  '$delete/$unset require an owner or superadmin credential',
]);

/** JSON-ish text with the things JSON.stringify never produces. */
const hostileScalar = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom('NaN', 'Infinity', '-Infinity', '1e400', '"\\ud800"', '"\\u0000"', '"\\udfff\\ud800"').map((raw) => ({ raw })),
  fc.nat(2_000).map((n) => ({ raw: '['.repeat(n) + ']'.repeat(n) })),
  fc.nat(900_000).map((n) => 'x'.repeat(n)),
);

const hostileValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, hostileScalar, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 4 }),
  object: fc.dictionary(fc.oneof(fc.string(), fc.constantFrom('__proto__', 'constructor', 'token', 'time', 'distinct_id', '$insert_id')), tie('value'), { maxKeys: 4 }),
})).value;

/** Serialises, letting `{raw}` leaves through verbatim. */
function text(v: unknown): string {
  if (v && typeof v === 'object' && !Array.isArray(v) && 'raw' in (v as object) && Object.keys(v as object).length === 1) return String((v as { raw: string }).raw);
  if (Array.isArray(v)) return `[${v.map(text).join(',')}]`;
  if (v && typeof v === 'object') return `{${Object.entries(v as object).map(([k, x]) => `${JSON.stringify(k)}:${text(x)}`).join(',')}}`;
  const s = JSON.stringify(v);
  return s === undefined ? 'null' : s;
}

forEachBackend('ingestion: hostile bodies (fast-check)', (backend) => {
  let t: TestService;
  let acme: Tenant;
  let run = 0;
  const accepted = new Set<string>();
  const rejected = new Set<string>();

  before(async () => {
    t = await startTestService(backend, { RATE_LIMIT_PER_IP: '1000000', RATE_LIMIT_PER_PROJECT: '1000000' });
    acme = await createTenant(t, 'Fuzz');
  });
  after(async () => t?.close());

  /** A record that is valid except where `mutation` says, named so we can find it later. */
  const record = (endpoint: string, name: string, mutation: [string, unknown] | undefined) => {
    const base: Record<string, unknown> =
      endpoint === '/track' ? { event: name, properties: { distinct_id: `fz-${name}`, n: 1 } }
      : endpoint === '/engage' ? { distinct_id: `fz-${name}`, $set: { n: 1 } }
      : { alias: `$device:${name}`, distinct_id: `fz-${name}` };
    if (!mutation) return base;
    const [path, value] = mutation;
    if (path.startsWith('properties.') && endpoint === '/track') {
      (base.properties as Record<string, unknown>)[path.slice(11)] = value;
    } else base[path] = value;
    return base;
  };

  const paths = fc.oneof(
    fc.constantFrom(
      'event', 'properties', 'properties.distinct_id', 'properties.time', 'properties.token', 'distinct_id',
      '$set', '$set_once', '$add', '$unset', '$delete', 'alias', 'token', '$token',
    ),
    // Free-form property values: most of these must be accepted and stored sanitised.
    fc.constantFrom('properties.__proto__', 'properties.deep', 'properties.$insert_id', 'properties.constructor', 'properties.ip'),
  );
  const body = fc.oneof(
    { weight: 2, arbitrary: hostileValue.map((v) => ({ kind: 'value' as const, v })) },
    { weight: 4, arbitrary: fc.array(fc.option(fc.tuple(paths, hostileValue), { nil: undefined, freq: 2 }), { minLength: 1, maxLength: 6 }).map((m) => ({ kind: 'records' as const, m })) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }).map((b) => ({ kind: 'bytes' as const, b })) },
    { weight: 1, arbitrary: fc.integer({ min: 501, max: 520 }).map((n) => ({ kind: 'oversize' as const, n })) },
  );

  async function send(endpoint: string, b: fc.Arbitrary<any> extends fc.Arbitrary<infer T> ? T : never): Promise<{ reply: Reply; names: string[] }> {
    const c = new Client(t.url);
    const headers = { 'x-service-token': acme.project.token, 'content-type': 'application/json' };
    const id = `r${++run}`;
    let raw: string | Buffer;
    let names: string[] = [];
    if (b.kind === 'value') raw = text(b.v);
    else if (b.kind === 'bytes') raw = Buffer.concat([Buffer.from('[{"event":"'), Buffer.from(b.b), Buffer.from('"}]')]);
    else if (b.kind === 'oversize') {
      names = Array.from({ length: b.n }, (_, i) => `${id}-${i}`);
      raw = JSON.stringify(names.map((n) => record(endpoint, n, undefined)));
    } else {
      const all = b.m.map((_: unknown, i: number) => `${id}-${i}`);
      raw = `[${b.m.map((mut: [string, unknown] | undefined, i: number) => text(record(endpoint, all[i], mut))).join(',')}]`;
      // Records whose event name was replaced are not findable by name.
      names = all.filter((_: string, i: number) => b.m[i]?.[0] !== 'event');
    }
    const reply = await c.post(endpoint, undefined, { raw, headers });
    return { reply, names };
  }

  for (const endpoint of ['/track', '/engage', '/alias']) {
    it(`${endpoint}: never 5xx, always the API's envelope, nothing stored from a rejected batch`, async function () {
      this.timeout(120_000);
      await fc.assert(
        fc.asyncProperty(body, async (b) => {
          const { reply, names } = await send(endpoint, b as any);
          assert.ok(reply.status < 500, `${reply.status} ${reply.text.slice(0, 300)}`);
          assert.equal(typeof reply.body, 'object', reply.text.slice(0, 200));
          if (reply.status === 200) {
            assert.ok(reply.body.status === 1 || (endpoint === '/engage' && reply.body.status === 0 && Array.isArray(reply.body.refused)));
            if (endpoint === '/track') for (const n of names) accepted.add(n);
          } else {
            assert.ok([400, 401, 413].includes(reply.status), `status ${reply.status}`);
            assert.equal(reply.body.status, 0);
            assert.ok(SPEC_ERRORS.has(reply.body.error), `error ${reply.body.error}`);
            if (endpoint === '/track') for (const n of names) rejected.add(n);
          }
        }),
        { numRuns: 150, seed: 20260301 + endpoint.length },
      );
      assert.equal(({} as any).polluted, undefined);
      assert.equal(Object.prototype.hasOwnProperty.call(Object.prototype, 'n'), false);
    });
  }

  it('the worker applied everything (no poison batch), the process is healthy, and no rejected record was stored', async function () {
    this.timeout(60_000);
    await Promise.race([drained(t), new Promise((_, reject) => setTimeout(() => reject(new Error('buffer never drained: a batch keeps failing')), 20_000))]);
    assert.equal((await t.anon.get('/health')).status, 200);
    const names = new Set<string>(((await acme.owner.get(`/api/data/event-names?projectId=${acme.project.id}`)).body as any[]).map((n) => n.name));
    for (const n of rejected) assert.equal(names.has(n), false, `rejected record ${n} was stored`);
    let found = 0;
    for (const n of accepted) if (names.has(n)) found++;
    // Every accepted /track record (its name untouched) was stored.
    assert.equal(found, accepted.size);
    assert.ok(accepted.size > 20, 'the generators produced accepted batches too');
    assert.ok(rejected.size > 0, 'the generators produced rejections');
    if (process.env.FUZZ_DEBUG) console.log({ accepted: accepted.size, rejected: rejected.size, found });
  });
});
