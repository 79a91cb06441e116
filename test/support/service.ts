import { loadConfig } from '../../apps/server/src/config.js';
import { buildDeps, startService, type RunningService } from '../../apps/server/src/app.js';
import type { Backend } from './backends.js';
import { Client } from './http.js';
import { TestIdp } from './idp.js';
import { releaseAtEnd } from './root-hooks.js';

export const SUPERADMIN_KEY = 'test-superadmin-key';

export interface TestService {
  url: string;
  svc: RunningService;
  idp: TestIdp;
  /** A client with the superadmin key. */
  admin: Client;
  /** A client with no credential. */
  anon: Client;
  client(token?: string): Client;
  close(): Promise<void>;
}

/**
 * Starts the whole service (API + workers) on loopback, on fresh stores of `backend`, with a
 * real identity provider. Extra env (rate limits, ...) can be passed in `env`.
 */
export async function startTestService(backend: Backend, env: Record<string, string> = {}): Promise<TestService> {
  const idp = await TestIdp.start();
  const stores = await backend.provision();
  // Suites fire queries and SDK polls faster than the default 10/s (docs/decisions.md, "Limits") per credential or flag secret:
  // those buckets are opened wide here; the rate-limit tests (rate-limits, replicas-limits, flags)
  // set their own bounds.
  const config = loadConfig({
    ...stores.env, ...idp.env(), SUPERADMIN_KEY, LOG_LEVEL: 'silent', DATA_DIR: '/tmp/analytics-test',
    QUERY_RATE_PER_SECOND: '100000', QUERY_RATE_BURST: '100000', FLAGS_LOCAL_RATE_PER_SECOND: '100000', FLAGS_LOCAL_RATE_BURST: '100000', ...env,
  });
  const deps = await buildDeps(config, stores.overrides);
  const svc = await startService(deps, { port: 0, host: '127.0.0.1' });
  return {
    url: svc.url,
    svc,
    idp,
    admin: new Client(svc.url, SUPERADMIN_KEY),
    anon: new Client(svc.url),
    client: (token?: string) => new Client(svc.url, token),
    async close() {
      await svc.close();
      await idp.close();
      await stores.drop();
    },
  };
}

const shared = new Map<Backend['name'], Promise<TestService>>();
/**
 * The shared service's one change to the default env: the ingestion window per client IP, the one
 * limit tenants do not isolate (every suite sends from 127.0.0.1), is opened wide so one suite's
 * events do not count against the next one's. Suites testing it start their own service.
 */
const SHARED_ENV = { RATE_LIMIT_PER_IP: '100000000' };

/**
 * The mocha process' one service on `backend`, with the default env: started by the first suite
 * that asks, closed (and its databases dropped) after the run's last test by the root hooks
 * (test/support/root-hooks.ts). For suites that work only inside tenants they create
 * (createTenant) and assert nothing about the store as a whole; its `close` does nothing. A suite
 * that sets env, restarts or stops the service, needs an empty store, or counts across every
 * organisation starts its own with startTestService (CONTRIBUTING.md, "Tests").
 */
export function sharedService(backend: Backend): Promise<TestService> {
  let started = shared.get(backend.name);
  if (!started) {
    let starting: Promise<TestService> | undefined;
    releaseAtEnd(async () => {
      shared.delete(backend.name);
      const t = await starting?.catch(() => undefined);
      await t?.close();
    });
    starting = startTestService(backend, SHARED_ENV);
    started = starting.then((t) => ({ ...t, close: async () => {} }));
    started.catch(() => shared.delete(backend.name));
    shared.set(backend.name, started);
  }
  return started;
}

export interface Tenant {
  org: { id: number; name: string };
  project: { id: number; name: string; token: string };
  /** ID tokens per role; each user is a member of this org only. */
  tokens: Record<'owner' | 'admin' | 'member' | 'viewer', string>;
  owner: Client;
}

/** An organisation with a project and one user per role (invited by the superadmin, bound by token). */
export async function createTenant(t: TestService, name: string): Promise<Tenant> {
  const org = (await t.admin.post('/admin/orgs', { name })).body;
  const project = (await t.admin.post(`/admin/orgs/${org.id}/projects`, { name: `${name} web` })).body;
  const tokens = {} as Tenant['tokens'];
  for (const role of ['owner', 'admin', 'member', 'viewer'] as const) {
    const email = `${role}.${org.id}.${name.replace(/\W/g, '')}@example.test`;
    await t.admin.post(`/admin/orgs/${org.id}/members`, { email, role });
    tokens[role] = await t.idp.token(`${role}-${org.id}-${name}`, { email });
  }
  return { org, project, tokens, owner: t.client(tokens.owner) };
}
