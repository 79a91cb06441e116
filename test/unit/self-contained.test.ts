import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The repository stands on its own: no document, comment or test points to a file outside it.
 * The product decisions live in docs/decisions.md, the HTTP reference in docs/api.md.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** Names of documents that are not in the repository. */
const OUTSIDE = [/\.\.\/shared\//, /\bshared\/(spec|design)\//, /\bproduct\.md\b/, /\bapi-spec\.md\b/];

describe('the repository refers to nothing outside it', () => {
  it('no tracked file names a document outside the repository', () => {
    const files = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0').filter(Boolean)
      .filter((f) => /\.(md|ts|tsx|mjs|js|ya?ml|json|sh|tpl)$/.test(f) && f !== 'package-lock.json' && f !== path.relative(ROOT, fileURLToPath(import.meta.url)));
    const found: string[] = [];
    for (const f of files) {
      const file = path.join(ROOT, f);
      if (!fs.existsSync(file)) continue; // deleted in the working tree, not yet committed
      fs.readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
        if (OUTSIDE.some((re) => re.test(line))) found.push(`${f}:${i + 1}: ${line.trim().slice(0, 120)}`);
      });
    }
    assert.deepEqual(found, [], `point to docs/decisions.md or docs/api.md instead:\n${found.join('\n')}`);
  });
});
