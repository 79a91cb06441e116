import type { Context } from 'koa';
import { z } from 'zod';
import type { Deps } from '../deps.js';
import { route, type RouteSpec } from '../http/route.js';

const Check = z.enum(['ok', 'error']);
const HealthSchema = z
  .object({
    status: Check,
    version: z.string(),
    checks: z.object({ metadata: Check, events: Check, buffer: Check }),
    tenantConfig: z.object({ generation: z.number().int(), projects: z.number().int() }).optional()
      .openapi({ description: 'the applied tenant config (only when TENANT_CONFIG_PATH is set)' }),
  })
  .openapi('Health');

const withTimeout = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), ms).unref())]);

export function healthRoutes(deps: Deps): RouteSpec[] {
  async function checks() {
    const probe = (p: () => Promise<unknown>) => withTimeout(p(), 2000).then(() => 'ok' as const, () => 'error' as const);
    const [metadata, events, buffer] = await Promise.all([
      probe(() => deps.db.raw('select 1')),
      probe(() => deps.events.ping()),
      probe(() => deps.buffer.ping()),
    ]);
    return { metadata, events, buffer };
  }
  async function report(ctx: Context) {
    const c = await checks();
    const ok = Object.values(c).every((v) => v === 'ok');
    ctx.status = ok ? 200 : 503;
    const tenants = deps.tenants?.config;
    return {
      status: ok ? 'ok' : 'error', version: deps.version, checks: c,
      ...(tenants ? { tenantConfig: { generation: tenants.generation, projects: tenants.projects } } : {}),
    };
  }
  return [
    route({
      method: 'get', path: '/health', tag: 'Health', auth: 'none', response: HealthSchema,
      summary: 'Service health with a check per backing store (503 when one fails)',
      handler: async ({ ctx }) => { ctx.body = await report(ctx); return undefined; },
    }),
    route({
      method: 'get', path: '/health/live', tag: 'Health', auth: 'none',
      summary: 'Liveness: the process answers',
      handler: () => ({ status: 'ok' }),
    }),
    route({
      method: 'get', path: '/health/ready', tag: 'Health', auth: 'none', response: HealthSchema,
      summary: 'Readiness: every backing store answers (503 otherwise)',
      handler: async ({ ctx }) => { ctx.body = await report(ctx); return undefined; },
    }),
  ];
}
