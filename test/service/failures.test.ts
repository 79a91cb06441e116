import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { startTestService, type TestService } from '../support/service.js';

forEachBackend('unexpected failures', (backend) => {
  let t: TestService;
  before(async () => {
    t = await startTestService(backend);
  });
  after(async () => t?.close());

  it('answer 500 with a code and no stack trace, and health reports the broken store with 503', async () => {
    await t.svc.deps.db.destroy();
    const r = await t.admin.get('/api/projects');
    assert.equal(r.status, 500);
    assert.equal(r.body.error, 'internal error');
    assert.equal(r.body.code, 'internal_error');
    assert.doesNotMatch(r.text, /at \w+ \(|\.ts:\d+/, 'no stack trace in the body');
    const h = await t.anon.get('/health');
    assert.equal(h.status, 503);
    assert.equal(h.body.status, 'error');
    assert.equal(h.body.checks.metadata, 'error');
    assert.equal(h.body.checks.events, 'ok');
    assert.equal((await t.anon.get('/health/ready')).status, 503);
    assert.equal((await t.anon.get('/health/live')).status, 200);
  });
});
