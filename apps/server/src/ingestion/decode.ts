import type { Context } from 'koa';
import { invalidJson } from '../http/errors.js';

/**
 * Request decoding for the ingestion endpoints: plain JSON bodies (docs/api.md), and what Mixpanel's
 * SDKs send: `application/x-www-form-urlencoded` bodies or GET query strings with `data=` holding
 * base64 or plain JSON, plus the `ip=` and `verbose=` flags.
 */
export interface DecodedRequest {
  payload: unknown;
  /** The request came in Mixpanel's encoding (`data=`). */
  mixpanel: boolean;
  /** `verbose=1`: answer JSON even to a Mixpanel-encoded request. */
  verbose: boolean;
  /** `ip=0` turns off geo from the connection's address. */
  useIp: boolean;
}

function firstParam(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** Parses `data` as plain JSON or as (standard or URL-safe) base64 of JSON. */
export function decodeData(data: string): unknown {
  const s = data.trim();
  if (s.startsWith('{') || s.startsWith('[')) return parseJson(s);
  if (!/^[A-Za-z0-9+/\-_=\s]*$/.test(s) || s.length === 0) throw invalidJson();
  // A form body's `+` arrives as a space when the SDK did not percent-encode the base64 (Mixpanel's don't).
  const b64 = s.replace(/ /g, '+').replace(/-/g, '+').replace(/_/g, '/').replace(/\s/g, '');
  const text = Buffer.from(b64, 'base64').toString('utf8');
  return parseJson(text);
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw invalidJson();
  }
}

export function decodeRequest(ctx: Context): DecodedRequest {
  const q = ctx.query;
  let verbose = firstParam(q.verbose) === '1';
  let ip = firstParam(q.ip);
  const raw = ctx.state.rawBody;
  const queryData = firstParam(q.data);
  const contentType = (ctx.get('content-type') || '').toLowerCase();
  const text = raw && raw.length > 0 ? raw.toString('utf8') : '';
  const looksForm = contentType.includes('application/x-www-form-urlencoded') || /^\s*data=/.test(text);
  if (text && looksForm && !/^\s*[[{]/.test(text)) {
    const form = new URLSearchParams(text);
    const data = form.get('data');
    if (data === null) throw invalidJson();
    if (form.get('verbose') === '1') verbose = true;
    ip = form.get('ip') ?? ip;
    return { payload: decodeData(data), mixpanel: true, verbose, useIp: ip !== '0' };
  }
  if (text) return { payload: parseJson(text), mixpanel: false, verbose, useIp: ip !== '0' };
  if (queryData !== undefined) return { payload: decodeData(queryData), mixpanel: true, verbose, useIp: ip !== '0' };
  throw invalidJson();
}
