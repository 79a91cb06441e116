import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const MAIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../apps/server/src/main.ts');

describe('HEAP_GROWING_PERCENT', () => {
  it('refuses a value that is not a whole number ≥ 0 before starting anything, naming the variable', function () {
    this.timeout(30_000);
    for (const value of ['abc', '-5', '1.5']) {
      const r = spawnSync(process.execPath, ['--import', 'tsx', MAIN, 'all'], {
        env: { ...process.env, HEAP_GROWING_PERCENT: value, PORT: '0', DATA_DIR: '/nonexistent-heap-test' }, encoding: 'utf8', timeout: 20_000,
      });
      assert.notEqual(r.status, 0, value);
      assert.match(r.stderr, new RegExp(`HEAP_GROWING_PERCENT: must be a whole number ≥ 0, got ${value.replace('.', '\\.')}`), value);
    }
  });
});
