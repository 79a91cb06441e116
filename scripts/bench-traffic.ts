/**
 * The identity traffic the ingestion benchmarks send (bench:ingest, bench:pipeline): a
 * deterministic stream of /track, /alias and /engage requests, serialised ahead of time, and a
 * keep-alive sender for it.
 */
import http from 'node:http';

/** Deterministic PRNG (mulberry32), so every run sends the same stream. */
function rng(seed: number) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const EVENT_NAMES = ['Page Viewed', 'Signed Up', 'Logged In', 'Added to Cart', 'Checkout Started', 'Purchase', 'Search', 'Shared', 'Video Played', 'Settings Changed'];
const BROWSERS = ['Chrome', 'Firefox', 'Safari', 'Edge'];
const COUNTRIES = ['US', 'DE', 'FR', 'GB', 'IN', 'BR', 'JP'];
const PLANS = ['free', 'starter', 'pro', 'enterprise'];
const USERS = 50_000;
/** Event times: a fixed past day (2026-11-24 from 06:00 UTC), so every run stores the same rows. */
const T0 = Date.UTC(2026, 10, 24, 6);
/** A range holding every event of the stream. */
export const RANGE = { from: '2026-11-24', to: '2026-11-28' };

/**
 * Unique users over RANGE as the analyses count them (POST /api/query/segmentation, superadmin
 * `key`): with every anonymous visit merged into its user, one per generated user (`Dataset.users`).
 */
export async function uniqueUsers(url: string, key: string, projectId: number): Promise<number> {
  const res = await fetch(`${url}/api/query/segmentation`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ projectId: String(projectId), event: '$all_events', ...RANGE, unit: 'month', type: 'unique' }),
  });
  if (!res.ok) throw new Error(`segmentation: ${res.status} ${await res.text()}`);
  const seg = await res.json() as { series: Array<{ data: Array<{ value: number }> }> };
  return seg.series.reduce((s, x) => s + x.data.reduce((a, d) => a + d.value, 0), 0);
}
export const AUX_BATCH = 50;

/** A deterministic UUID (the anonymous ids mixpanel-browser mints look like `$device:<uuid>`). */
function uuidOf(r: () => number): string {
  const hex = Array.from({ length: 32 }, () => Math.floor(r() * 16).toString(16)).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** One prepared request; `events`: the /track events in it (0 for /alias and /engage). */
export interface Request { path: '/track' | '/alias' | '/engage'; body: string; events: number }
export interface Dataset {
  requests: Request[];
  /** Events sent to /track (all stored: none is a `$create_alias`). */
  events: number;
  /** Distinct users the visits belong to (what a unique count over the range must answer). */
  users: number;
  /** Distinct links the traffic asks for (none is refused: every alias is new to every cluster). */
  links: number;
  aliasCalls: number;
  engageOps: number;
  /** A user whose anonymous id got a profile before it was identified (its keys must reach the user). */
  mergedProfile?: { user: string; key: string; value: string };
}

/**
 * The stream, serialised ahead of time so the generator spends its CPU on sending. Visits of 3-10
 * events by one of 50,000 users. 20 % of visits start anonymous, as mixpanel-browser sends them:
 * `distinct_id` `$device:<uuid>` with `$device_id` `<uuid>`, then identified: three in four by the
 * SDK's `identify()` (a `$identify` event with `$anon_distinct_id`, then events carrying
 * `$device_id` and `$user_id`; the service links both ids), one in four by a server-side
 * `POST /alias {alias: "$device:<uuid>", distinct_id}`. 60 % of identified visits come from a
 * browser that identified earlier (one or two devices per user: every event repeats the same
 * `$device_id`/`$user_id` link). 2 % of visits alias a CRM id to the user; /engage sets profiles
 * (a tenth of visits) and `$set_once`s on anonymous ids before they are identified (merged into
 * the user's profile by the link). /alias and /engage requests carry 50 records each.
 */
export function makeDataset(opts: { events: number; batch: number }): Dataset {
  const { events: EVENTS, batch: BATCH } = opts;
  const STEP_MS = Math.max(1, Math.min(200, Math.floor((3 * 86_400_000) / EVENTS)));
  const r = rng(42);
  const requests: Request[] = [];
  const users = new Set<number>();
  const links = new Set<string>();
  const crm = new Set<number>();
  let batch: unknown[] = [];
  let aliases: unknown[] = [];
  let engage: unknown[] = [];
  let events = 0;
  let aliasCalls = 0;
  let engageOps = 0;
  let mergedProfile: Dataset['mergedProfile'];
  const flushTrack = () => {
    if (batch.length) requests.push({ path: '/track', body: JSON.stringify(batch), events: batch.length });
    batch = [];
  };
  const flushAux = () => {
    if (aliases.length) requests.push({ path: '/alias', body: JSON.stringify(aliases), events: 0 });
    if (engage.length) requests.push({ path: '/engage', body: JSON.stringify(engage), events: 0 });
    aliases = [];
    engage = [];
  };
  const userDevice = (user: number, d: number) => uuidOf(rng(user * 2 + d + 1_000_003));
  while (events < EVENTS) {
    const user = Math.floor(r() * USERS);
    const userId = `user-${user}`;
    users.add(user);
    const len = Math.min(3 + Math.floor(r() * 8), EVENTS - events);
    const anonymous = len >= 2 && r() < 0.2;
    const viaIdentify = r() < 0.75;
    const browser = r() < 0.6;
    const device = anonymous ? uuidOf(r) : browser ? userDevice(user, r() < 0.8 ? 0 : 1) : undefined;
    const anonId = `$device:${device}`;
    const identifiedAt = anonymous ? 1 + Math.floor(r() * Math.min(3, len - 1)) : 0;
    if (anonymous && r() < 0.3) {
      const landing = `/landing/${Math.floor(r() * 20)}`;
      engage.push({ distinct_id: anonId, $set_once: { first_landing: landing, first_referrer: 'https://www.google.com/' } });
      engageOps++;
      mergedProfile ??= { user: userId, key: 'first_landing', value: landing };
    }
    for (let k = 0; k < len; k++) {
      const n = events++;
      const before = anonymous && k < identifiedAt;
      const identifyEvent = anonymous && viaIdentify && k === identifiedAt;
      const properties: Record<string, unknown> = {
        distinct_id: before ? anonId : userId,
        time: T0 + n * STEP_MS,
        $insert_id: `bench-${n}`,
        $browser: BROWSERS[Math.floor(r() * BROWSERS.length)],
        $os: r() < 0.5 ? 'Windows' : 'macOS',
        country: COUNTRIES[Math.floor(r() * COUNTRIES.length)],
        plan: PLANS[Math.floor(r() * PLANS.length)],
        path: `/products/${Math.floor(r() * 500)}`,
        referrer: r() < 0.3 ? 'https://www.google.com/' : 'direct',
        amount: Math.round(r() * 10_000) / 100,
        logged_in: !before,
        session_length: Math.floor(r() * 3600),
        experiment: { id: 'exp-1', variant: r() < 0.5 ? 'a' : 'b' },
      };
      if (device && (before || viaIdentify || !anonymous)) {
        properties.$device_id = device;
        if (!before) {
          properties.$user_id = userId;
          links.add(device); // the $device_id/$user_id rule
        }
      }
      if (identifyEvent) {
        properties.$anon_distinct_id = anonId;
        links.add(anonId);
      }
      batch.push({ event: identifyEvent ? '$identify' : EVENT_NAMES[Math.floor(r() * EVENT_NAMES.length)], properties });
      if (batch.length === BATCH) flushTrack();
    }
    if (anonymous && !viaIdentify) {
      aliases.push({ alias: anonId, distinct_id: userId });
      links.add(anonId);
      aliasCalls++;
    }
    if (!crm.has(user) && r() < 0.02) {
      crm.add(user);
      aliases.push({ alias: `crm-${user}`, distinct_id: userId });
      links.add(`crm-${user}`);
      aliasCalls++;
    }
    if (r() < 0.1) {
      engage.push({ distinct_id: userId, $set: { plan: PLANS[Math.floor(r() * PLANS.length)], $name: `User ${user}` } });
      engageOps++;
    }
    if (aliases.length >= AUX_BATCH || engage.length >= AUX_BATCH) flushAux();
  }
  flushAux();
  flushTrack();
  return { requests, events, users: users.size, links: links.size, aliasCalls, engageOps, mergedProfile };
}

/** POSTs one prepared request; resolves with the status and the Retry-After seconds (0 when none). */
function post(agent: http.Agent, url: URL, token: string, req: Request): Promise<{ status: number; retryAfter: number }> {
  return new Promise((resolve, reject) => {
    const r = http.request(
      { host: url.hostname, port: url.port, path: req.path, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(req.body), 'x-service-token': token } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: Number(res.headers['retry-after']) || 0 }));
      },
    );
    r.on('error', reject);
    r.end(req.body);
  });
}

/**
 * Sends the requests in order over `connections` keep-alive connections (each takes the next
 * request when its previous one is answered). A 503 or 429 is retried after its Retry-After (at
 * most 1 s) unless `retryUnavailable` is false; any other answer but 200 counts in `failed`.
 * Records [ms since the start, /track events accepted so far] at each accepted /track.
 */
export async function sendAll(url: string, token: string, requests: Request[], connections: number, opts: { retryUnavailable?: boolean } = {}) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const target = new URL(url);
  const statuses: Record<number, number> = {};
  const acceptedCurve: Array<[number, number]> = [];
  let accepted = 0;
  let failed = 0;
  let next = 0;
  const started = Date.now();
  await Promise.all(Array.from({ length: connections }, async () => {
    while (next < requests.length) {
      const req = requests[next++];
      for (;;) {
        const { status, retryAfter } = await post(agent, target, token, req);
        statuses[status] = (statuses[status] ?? 0) + 1;
        if (opts.retryUnavailable !== false && (status === 503 || status === 429)) {
          await new Promise((r) => setTimeout(r, Math.min(1000, Math.max(50, retryAfter * 1000))));
          continue;
        }
        if (status !== 200) failed++;
        else if (req.events) acceptedCurve.push([Date.now() - started, (accepted += req.events)]);
        break;
      }
    }
  }));
  agent.destroy();
  return { accepted, failed, statuses, acceptedCurve, elapsedMs: Date.now() - started };
}
