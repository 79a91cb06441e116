import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './support/chart.js';

/**
 * The image's inputs: a lock file `npm ci` accepts on every platform, declared install scripts,
 * and a Dockerfile that runs compiled JavaScript with production dependencies as a non-root user.
 * (Building the image needs a registry for the base image; docs/deploy.md says how it was checked.)
 */

const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8'));
const lock = JSON.parse(readFileSync(join(repoRoot, 'package-lock.json'), 'utf8'));
const packages = lock.packages as Record<string, { version?: string; optionalDependencies?: Record<string, string>; hasInstallScript?: boolean; dev?: boolean }>;
const dockerfile = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8');

describe('image inputs (Dockerfile, package-lock.json)', () => {
  it("the lock file lists every platform's optional packages (npm ci refuses a lock that misses one)", () => {
    const missing: string[] = [];
    for (const [path, entry] of Object.entries(packages)) {
      for (const name of Object.keys(entry.optionalDependencies ?? {})) {
        // Node resolves from the nearest node_modules up the tree.
        const candidates: string[] = [];
        for (let dir = path; ; dir = dir.includes('/node_modules/') ? dir.slice(0, dir.lastIndexOf('/node_modules/')) : '') {
          candidates.push(`${dir ? dir + '/' : ''}node_modules/${name}`);
          if (!dir) break;
        }
        if (!candidates.some((c) => packages[c])) missing.push(`${path || '(root)'} -> ${name}`);
      }
    }
    assert.deepEqual(missing, []);
    const duckdb = Object.keys(packages).filter((p) => p.startsWith('node_modules/@duckdb/node-bindings-'));
    assert.ok(duckdb.length >= 6, `DuckDB bindings in the lock: ${duckdb.join(', ')}`);
  });

  it('every dependency with an install script is declared in allowScripts', () => {
    const withScripts = [...new Set(Object.entries(packages).filter(([, e]) => e.hasInstallScript).map(([p]) => p.slice(p.lastIndexOf('node_modules/') + 'node_modules/'.length)))];
    assert.ok(withScripts.length > 0);
    for (const name of withScripts) assert.equal(typeof pkg.allowScripts?.[name], 'boolean', `${name} has an install script but no allowScripts entry`);
  });

  it('tsx is a development dependency only; the image runs node on the compiled output', () => {
    assert.equal(pkg.dependencies.tsx, undefined);
    assert.ok(pkg.devDependencies.tsx);
    assert.match(pkg.scripts.build, /tsconfig\.build\.json/);
    assert.match(dockerfile, /ENTRYPOINT \["node", [^\]]*"apps\/server\/src\/main\.js"\]/);
    assert.doesNotMatch(dockerfile, /tsx/);
  });

  it('the image carries the built web console where the compiled server looks for it', () => {
    // static.ts resolves ../../../console/dist/ from apps/server/src/console/: /app/apps/console/dist in the image.
    assert.match(dockerfile, /RUN npm run build && npm run build:console/);
    assert.match(dockerfile, /COPY --from=build [^\n]*\/src\/apps\/console\/dist \.\/apps\/console\/dist/);
    assert.match(readFileSync(join(repoRoot, 'apps/server/src/console/static.ts'), 'utf8'), /'\.\.\/\.\.\/\.\.\/console\/dist\/'/);
  });

  it('everything the compiled service and operator import at run time is a production dependency', () => {
    const bare = new Set<string>();
    const walk = (dir: string): void => {
      for (const e of readdirSync(join(repoRoot, dir), { withFileTypes: true })) {
        const rel = `${dir}/${e.name}`;
        if (e.isDirectory()) walk(rel);
        else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') && !e.name.endsWith('.d.ts')) {
          const text = readFileSync(join(repoRoot, rel), 'utf8');
          for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+'([^'.][^']*)'|\bimport\('([^'.][^']*)'\)|require\('([^'.][^']*)'\)/g)) {
            const spec = (m[1] ?? m[2] ?? m[3])!;
            if (spec.startsWith('node:')) continue;
            bare.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
          }
        }
      }
    };
    // What tsconfig.build.json compiles into the image (the SDK is a package of its own).
    const build = JSON.parse(readFileSync(join(repoRoot, 'tsconfig.build.json'), 'utf8')) as { include: string[] };
    for (const pattern of build.include) walk(pattern.replace(/\/\*\*\/\*\.ts$/, ''));
    assert.ok(bare.has('koa') && bare.has('@kubernetes/client-node'), [...bare].join(' '));
    for (const name of bare) assert.ok(pkg.dependencies[name], `${name} is imported at run time but is not in dependencies`);
  });

  it('the runtime stage: npm ci --omit=dev, NODE_ENV=production, a non-root user', () => {
    const stages = dockerfile.split(/^FROM /m).slice(1);
    const runtime = stages[stages.length - 1]!;
    assert.match(dockerfile, /npm ci --omit=dev/);
    assert.doesNotMatch(dockerfile, /npm install/);
    assert.match(runtime, /NODE_ENV=production/);
    assert.match(runtime, /^USER (node|\d+)/m);
    assert.doesNotMatch(runtime, /^USER root/m);
  });
});
