import fc from 'fast-check';

/**
 * fast-check arbitraries from the JSON Schemas of an OpenAPI 3.1 document (the subset the
 * service's `/openapi.json` uses: $ref, anyOf/oneOf/allOf, enum, type lists, string formats,
 * patterns, bounds, required and additionalProperties). Hand-written: the JSON-Schema-to-fast-check
 * packages on npm target fast-check 1 and zod 3.
 *
 * `valid` mode keeps to the schema and takes values from `anchors` (the ids, event names and
 * dates of the tenant under test, keyed by member name) so requests get past validation and into
 * the handlers. `hostile` mode draws from the schema too but mixes in boundary and wrong values.
 */
export type Schema = Record<string, any>;
export type Anchors = Record<string, fc.Arbitrary<unknown>>;
export type Mode = 'valid' | 'hostile';

export const HOSTILE_STRINGS = [
  '', ' ', '\u0000', 'a\u0000b', '\ud800', '\udfff\ud800', '😀', '\n', '\t\r', '../../etc/passwd', "'; DROP TABLE events; --",
  "' OR '1'='1", '%', '_', '\\', '"', "'", '`', '${x}', '{{x}}', '<script>alert(1)</script>', 'null', 'undefined', 'true',
  '-1', '0', '1e309', 'NaN', 'Infinity', '2147483648', '9007199254740993', '99999999999999999999', '__proto__', 'constructor',
  ' A ', 'A/0', 'A / (B - B)', '((((A))))', 'A+', '1970-01-01', '9999-12-31', '2024-02-30', '0000-00-00', '2024-13-01',
  '-1000-01-01', 'x'.repeat(256), 'x'.repeat(5_001), '\u202e', '\uffff', 'é'.repeat(300),
];
export const HOSTILE_NUMBERS = [
  0, -1, 1, 0.5, -0.5, 2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 53 - 1, 2 ** 53 + 2, -(2 ** 53), 1e20, -1e20, 1e308, Number.MIN_VALUE,
  1_000_000_001, 366, 367, 3661,
];

export const hostileScalar: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(...HOSTILE_STRINGS),
  fc.constantFrom(...HOSTILE_NUMBERS),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
);

export const hostileValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', maxDepth: 4 }, hostileScalar, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 4 }),
  object: fc.dictionary(fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom('__proto__', 'constructor', 'id', 'projectId', 'kind', 'op')), tie('value'), { maxKeys: 4 }),
})).value;

const DAY = 86_400_000;
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

export class SchemaArbitraries {
  constructor(private readonly doc: Schema, private readonly anchors: Anchors) {}

  resolve(s: Schema): Schema {
    let out = s;
    for (let i = 0; out && typeof out.$ref === 'string' && i < 20; i++) {
      const name = out.$ref.replace('#/components/schemas/', '');
      out = this.doc.components.schemas[name];
    }
    return out ?? {};
  }

  of(schema: Schema | undefined, mode: Mode, name?: string, depth = 0): fc.Arbitrary<unknown> {
    const s = this.resolve(schema ?? {});
    const own = this.ownOf(s, mode, name, depth);
    if (mode === 'valid') return own;
    // Hostile: mostly the schema's own values (so siblings stay deep), sometimes anything at all.
    return fc.oneof({ arbitrary: own, weight: 4 }, { arbitrary: hostileValue, weight: 1 });
  }

  private ownOf(s: Schema, mode: Mode, name: string | undefined, depth: number): fc.Arbitrary<unknown> {
    if (name && this.anchors[name] && mode === 'valid' && !s.enum && !this.isObject(s)) return this.anchors[name];
    if (depth > 8) return fc.constant(null);
    if (s.const !== undefined) return fc.constant(s.const);
    // The first member of an enum more often: formulas name A, the first metric's id.
    if (Array.isArray(s.enum)) return fc.oneof(fc.constant(s.enum[0]), fc.constantFrom(...s.enum));
    const branches = s.anyOf ?? s.oneOf;
    if (Array.isArray(branches)) return fc.oneof(...branches.map((b: Schema) => this.of(b, mode, name, depth + 1)));
    if (Array.isArray(s.allOf)) {
      const parts = s.allOf.map((b: Schema) => this.resolve(b)).filter((b: Schema) => Object.keys(b).some((k) => k !== 'description'));
      if (parts.length === 1) return this.of(parts[0], mode, name, depth + 1);
      return fc.tuple(...parts.map((b: Schema) => this.of(b, mode, name, depth + 1))).map((xs) => Object.assign({}, ...xs.filter((x) => x && typeof x === 'object')));
    }
    if (Array.isArray(s.type)) return fc.oneof(...s.type.map((t: string) => this.ownOf({ ...s, type: t }, mode, name, depth)));
    switch (s.type) {
      case 'string': return this.string(s, mode, name);
      case 'integer': return this.number(s, mode, true);
      case 'number': return this.number(s, mode, false);
      case 'boolean': return fc.boolean();
      case 'null': return fc.constant(null);
      case 'array': return this.array(s, mode, name, depth);
      case 'object': return this.object(s, mode, depth);
      default:
        if (s.properties) return this.object(s, mode, depth);
        return mode === 'valid' ? fc.oneof(fc.string({ maxLength: 12 }), fc.integer({ min: 0, max: 100 }), fc.boolean()) : hostileValue;
    }
  }

  private isObject(s: Schema): boolean {
    const branches: Schema[] | undefined = s.anyOf ?? s.oneOf ?? s.allOf;
    if (branches) return branches.map((b) => this.resolve(b)).every((b) => b.type === 'object' || b.properties || b.description !== undefined && Object.keys(b).length === 1);
    return s.type === 'object' || s.properties !== undefined;
  }

  private string(s: Schema, mode: Mode, name?: string): fc.Arbitrary<unknown> {
    const min = s.minLength ?? 0;
    const max = Math.min(s.maxLength ?? 40, 40);
    let base: fc.Arbitrary<string>;
    if (s.format === 'date') {
      const now = Date.now();
      base = fc.integer({ min: -40, max: 1 }).map((d) => isoDay(now + d * DAY));
      if (mode === 'hostile') base = fc.oneof(base, fc.date({ min: new Date(-62_000_000_000_000), max: new Date(4_000_000_000_000), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)));
    } else if (s.format === 'email') base = fc.stringMatching(/^[a-z]{1,8}$/).map((u) => `${u}@example.test`);
    else if (s.format === 'uuid') base = fc.uuid();
    else if (typeof s.pattern === 'string') base = fc.stringMatching(new RegExp(s.pattern)).filter((x) => x.length >= min && x.length <= (s.maxLength ?? Infinity));
    else base = fc.string({ minLength: min, maxLength: Math.max(min, max), unit: mode === 'valid' ? fc.constantFrom(...'abcdefghij_ -./AB0'.split('')) : 'grapheme' });
    if (mode === 'valid') return base;
    const edges: string[] = [];
    if (s.maxLength !== undefined && s.maxLength < 20_000) edges.push('x'.repeat(s.maxLength), 'x'.repeat(s.maxLength + 1));
    if (min > 0) edges.push('x'.repeat(min - 1));
    return fc.oneof({ arbitrary: base, weight: 2 }, { arbitrary: fc.constantFrom(...HOSTILE_STRINGS, ...edges), weight: 2 });
  }

  private number(s: Schema, mode: Mode, integer: boolean): fc.Arbitrary<unknown> {
    const lo = s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + (integer ? 1 : Number.EPSILON) : 0);
    const hi = Math.min(s.maximum ?? lo + 1000, lo + 1000);
    const base = integer ? fc.integer({ min: Math.ceil(lo), max: Math.max(Math.ceil(lo), Math.floor(hi)) }) : fc.double({ min: lo, max: hi, noNaN: true });
    if (mode === 'valid') return base;
    const edges = [s.minimum, s.maximum, s.exclusiveMinimum].filter((x) => typeof x === 'number').flatMap((x: number) => [x - 1, x, x + 1]);
    return fc.oneof(base, fc.constantFrom(...HOSTILE_NUMBERS, ...edges));
  }

  private array(s: Schema, mode: Mode, name: string | undefined, depth: number): fc.Arbitrary<unknown> {
    const min = s.minItems ?? 0;
    const max = Math.max(min, Math.min(s.maxItems ?? 4, 4));
    const items = this.of(s.items, mode, name, depth + 1);
    const base = fc.array(items, { minLength: min, maxLength: max });
    if (mode === 'valid' || s.maxItems === undefined || s.maxItems > 600) return base;
    return fc.oneof({ arbitrary: base, weight: 5 }, { arbitrary: items.map((x) => Array.from({ length: s.maxItems + 1 }, () => x)), weight: 1 });
  }

  private object(s: Schema, mode: Mode, depth: number): fc.Arbitrary<unknown> {
    const props: Record<string, Schema> = s.properties ?? {};
    const required: string[] = s.required ?? [];
    const model: Record<string, fc.Arbitrary<unknown>> = {};
    for (const [k, v] of Object.entries(props)) model[k] = this.of(v, mode, k, depth + 1);
    // Valid: the required members, and the anchored ones (a project token, a date range) too.
    const requiredKeys = mode === 'valid' ? Object.keys(model).filter((k) => required.includes(k) || (k in this.anchors && !this.isObject(this.resolve(props[k])))) : [];
    const record = fc.record(model, { requiredKeys });
    if (mode === 'valid') return record;
    return fc.tuple(record, fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), hostileValue, { maxKeys: 1 })).map(([r, extra]) => ({ ...extra, ...r }));
  }
}

/** Every path (list of keys) into a JSON value, the root included. */
export function pathsOf(v: unknown, at: Array<string | number> = [], out: Array<Array<string | number>> = []): Array<Array<string | number>> {
  out.push(at);
  if (Array.isArray(v)) v.forEach((x, i) => pathsOf(x, [...at, i], out));
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) pathsOf(x, [...at, k], out);
  return out;
}

export type Mutation = { kind: 'replace' | 'delete' | 'add' | 'grow' | 'stringify'; pick: number; value: unknown; key: string };

export const mutation: fc.Arbitrary<Mutation> = fc.record({
  kind: fc.constantFrom('replace', 'replace', 'replace', 'delete', 'add', 'grow', 'stringify'),
  pick: fc.nat(),
  value: hostileValue,
  key: fc.oneof(fc.string({ minLength: 1, maxLength: 8 }), fc.constantFrom('__proto__', 'id', 'projectId', 'extra')),
}) as fc.Arbitrary<Mutation>;

/** Applies `m` at one of the value's paths (chosen by `m.pick`); returns a new value. */
export function mutate(root: unknown, m: Mutation): unknown {
  const copy = structuredClone(root);
  const paths = pathsOf(copy);
  const path = paths[m.pick % paths.length];
  if (path.length === 0) return m.kind === 'add' && copy && typeof copy === 'object' && !Array.isArray(copy) ? { ...copy, [m.key]: m.value } : m.value;
  const parent = path.slice(0, -1).reduce<any>((o, k) => o[k], copy);
  const last = path[path.length - 1];
  const current = parent[last];
  switch (m.kind) {
    case 'replace': parent[last] = m.value; break;
    case 'delete': if (Array.isArray(parent)) parent.splice(Number(last), 1); else delete parent[last]; break;
    case 'add':
      if (current && typeof current === 'object' && !Array.isArray(current)) Object.defineProperty(current, m.key, { value: m.value, enumerable: true, configurable: true, writable: true });
      else if (Array.isArray(current)) current.push(m.value);
      else parent[last] = m.value;
      break;
    case 'grow': parent[last] = Array.isArray(current) && current.length ? Array.from({ length: 40 }, () => current[0]) : Array.from({ length: 3 }, () => current); break;
    case 'stringify': parent[last] = typeof current === 'string' ? Number(current) : JSON.stringify(current) ?? 'null'; break;
  }
  return copy;
}
