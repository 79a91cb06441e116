import type { Context } from 'koa';
import { createRequire } from 'node:module';
import { isIP } from 'node:net';

/**
 * Client address and geo enrichment. The address is the socket's peer; `X-Forwarded-For` is
 * believed only when that peer is a configured trusted proxy, walking the list from the right
 * past trusted proxies. Geo comes from geoip-lite's bundled database (loaded on first use,
 * never downloaded at run time).
 */
const normalise = (ip: string) => (ip.startsWith('::ffff:') && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip);

export function clientIp(ctx: Context, trustedProxies: string[]): string {
  const peer = normalise(ctx.req.socket.remoteAddress ?? '');
  if (!trustedProxies.length || !trustedProxies.includes(peer)) return peer;
  const forwarded = (ctx.get('x-forwarded-for') || '').split(',').map((s) => normalise(s.trim())).filter(Boolean);
  for (let i = forwarded.length - 1; i >= 0; i--) {
    const hop = forwarded[i];
    if (!trustedProxies.includes(hop)) return isIP(hop) ? hop : peer;
  }
  return forwarded[0] && isIP(forwarded[0]) ? forwarded[0] : peer;
}

type GeoLookup = (ip: string) => { country: string; region: string; city: string; timezone: string } | null;
let lookup: GeoLookup | undefined;

function geoip(): GeoLookup {
  if (!lookup) {
    const require = createRequire(import.meta.url);
    const lib = require('geoip-lite') as { lookup: GeoLookup };
    lookup = (ip) => lib.lookup(ip);
  }
  return lookup;
}

/** Geo properties of an address (`$country_code`, `$region`, `$city`, `$timezone`); empty when unknown. */
/** Loopback, private and link-local addresses have no geo (and never load the database). */
const PRIVATE = /^(127\.|10\.|192\.168\.|172\.(1[6-9]|2\d|3[01])\.|169\.254\.|0\.|::1$|::$|f[cd][0-9a-f]{2}:|fe80:)/i;

export function geoProps(ip: string | undefined): Record<string, string> {
  if (!ip || !isIP(ip) || PRIVATE.test(ip)) return {};
  const g = geoip()(ip);
  if (!g) return {};
  const out: Record<string, string> = {};
  if (g.country) out.$country_code = g.country;
  if (g.region) out.$region = g.region;
  if (g.city) out.$city = g.city;
  if (g.timezone) out.$timezone = g.timezone;
  return out;
}

/** Memoises geo per address within one request. */
export function geoCache(): (ip: string | undefined) => Record<string, string> {
  const cache = new Map<string, Record<string, string>>();
  return (ip) => {
    if (!ip) return {};
    let g = cache.get(ip);
    if (!g) cache.set(ip, (g = geoProps(ip)));
    return g;
  };
}
