import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkImportCycles, checkLayers, checkPackageEdges, importCycles, importsOf } from '../../scripts/check-package-edges.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** scripts/check-package-edges.ts (`npm run check:edges`, run by CI before the suite). */
describe('package edges: workspaces import each other through their public entries', () => {
  it('the repository has no deep import across its workspaces, and each declares what it imports', () => {
    assert.deepEqual(checkPackageEdges(repoRoot), []);
  });

  describe('on a two-package fixture', () => {
    let root: string;
    const write = (file: string, text: string) => {
      mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
      writeFileSync(path.join(root, file), text);
    };
    beforeEach(() => {
      root = mkdtempSync(path.join(tmpdir(), 'edges-'));
      write('package.json', JSON.stringify({ name: 'root', private: true, workspaces: ['lib', 'app'] }));
      write('lib/package.json', JSON.stringify({ name: '@x/lib', exports: { './api': './src/api.js' }, dependencies: { zod: '^4' } }));
      write('lib/src/api.ts', "import { z } from 'zod';\nexport const Name = z.string();\n");
      write('lib/src/internal.ts', 'export const secret = 1;\n');
      write('app/package.json', JSON.stringify({ name: '@x/app', dependencies: { '@x/lib': '0.1.0' }, devDependencies: { typesonly: '1' } }));
    });
    afterEach(() => rmSync(root, { recursive: true, force: true }));

    it('accepts an import through the entry, node built-ins, and a dev dependency used for types only', () => {
      write('app/src/main.ts', [
        "import { Name } from '@x/lib/api';",
        "import fs from 'node:fs';",
        "import path from 'path';",
        "import type { T } from 'typesonly';",
        "import { type U } from 'typesonly';",
        "import { local } from './local.js';",
        'export const x = [Name, fs, path, local];',
      ].join('\n'));
      write('app/src/local.ts', 'export const local = 1;\n');
      assert.deepEqual(checkPackageEdges(root), []);
    });

    it('refuses a relative path into another package, an unexported subpath, and undeclared packages', () => {
      write('app/src/main.ts', [
        "import { secret } from '../../lib/src/internal.js';",
        "export { secret as s } from '@x/lib/src/internal.js';",
        "const later = () => import('left-pad');",
        "const req = require('typesonly');",
        'export const x = [secret, later, req];',
      ].join('\n'));
      const violations = checkPackageEdges(root);
      assert.equal(violations.length, 4, violations.join('\n'));
      assert.match(violations[0]!, /app\/src\/main\.ts:1: '\.\.\/\.\.\/lib\/src\/internal\.js' reaches outside @x\/app/);
      assert.match(violations[1]!, /main\.ts:2: '@x\/lib\/src\/internal\.js' is not a public entry of @x\/lib \(exports: \.\/api\)/);
      assert.match(violations[2]!, /main\.ts:3: 'left-pad' is not declared in @x\/app's dependencies or peerDependencies/);
      // a dev dependency may be named by a type-only import, not loaded at run time
      assert.match(violations[3]!, /main\.ts:4: 'typesonly' is not declared in @x\/app's dependencies or peerDependencies/);
    });
  });

  it('reads import type, export from, import() and require() with the TypeScript parser, not a pattern', () => {
    const sites = importsOf('x.ts', [
      "import type { A } from 'a';",
      "import { type B, type C } from 'b';",
      "import { type D, E } from 'd';",
      "export * from './e.js';",
      "type F = import('f').F;",
      "const g = await import('g');",
      "// import { h } from 'h';",
      "const s = \"import { i } from 'i'\";",
    ].join('\n'));
    assert.deepEqual(sites.map((s) => [s.specifier, s.typeOnly]), [
      ['a', true], ['b', true], ['d', false], ['./e.js', false], ['f', true], ['g', false],
    ]);
  });
});

describe('import cycles: no workspace imports itself in a circle at run time', () => {
  it('the repository has none (apps/server/src included); circles closed only by import type are allowed', () => {
    assert.deepEqual(checkImportCycles(repoRoot), []);
  });

  it('finds a circle closed by a run-time import, in any form, and not one closed by types only', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cycles-'));
    try {
      const write = (file: string, text: string) => {
        mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
        writeFileSync(path.join(dir, file), text);
      };
      // a -> b -> c -> a at run time (a folder's index, an export-from); d <-> e only through types.
      write('a.ts', "import { b } from './b/index.js';\nexport const a = () => b;\n");
      write('b/index.ts', "export { c as b } from '../c.js';\n");
      write('c.ts', "import { a } from './a.js';\nexport const c = () => a;\n");
      write('d.ts', "import type { E } from './e.js';\nexport type D = { e?: E };\nexport const d = 1;\n");
      write('e.ts', "import { d } from './d.js';\nexport type E = typeof d;\n");
      write('f.tsx', "import { type G } from './g.js';\nexport const f = (g: G) => g;\n");
      write('g.ts', "import { f } from './f.js';\nexport type G = number;\nexport const g = f;\n");
      assert.deepEqual(importCycles(dir), [['a.ts', 'b/index.ts', 'c.ts']]);
      write('e.ts', "import { d } from './d.js';\nexport type E = typeof d;\nexport const later = () => import('./d.js');\n");
      write('d.ts', "import { later } from './e.js';\nexport const d = later;\n");
      assert.deepEqual(importCycles(dir).sort(), [['a.ts', 'b/index.ts', 'c.ts'], ['d.ts', 'e.ts']], 'a value import closes it');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('layers: a layered folder (apps/server/src/query) never imports upwards', () => {
  it('the repository has no such import', () => {
    assert.deepEqual(checkLayers(repoRoot), []);
  });

  it('refuses an import, even of types only, from a lower layer to a higher one, and names file and line', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'layers-'));
    try {
      const write = (file: string, text: string) => {
        mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
        writeFileSync(path.join(root, file), text);
      };
      const layers = { src: [['engine/', 'parts.ts'], ['kinds/'], ['registry.ts']] };
      write('src/engine/range.ts', 'export const day = 1;\n');
      write('src/parts.ts', "import { day } from './engine/range.js';\nexport const parts = day;\n");
      write('src/kinds/a.ts', "import { parts } from '../parts.js';\nimport { b } from './b.js';\nexport const a = parts + b;\n");
      write('src/kinds/b.ts', 'export const b = 2;\n');
      write('src/registry.ts', "import { a } from './kinds/a.js';\nexport const all = [a];\n");
      write('src/loose.ts', "import { all } from './registry.js';\nexport const x = all;\n");
      assert.deepEqual(checkLayers(root, layers), [], 'down and sideways are allowed; files no entry names are not checked');
      write('src/parts.ts', "import { day } from './engine/range.js';\nimport type { all } from './registry.js';\nexport const parts = day;\nexport type P = typeof all;\n");
      write('src/engine/range.ts', "export const day = 1;\nexport type K = typeof import('../kinds/b.js');\n");
      const violations = checkLayers(root, layers).sort();
      assert.equal(violations.length, 2, violations.join('\n'));
      assert.match(violations[0]!, /^src\/engine\/range\.ts:2: '\.\.\/kinds\/b\.js' imports layer 2 \(kinds\/\) from layer 1 of src/);
      assert.match(violations[1]!, /^src\/parts\.ts:2: '\.\/registry\.js' imports layer 3 \(registry\.ts\) from layer 1 of src/);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
