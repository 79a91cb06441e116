import { AppError } from '../http/errors.js';
import { LIMITS } from '../limits.js';

/**
 * Validation, sanitising and enrichment of ingestion records, and the record shapes the API
 * publishes to the buffer (plain JSON: they cross NATS). `__proto__` keys become ordinary own
 * properties (setOwn) and never touch a prototype.
 */

/** Longest distinct_id / alias / event name accepted (the metadata store keys ids in 255 characters). */
export const MAX_ID_LENGTH = 255;
/** Deepest nesting of a property value. */
export const MAX_PROPERTY_DEPTH = 32;
/** Latest `time` accepted (year 9999). */
const MAX_TIME_MS = 253_402_300_799_999;

export type Props = Record<string, unknown>;

/** A stored-ready event (the `track` batch record). */
export interface TrackEventRecord {
  t: 'e';
  /** EventRow.id: derived from the dedup key, so every copy of an event carries the same id. */
  id: number;
  event: string;
  distinct_id: string;
  time: number;
  insert_id: string;
  received_at: number;
  properties: Props;
}

/** A `$create_alias` event (what Mixpanel's `alias()` sends to /track), applied as a link. */
export interface TrackAliasRecord {
  t: 'a';
  alias: string;
  distinct_id: string;
  /** The client's `time` of the alias call (Unix ms), when sent: where a non-retroactive link starts. */
  time?: number;
}

export type TrackRecord = TrackEventRecord | TrackAliasRecord;

/** An engage op as applied by the worker (destructive ops the caller may not make never get here). */
export interface EngageRecord {
  index: number;
  distinct_id: string;
  set?: Props;
  set_once?: Props;
  add?: Record<string, number>;
  unset?: string[];
  delete?: true;
}

export interface AliasRecord {
  alias: string;
  distinct_id: string;
}

/** 400 for a record that does not have the API's shape (`message` names the first problem). */
export function invalidRecord(message: string): AppError {
  return new AppError(400, 'invalid json', { message, body: { message } });
}

export const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export function cleanString(s: string): string {
  const ws = s as unknown as { isWellFormed(): boolean; toWellFormed(): string }; // ES2024, in Node 20
  const w = ws.isWellFormed() ? s : ws.toWellFormed();
  return w.includes('\u0000') ? w.replace(/\u0000/g, '\uFFFD') : w;
}

/** Sets an own property, also for the key `__proto__` (plain assignment would set the prototype). */
export function setOwn(obj: Props, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

const TOO_DEEP = new Error('too deep');

/**
 * A JSON-safe copy of a property value: well-formed strings without NUL, finite numbers (others
 * become null), plain objects whose `__proto__` keys are own properties; deeper than
 * MAX_PROPERTY_DEPTH is refused (`path` names the value in the 400).
 */
export function sanitize(value: unknown, path: string, depth = 0): unknown {
  try {
    return copy(value, depth);
  } catch (err) {
    if (err === TOO_DEEP) throw invalidRecord(`${path}: nested deeper than ${MAX_PROPERTY_DEPTH} levels`);
    throw err;
  }
}

function copy(value: unknown, depth: number): unknown {
  switch (typeof value) {
    case 'string':
      return cleanString(value);
    case 'number':
      return Number.isFinite(value) ? value : null;
    case 'boolean':
      return value;
    case 'object': {
      if (value === null) return null;
      if (depth >= MAX_PROPERTY_DEPTH) throw TOO_DEEP;
      if (Array.isArray(value)) {
        const arr = new Array(value.length);
        for (let i = 0; i < value.length; i++) arr[i] = copy(value[i], depth + 1);
        return arr;
      }
      const out: Props = {};
      for (const k of Object.keys(value)) setOwn(out, cleanString(k), copy((value as Props)[k], depth + 1));
      return out;
    }
    default:
      return null;
  }
}

/** An id (distinct_id, alias): a non-empty string (numbers are accepted as their decimal text). */
export function idOf(value: unknown): string | undefined {
  const s = typeof value === 'number' && Number.isFinite(value) ? String(value) : typeof value === 'string' ? cleanString(value) : undefined;
  if (s === undefined || s.length === 0 || s.length > MAX_ID_LENGTH) return undefined;
  return s;
}

/**
 * Unix ms from a client `time`: integer ms, or (as Mixpanel's SDKs send it) seconds, possibly
 * fractional. Values below 1e11 (before 1973 in ms) are read as seconds.
 */
export function timeOf(value: unknown, path: string): number {
  const n = typeof value === 'string' && /^\d+(\.\d+)?$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) throw invalidRecord(`${path}: must be a Unix timestamp`);
  const ms = Math.round(n < 1e11 ? n * 1000 : n);
  if (ms > MAX_TIME_MS) throw invalidRecord(`${path}: must be a Unix timestamp`);
  return ms;
}

/** The per-record token of a record (`token`, or Mixpanel's `$token` on engage). */
export function recordToken(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

/** Splits a body into records: one object, or an array of at most 500. */
export function asRecords(payload: unknown): unknown[] {
  const records = Array.isArray(payload) ? payload : [payload];
  if (records.length > LIMITS.ingestionBatchRecords) throw new AppError(400, 'batch too large');
  if (!Array.isArray(payload) && !isPlainObject(payload)) throw invalidRecord('body: must be an object or an array of objects');
  return records;
}

/**
 * EventRow.id: a 53-bit hash (cyrb53) of the dedup key, exact in a double and the same for every
 * copy of an event. Not cryptographic; it only needs to spread ids.
 */
export function eventId(projectId: number, event: string, distinctId: string, time: number, insertId: string): number {
  // The hash of `${projectId}\0${event}\0${distinctId}\0${time}\0${insertId}`, fed piece by piece
  // (no key string per event).
  const h = HASH;
  h[0] = 0xdeadbeef;
  h[1] = 0x41c6ce57;
  hashNumber(h, projectId);
  hashChar(h, 0);
  hashString(h, event);
  hashChar(h, 0);
  hashString(h, distinctId);
  hashChar(h, 0);
  hashNumber(h, time);
  hashChar(h, 0);
  hashString(h, insertId);
  let h1 = h[0];
  let h2 = h[1];
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

const HASH = new Int32Array(2);
const DIGITS = new Uint8Array(24);

function hashChar(h: Int32Array, ch: number): void {
  h[0] = Math.imul(h[0] ^ ch, 2654435761);
  h[1] = Math.imul(h[1] ^ ch, 1597334677);
}

function hashString(h: Int32Array, s: string): void {
  let h1 = h[0];
  let h2 = h[1];
  for (let i = 0; i < s.length; i++) {
    const ch = s.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h[0] = h1;
  h[1] = h2;
}

/** The characters of String(n): digits straight from a non-negative safe integer, else the string. */
function hashNumber(h: Int32Array, n: number): void {
  if (!Number.isSafeInteger(n) || n < 0) return hashString(h, String(n));
  let len = 0;
  do {
    DIGITS[len++] = 48 + (n % 10);
    n = Math.floor(n / 10);
  } while (n > 0);
  while (len > 0) hashChar(h, DIGITS[--len]);
}

/** A profile's stored properties: the parallel key/value lists beside its JSON. */
export function propArrays(props: Props): { prop_keys: string[]; prop_values: string[] } {
  const { prop_keys, prop_values } = eventPropLists(props);
  return { prop_keys, prop_values };
}

/** An event's stored properties (StoredEvent): the key/value lists and each value's kind, `s` string or `j` JSON. */
export function eventPropLists(props: Props): { prop_keys: string[]; prop_values: string[]; prop_types: string } {
  const prop_keys = Object.keys(props);
  const prop_values = new Array<string>(prop_keys.length);
  let prop_types = '';
  for (let i = 0; i < prop_keys.length; i++) {
    const v = props[prop_keys[i]];
    prop_values[i] = propValue(v);
    prop_types += typeof v === 'string' ? 's' : 'j';
  }
  return { prop_keys, prop_values, prop_types };
}

/** A property value's stored text (prop_values): strings as they are, other values as JSON. */
export function propValue(v: unknown): string {
  return typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : JSON.stringify(v);
}

/**
 * Buffer.byteLength(JSON.stringify(v)) without building the JSON text (the API's `$payload_size`
 * of every event): counted over JSON.parse output (plain objects, arrays, strings, finite numbers,
 * booleans, null); -1 for any other value, whose size the caller takes from JSON.stringify.
 */
export function jsonByteLength(v: unknown): number {
  switch (typeof v) {
    case 'string':
      return jsonStringBytes(v);
    case 'number':
      return Number.isFinite(v) ? (Number.isSafeInteger(v) && v >= 0 ? digitCount(v) : String(v).length) : 4;
    case 'boolean':
      return v ? 4 : 5;
    case 'object': {
      if (v === null) return 4;
      if (Array.isArray(v)) {
        let n = v.length > 0 ? v.length + 1 : 2; // brackets and commas
        for (let i = 0; i < v.length; i++) {
          const b = jsonByteLength(v[i]);
          if (b < 0) return -1;
          n += b;
        }
        return n;
      }
      const proto = Object.getPrototypeOf(v);
      if ((proto !== Object.prototype && proto !== null) || typeof (v as { toJSON?: unknown }).toJSON === 'function') return -1;
      let n = 1;
      const o = v as Props;
      for (const k of Object.keys(o)) {
        const b = jsonByteLength(o[k]);
        if (b < 0) return -1;
        n += jsonStringBytes(k) + 2 + b; // "key": value, (the last comma is the closing brace)
      }
      return n === 1 ? 2 : n;
    }
    default:
      return -1;
  }
}

function digitCount(n: number): number {
  let d = 1;
  while (n >= 10) {
    n = Math.floor(n / 10);
    d++;
  }
  return d;
}

/** UTF-8 bytes of a string as JSON.stringify writes it (quotes, escapes, lone surrogates as \uXXXX). */
function jsonStringBytes(s: string): number {
  let n = 2;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) {
      if (c >= 0x20) n += c === 34 || c === 92 ? 2 : 1;
      else n += c === 8 || c === 9 || c === 10 || c === 12 || c === 13 ? 2 : 6;
    } else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      const d = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4;
        i++;
      } else n += 6;
    } else if (c >= 0xdc00 && c <= 0xdfff) n += 6;
    else n += 3;
  }
  return n;
}

/** Copies `src` into a null-prototype object (JSON.parse output may carry a `__proto__` key). */
export function nullProto(src: unknown): Props {
  const out: Props = Object.create(null);
  if (isPlainObject(src)) for (const k of Object.keys(src)) out[k] = (src as Props)[k];
  return out;
}
