import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../support/chart.js';
import { checkPackageEdges } from '../../scripts/check-package-edges.js';

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
    assert.match(pkg.scripts.build, /scripts\/build-layout\.ts/);
    assert.match(dockerfile, /ENTRYPOINT \["node", [^\]]*"bin\/tally\.js"\]/);
    assert.match(dockerfile, /COPY --from=build [^\n]*\/src\/dist\/bin \.\/bin/);
    // tsx only runs the build's layout step, in the build stage; the runtime stage never names it.
    const stages = dockerfile.split(/^FROM /m);
    assert.doesNotMatch(stages[stages.length - 1]!, /tsx/);
  });

  it('the image carries the built web console where the compiled server looks for it', () => {
    // static.ts resolves ../../../console/dist/ from apps/server/src/console/: /app/apps/console/dist in the image.
    assert.match(dockerfile, /RUN npm run build && npm run build:console/);
    assert.match(dockerfile, /COPY --from=build [^\n]*\/src\/apps\/console\/dist \.\/apps\/console\/dist/);
    assert.match(readFileSync(join(repoRoot, 'apps/server/src/console/static.ts'), 'utf8'), /'\.\.\/\.\.\/\.\.\/console\/dist\/'/);
  });

  it('the image installs the workspaces it runs, each declaring what its sources import', () => {
    // bin/tally.js starts one of these two; npm ci --omit=dev links them and installs their dependencies.
    assert.deepEqual(Object.keys(pkg.dependencies).sort(), ['@tally-analytics/operator', '@tally-analytics/server']);
    for (const dir of ['apps/server', 'apps/flag-evaluation', 'apps/sdk', 'apps/console', 'operator']) {
      assert.match(dockerfile, new RegExp(`COPY ${dir}/package\\.json ${dir}/`), `${dir}/package.json is copied before npm ci`);
    }
    // What each workspace imports at run time is in its dependencies: scripts/check-package-edges.ts.
    assert.deepEqual(checkPackageEdges(repoRoot), []);
  });

  it("the image's entry (bin/tally.ts) refuses an unknown role, naming the four it takes", () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'bin/tally.ts', 'bogus'], { cwd: repoRoot, encoding: 'utf8' });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /unknown role bogus: use all, api, worker or operator/);
  });

  it('`npm start -- operator` runs the operator role, as the README says (npm start is the image entry)', () => {
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    assert.equal(pkg.scripts.start, 'tsx bin/tally.ts');
    // Without OPERATOR_API_URL the operator's own entry refuses to start, naming the variable: the role reached it.
    const env = { ...process.env, OPERATOR_API_URL: '' };
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'bin/tally.ts', 'operator'], { cwd: repoRoot, encoding: 'utf8', env });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /OPERATOR_API_URL is required for the operator role/);
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
