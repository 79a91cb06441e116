import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import type { CredentialSource, TokenProject } from '../../apps/server/src/auth/credentials.js';
import { sha256Hex } from '../../apps/server/src/auth/credentials.js';

/**
 * Credentials as route kinds: `projectToken` and `flagSecret` resolved in one place
 * (auth/credentials.ts), the error envelope declared per route, OpenAPI security per kind.
 */
forEachBackend('auth kinds', (backend) => {
  let t: TestService;
  let acme: Tenant;

  before(async () => {
    t = await startTestService(backend);
    acme = await createTenant(t, 'kinds');
  });
  after(async () => {
    t.svc.deps.auth.credentials.use(undefined);
    await t?.close();
  });

  it('OpenAPI security entries follow the kinds', async () => {
    const doc = (await t.anon.get('/openapi.json')).body;
    assert.deepEqual(doc.paths['/track'].post.security, [{ projectToken: [] }]);
    assert.deepEqual(doc.paths['/flags/evaluate'].post.security, [{ projectToken: [] }]);
    assert.deepEqual(doc.paths['/flags'].get.security, [{ projectToken: [] }]);
    assert.deepEqual(doc.paths['/flags/local-evaluation'].get.security, [{ flagSecret: [] }]);
    assert.deepEqual(doc.paths['/api/projects'].get.security, [{ bearer: [] }]);
    assert.deepEqual(doc.paths['/health'].get.security, []);
    assert.ok(doc.components.securitySchemes.flagSecret);
  });

  it('/health shows no tenantConfig when TENANT_CONFIG_PATH is unset', async () => {
    const health = await t.anon.get('/health');
    assert.equal(health.status, 200);
    assert.equal('tenantConfig' in health.body, false);
  });

  it('the envelope is the route declaration’s, also for errors raised before routing (405, 413)', async () => {
    const wrongMethod = await t.anon.request('PUT', '/track');
    assert.deepEqual([wrongMethod.status, wrongMethod.body.status, wrongMethod.body.error], [405, 0, 'method not allowed']);
    const big = await t.anon.post('/v/0.14/track', undefined, { raw: 'x'.repeat(1024 * 1024 + 10) });
    assert.deepEqual([big.status, big.body], [413, { status: 0, error: 'payload too large' }]);
    const secret = await t.anon.get('/flags/local-evaluation', { token: 'nope' });
    assert.deepEqual([secret.status, secret.body], [401, { status: 0, error: 'invalid flag secret' }]);
    // A flag-secret route never takes the project token (nor an /api/* credential), and the reverse.
    const withToken = await t.anon.get('/flags/local-evaluation', { headers: { 'x-service-token': acme.project.token } });
    assert.equal(withToken.status, 401);
    const withAdmin = await t.admin.get('/flags/local-evaluation');
    assert.equal(withAdmin.status, 401);
    const api = await t.anon.get('/api/projects');
    assert.deepEqual([api.status, api.body.status, api.body.error], [401, undefined, 'unauthorized']);
  });

  it('consults the in-memory source before the database, for project tokens and flag secrets', async () => {
    const listed: TokenProject = { id: acme.project.id, org_id: acme.org.id, name: 'from memory', token: 'memory-only-token' };
    const secret = 'memory-only-secret';
    const source: CredentialSource = {
      projectByToken: (token) => (token === listed.token ? listed : undefined),
      projectByFlagSecretSha256: (hash) => (hash === sha256Hex(secret) ? listed : undefined),
    };
    t.svc.deps.auth.credentials.use(source);
    try {
      const tracked = await t.anon.post('/track', { event: 'e', properties: { distinct_id: 'u1', token: listed.token } });
      assert.deepEqual([tracked.status, tracked.body], [200, { status: 1, inserted: 1 }]);
      const evaluated = await t.anon.post('/flags/evaluate', { distinct_id: 'u1', token: listed.token });
      assert.equal(evaluated.status, 200, evaluated.text);
      const local = await t.anon.get('/flags/local-evaluation', { token: secret });
      assert.equal(local.status, 200, local.text);
      // Tokens the source does not list still resolve from the database.
      const fromDb = await t.anon.post('/track', { event: 'e', properties: { distinct_id: 'u1' } }, { headers: { 'x-service-token': acme.project.token } });
      assert.equal(fromDb.status, 200);
    } finally {
      t.svc.deps.auth.credentials.use(undefined);
    }
    const gone = await t.anon.post('/track', { event: 'e', properties: { distinct_id: 'u1', token: listed.token } });
    assert.deepEqual([gone.status, gone.body], [401, { status: 0, error: 'invalid token' }]);
  });
});
