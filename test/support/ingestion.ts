import type { TestService } from './service.js';
import { Client } from './http.js';

/** Helpers shared by the ingestion, identity and data tests. */

/** Waits until every accepted batch has been applied to the stores. */
export async function drained(t: TestService): Promise<void> {
  const buffer = t.svc.deps.buffer as { idle?: () => Promise<void> };
  if (buffer.idle) await buffer.idle();
  else await new Promise((r) => setTimeout(r, 300));
}

/** A client that sends the project token in X-Service-Token. */
export function ingest(t: TestService, token: string, headers: Record<string, string> = {}) {
  const c = new Client(t.url);
  return {
    post: (path: string, body: unknown, extra: Record<string, string> = {}) =>
      c.post(path, body, { headers: { 'x-service-token': token, ...headers, ...extra } }),
    raw: (path: string, raw: string | Buffer, contentType = 'application/json', extra: Record<string, string> = {}) =>
      c.post(path, undefined, { raw, headers: { 'x-service-token': token, 'content-type': contentType, ...headers, ...extra } }),
  };
}

export const ev = (event: string, distinctId: string, props: Record<string, unknown> = {}) => ({
  event,
  properties: { distinct_id: distinctId, ...props },
});
