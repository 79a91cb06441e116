/**
 * The second half of `npm run build`: turns tsc's output (dist/, the repo's folders mirrored) into
 * a tree Node runs as it is, the image's layout. Each compiled workspace gets its package.json next
 * to its JavaScript, so package names and `exports` resolve there as in the sources; and
 * dist/node_modules links those names for a run from the repo (`npm run start:dist`; the image has
 * npm's own links). flag-evaluation is published with `exports` into its own build (./dist); the
 * service's build compiles its sources instead, so its copy points `exports` at ./src.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const COMPILED = ['apps/server', 'apps/flag-evaluation', 'operator'];

const retarget = (value: unknown): unknown =>
  typeof value === 'string' ? value.replace(/^\.\/dist\//, './src/')
    : value && typeof value === 'object' ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, retarget(v)])) : value;

for (const dir of COMPILED) {
  if (!existsSync(path.join(dist, dir))) throw new Error(`dist/${dir} is missing: run tsc -p tsconfig.build.json first`);
  const manifest = JSON.parse(readFileSync(path.join(root, dir, 'package.json'), 'utf8')) as Record<string, unknown>;
  if (dir === 'apps/flag-evaluation') {
    manifest.exports = retarget(manifest.exports);
    manifest.main = retarget(manifest.main);
    delete manifest.types;
  }
  writeFileSync(path.join(dist, dir, 'package.json'), JSON.stringify(manifest, null, 2) + '\n');
  const link = path.join(dist, 'node_modules', manifest.name as string);
  mkdirSync(path.dirname(link), { recursive: true });
  rmSync(link, { force: true, recursive: true });
  symlinkSync(path.relative(path.dirname(link), path.join(dist, dir)), link);
}
cpSync(path.join(root, 'package.json'), path.join(dist, 'package.json'));
console.log(`dist/: ${COMPILED.join(', ')} with their package.json; run with node dist/bin/tally.js <role>`);
