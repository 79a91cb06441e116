import { Environment } from '@marcbachmann/cel-js';
import type { FieldCause } from './types.js';

/**
 * Admission of custom resources against a CRD's structural schema, in the API server's order:
 * prune unknown fields, drop non-nullable nulls, apply defaults, validate (types, required,
 * enums, bounds, patterns, list sizes, list-map keys, formats), then the transition rules.
 * Messages are the API server's. `x-kubernetes-validations` rules are evaluated by a CEL
 * interpreter (@marcbachmann/cel-js) with the Kubernetes list function `sum()` added; a rule it
 * cannot parse is refused when the CRD is installed (see `unsupportedRules`), so nothing is
 * silently unchecked. Rules naming `oldSelf` are transition rules: they run on update only, where
 * the old object had the field.
 */

type Schema = Record<string, any>;
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

export interface Admission {
  object: Record<string, unknown>;
  causes: FieldCause[];
  /** Paths of unknown fields dropped (a `fieldValidation=Strict` request refuses them). */
  pruned: string[];
}

const cel = new Environment({ unlistedVariablesAreDyn: true })
  // The Kubernetes list library's sum() (k8s.io/apiserver/pkg/cel/library/lists.go), on int lists.
  .registerFunction('list.sum(): dyn', (l: unknown[]) => l.reduce<bigint>((a, b) => a + BigInt(b as bigint), 0n));
const compiled = new Map<string, ReturnType<typeof cel.parse>>();
export function compile(rule: string): ReturnType<typeof cel.parse> {
  let fn = compiled.get(rule);
  if (!fn) {
    fn = cel.parse(rule);
    compiled.set(rule, fn);
  }
  return fn;
}
/** JSON to CEL values: integers are CEL ints (BigInt). */
export function toCel(v: unknown): unknown {
  if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v) : v;
  if (Array.isArray(v)) return v.map(toCel);
  if (isObject(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, toCel(x)]));
  return v;
}

/** Rules this fake cannot evaluate (CEL its interpreter cannot parse). */
export function unsupportedRules(schema: Schema, path = ''): string[] {
  const out: string[] = [];
  for (const v of schema['x-kubernetes-validations'] ?? []) {
    try {
      compile(v.rule);
    } catch {
      out.push(`${path}: ${v.rule}`);
    }
  }
  for (const [k, sub] of Object.entries<Schema>(schema.properties ?? {})) out.push(...unsupportedRules(sub, path ? `${path}.${k}` : k));
  if (schema.items) out.push(...unsupportedRules(schema.items, `${path}[]`));
  if (isObject(schema.additionalProperties)) out.push(...unsupportedRules(schema.additionalProperties, `${path}[*]`));
  return out;
}

/** Prunes and defaults in place (the object is a private copy), returns dropped paths. */
function pruneAndDefault(value: unknown, schema: Schema, path: string, pruned: string[], root: boolean): void {
  if (schema['x-kubernetes-preserve-unknown-fields'] && !schema.properties) return;
  if (isObject(value)) {
    const props: Record<string, Schema> | undefined = schema.properties;
    const extra: Schema | undefined = isObject(schema.additionalProperties) ? schema.additionalProperties : undefined;
    for (const key of Object.keys(value)) {
      // metadata, apiVersion and kind of the root are the API server's business, never pruned.
      if (root && (key === 'apiVersion' || key === 'kind' || key === 'metadata')) continue;
      const sub = props?.[key] ?? extra;
      if (!sub) {
        if (!schema['x-kubernetes-preserve-unknown-fields']) {
          pruned.push(join(path, key));
          delete value[key];
        }
        continue;
      }
      if (value[key] === null && !sub.nullable) {
        if (sub.default !== undefined) value[key] = structuredClone(sub.default);
        else delete value[key];
        continue;
      }
      pruneAndDefault(value[key], sub, join(path, key), pruned, false);
    }
    for (const [key, sub] of Object.entries(props ?? {})) {
      if (value[key] === undefined && sub.default !== undefined) {
        value[key] = structuredClone(sub.default);
        pruneAndDefault(value[key], sub, join(path, key), pruned, false);
      }
    }
  } else if (Array.isArray(value) && schema.items) {
    value.forEach((item, i) => pruneAndDefault(item, schema.items, `${path}[${i}]`, pruned, false));
  }
}

const join = (path: string, key: string) => (path ? `${path}.${key}` : key);

/** Go's %v-ish rendering of a value in messages (`"text"`, `101`, `"object"`). */
function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === null) return '"null"';
  return JSON.stringify(Array.isArray(value) ? 'array' : 'object');
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const UUID = /^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$/;

function validate(value: unknown, old: unknown, schema: Schema, path: string, causes: FieldCause[], hasOld: boolean): void {
  const fail = (reason: string, message: string) => causes.push({ reason, field: path, message });
  const before = causes.length;
  if (value === null) {
    if (!schema.nullable) fail('FieldValueTypeInvalid', `Invalid value: "null": ${path} in body must be of type ${schema.type ?? 'object'}: "null"`);
    return;
  }
  const actual = typeOf(value);
  const wanted: string | undefined = schema.type;
  if (wanted && !(wanted === actual || (wanted === 'number' && actual === 'integer'))) {
    if (!(schema['x-kubernetes-int-or-string'] && (actual === 'integer' || actual === 'string'))) {
      fail('FieldValueTypeInvalid', `Invalid value: "${actual}": ${path} in body must be of type ${wanted}: "${actual}"`);
      return;
    }
  }
  if (schema.enum && !schema.enum.some((e: unknown) => e === value)) {
    fail('FieldValueNotSupported', `Unsupported value: ${show(value)}: supported values: ${schema.enum.map((e: unknown) => JSON.stringify(e)).join(', ')}`);
  }
  if (typeof value === 'number') {
    if (schema.maximum !== undefined) {
      if (schema.exclusiveMaximum ? value >= schema.maximum : value > schema.maximum) {
        fail('FieldValueInvalid', `Invalid value: ${value}: ${path} in body should be less than ${schema.exclusiveMaximum ? '' : 'or equal to '}${schema.maximum}`);
      }
    }
    if (schema.minimum !== undefined) {
      if (schema.exclusiveMinimum ? value <= schema.minimum : value < schema.minimum) {
        fail('FieldValueInvalid', `Invalid value: ${value}: ${path} in body should be greater than ${schema.exclusiveMinimum ? '' : 'or equal to '}${schema.minimum}`);
      }
    }
  }
  if (typeof value === 'string') {
    const length = [...value].length;
    if (schema.maxLength !== undefined && length > schema.maxLength) fail('FieldValueTooLong', `Too long: may not be more than ${schema.maxLength} bytes`);
    if (schema.minLength !== undefined && length < schema.minLength) {
      fail('FieldValueInvalid', `Invalid value: ${show(value)}: ${path} in body should be at least ${schema.minLength} chars long`);
    }
    if (schema.pattern && !new RegExp(schema.pattern, 'u').test(value)) {
      fail('FieldValueInvalid', `Invalid value: ${show(value)}: ${path} in body should match '${schema.pattern}'`);
    }
    if (schema.format === 'date-time' && !RFC3339.test(value)) {
      fail('FieldValueInvalid', `Invalid value: ${show(value)}: ${path} in body must be of type date-time: ${show(value)}`);
    }
    if (schema.format === 'uuid' && !UUID.test(value)) fail('FieldValueInvalid', `Invalid value: ${show(value)}: ${path} in body must be of type uuid: ${show(value)}`);
  }
  if (Array.isArray(value)) {
    if (schema.maxItems !== undefined && value.length > schema.maxItems) fail('FieldValueTooMany', `Too many: ${value.length}: must have at most ${schema.maxItems} items`);
    if (schema.minItems !== undefined && value.length < schema.minItems) {
      fail('FieldValueInvalid', `Invalid value: ${value.length}: ${path} in body should have at least ${schema.minItems} items`);
    }
    if (schema['x-kubernetes-list-type'] === 'map') {
      const keys: string[] = schema['x-kubernetes-list-map-keys'] ?? [];
      const seen = new Set<string>();
      value.forEach((item, i) => {
        const id = JSON.stringify(keys.map((k) => (isObject(item) ? item[k] : undefined)));
        if (seen.has(id)) causes.push({ reason: 'FieldValueDuplicate', field: `${path}[${i}]`, message: `Duplicate value: ${id}` });
        seen.add(id);
      });
    }
    if (schema.items) value.forEach((item, i) => validate(item, undefined, schema.items, `${path}[${i}]`, causes, false));
  }
  if (isObject(value)) {
    for (const key of schema.required ?? []) {
      if (value[key] === undefined) causes.push({ reason: 'FieldValueRequired', field: join(path, key), message: 'Required value' });
    }
    const extra = isObject(schema.additionalProperties) ? schema.additionalProperties : undefined;
    for (const [key, v] of Object.entries(value)) {
      const sub = schema.properties?.[key] ?? extra;
      if (sub) validate(v, isObject(old) ? old[key] : undefined, sub, join(path, key), causes, hasOld && isObject(old) && key in old);
    }
  }
  // CEL rules see only values that passed the schema; transition rules (naming oldSelf) run only
  // on update, and only where the old object had the field.
  if (causes.length > before) return;
  for (const rule of schema['x-kubernetes-validations'] ?? []) {
    const transition = /\boldSelf\b/.test(rule.rule);
    if (transition && !hasOld) continue;
    let ok: unknown;
    try {
      ok = compile(rule.rule)({ self: toCel(value), ...(transition ? { oldSelf: toCel(old) } : {}) });
    } catch (err) {
      fail('FieldValueInvalid', `Invalid value: "${wanted ?? 'object'}": rule ${rule.rule}: ${(err as Error).message}`);
      continue;
    }
    if (ok !== true) fail('FieldValueInvalid', `Invalid value: "${wanted ?? 'object'}": ${rule.message ?? `failed rule: ${rule.rule}`}`);
  }
}

/**
 * Admits `input` (create: no `old`; update: the stored object) against `schema`. Returns the
 * pruned and defaulted object and the causes of refusal (empty when admitted).
 */
export function admit(schema: Schema, input: Record<string, unknown>, old?: Record<string, unknown>): Admission {
  const object = structuredClone(input);
  const pruned: string[] = [];
  pruneAndDefault(object, schema, '', pruned, true);
  const causes: FieldCause[] = [];
  const { metadata, apiVersion, kind, ...rest } = object;
  const checkedSchema = { ...schema, properties: { ...schema.properties } };
  delete checkedSchema.properties.metadata;
  delete checkedSchema.properties.apiVersion;
  delete checkedSchema.properties.kind;
  validate(rest, old, checkedSchema, '', causes, old !== undefined);
  void metadata;
  void apiVersion;
  void kind;
  // Root-level fields have no leading dot.
  for (const c of causes) c.field = c.field.replace(/^\./, '');
  return { object, causes, pruned };
}

/** Applies the schema's defaults to an object read from storage (the API server does it on read). */
export function applyDefaults(schema: Schema, object: Record<string, unknown>, inPlace = false): Record<string, unknown> {
  const copy = inPlace ? object : structuredClone(object);
  pruneAndDefault(copy, schema, '', [], true);
  return copy;
}
