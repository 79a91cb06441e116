/**
 * `npm run check:edges`: the npm workspaces talk to each other through their public entries only.
 * For every TypeScript source of every workspace (root package.json `workspaces`) it reads each
 * import, export-from, dynamic import(), require() and import type with the TypeScript parser, and
 * fails when:
 *   - a relative path leaves the workspace's folder (reaching into another package's files);
 *   - a bare import names a package the workspace does not declare: `dependencies` or
 *     `peerDependencies`, or `devDependencies` for an import that is types only;
 *   - an import of a workspace uses a subpath its `exports` does not list;
 *   - the workspace's own files import each other in a circle at run time (an import that is
 *     types only is erased and cannot close one): one line per circle, naming its files.
 *   - a file of a layered folder (LAYERS: apps/server/src/query) imports, even types only, a
 *     file of a layer above its own.
 * The repo's tests, scripts and benchmarks are the root package's and may read package internals.
 * Prints one line per violation and exits 1; `--json` prints them as one JSON array.
 */
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

interface Manifest {
  name: string;
  exports?: string | Record<string, unknown>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  workspaces?: string[];
}

interface Workspace { dir: string; manifest: Manifest }

interface ImportSite { specifier: string; typeOnly: boolean; line: number }

const BUILTINS = new Set(builtinModules);
const SOURCE = /\.(ts|tsx|mts|cts)$/;
const SKIP_DIRS = new Set(['node_modules', 'dist']);

function readManifest(dir: string): Manifest {
  return JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as Manifest;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) {
      if (!SKIP_DIRS.has(e.name) && !e.name.startsWith('.')) out.push(...sourceFiles(path.join(dir, e.name)));
    } else if (SOURCE.test(e.name) && !e.name.endsWith('.d.ts')) out.push(path.join(dir, e.name));
  }
  return out;
}

/** Every module specifier a file names, and whether the whole import is erased at compile time. */
export function importsOf(fileName: string, text: string): ImportSite[] {
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, fileName.endsWith('x') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const sites: ImportSite[] = [];
  const add = (node: ts.Node, literal: ts.Expression | undefined, typeOnly: boolean) => {
    if (literal && ts.isStringLiteralLike(literal)) {
      sites.push({ specifier: literal.text, typeOnly, line: sf.getLineAndCharacterOfPosition(node.getStart()).line + 1 });
    }
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      const clause = node.importClause;
      // `import type {…}`, or `import {type A, type B}` with nothing else: erased.
      const allTypeSpecifiers = !!clause && !clause.name && !!clause.namedBindings && ts.isNamedImports(clause.namedBindings)
        && clause.namedBindings.elements.length > 0 && clause.namedBindings.elements.every((e) => e.isTypeOnly);
      add(node, node.moduleSpecifier, !!clause && (clause.isTypeOnly || allTypeSpecifiers));
    } else if (ts.isExportDeclaration(node)) {
      add(node, node.moduleSpecifier, node.isTypeOnly);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      add(node, node.moduleReference.expression, node.isTypeOnly);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      add(node, node.argument.literal as ts.Expression, true);
    } else if (ts.isCallExpression(node) && node.arguments.length >= 1) {
      const callee = node.expression;
      if (callee.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(callee) && callee.text === 'require')) add(node, node.arguments[0], false);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return sites;
}

function packageNameOf(specifier: string): { name: string; subpath: string } {
  const parts = specifier.split('/');
  const n = specifier.startsWith('@') ? 2 : 1;
  const rest = parts.slice(n).join('/');
  return { name: parts.slice(0, n).join('/'), subpath: rest ? `./${rest}` : '.' };
}

function exportedSubpaths(manifest: Manifest): Set<string> {
  if (manifest.exports === undefined || typeof manifest.exports === 'string') return new Set(['.']);
  const keys = Object.keys(manifest.exports);
  // An exports object whose keys are conditions (not subpaths) exports "." only.
  return new Set(keys.every((k) => k.startsWith('.')) ? keys : ['.']);
}

/** The violations in the repository at `root` (empty when every edge goes through an entry). */
export function checkPackageEdges(root: string): string[] {
  const rootManifest = readManifest(root);
  const workspaces: Workspace[] = (rootManifest.workspaces ?? []).map((w) => {
    const dir = path.resolve(root, w);
    if (!existsSync(path.join(dir, 'package.json'))) throw new Error(`workspace ${w} has no package.json`);
    return { dir, manifest: readManifest(dir) };
  });
  const byName = new Map(workspaces.map((w) => [w.manifest.name, w]));
  const violations: string[] = [];
  for (const ws of workspaces) {
    const m = ws.manifest;
    const runtimeDeps = { ...m.dependencies, ...m.peerDependencies };
    for (const file of sourceFiles(ws.dir)) {
      const where = (line: number) => `${path.relative(root, file)}:${line}`;
      for (const site of importsOf(file, readFileSync(file, 'utf8'))) {
        const spec = site.specifier;
        if (spec.startsWith('.') || spec.startsWith('/')) {
          const target = path.resolve(path.dirname(file), spec);
          if (target !== ws.dir && !target.startsWith(ws.dir + path.sep)) {
            violations.push(`${where(site.line)}: '${spec}' reaches outside ${m.name} (import another package by its name and public entry)`);
          }
          continue;
        }
        if (spec.startsWith('node:') || BUILTINS.has(spec)) continue;
        const { name, subpath } = packageNameOf(spec);
        const declared = runtimeDeps[name] !== undefined || (site.typeOnly && m.devDependencies?.[name] !== undefined);
        if (!declared) {
          const how = site.typeOnly ? 'dependencies, peerDependencies or devDependencies' : 'dependencies or peerDependencies';
          violations.push(`${where(site.line)}: '${spec}' is not declared in ${m.name}'s ${how}`);
        }
        const target = byName.get(name);
        if (target && !exportedSubpaths(target.manifest).has(subpath)) {
          violations.push(`${where(site.line)}: '${spec}' is not a public entry of ${name} (exports: ${[...exportedSubpaths(target.manifest)].join(', ')})`);
        }
      }
    }
  }
  return violations;
}

/** The source file a relative specifier names (`./x.js` is `./x.ts` or `./x.tsx`; a folder its index). */
function resolveSource(from: string, spec: string, known: Set<string>): string | undefined {
  const base = path.resolve(path.dirname(from), spec);
  const stem = base.replace(/\.(js|jsx|mjs|cjs)$/, '');
  for (const c of [base, `${stem}.ts`, `${stem}.tsx`, `${stem}.mts`, path.join(base, 'index.ts'), path.join(base, 'index.tsx')]) if (known.has(c)) return c;
  return undefined;
}

/**
 * The circles of run-time imports among the sources of `dir`: each strongly connected group of
 * two or more files (or a file importing itself), files sorted, relative to `dir`.
 */
export function importCycles(dir: string): string[][] {
  const files = sourceFiles(dir);
  const known = new Set(files);
  const edges = new Map<string, string[]>();
  for (const file of files) {
    const to = new Set<string>();
    for (const site of importsOf(file, readFileSync(file, 'utf8'))) {
      if (site.typeOnly || !site.specifier.startsWith('.')) continue;
      const target = resolveSource(file, site.specifier, known);
      if (target) to.add(target);
    }
    edges.set(file, [...to]);
  }
  // Tarjan's strongly connected components, iterative (deep import chains).
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  let next = 0;
  for (const start of files) {
    if (index.has(start)) continue;
    const work: Array<{ v: string; i: number }> = [{ v: start, i: 0 }];
    index.set(start, next); low.set(start, next); next++; stack.push(start); onStack.add(start);
    while (work.length) {
      const top = work[work.length - 1];
      const out = edges.get(top.v)!;
      if (top.i < out.length) {
        const w = out[top.i++];
        if (!index.has(w)) {
          index.set(w, next); low.set(w, next); next++; stack.push(w); onStack.add(w);
          work.push({ v: w, i: 0 });
        } else if (onStack.has(w)) low.set(top.v, Math.min(low.get(top.v)!, index.get(w)!));
        continue;
      }
      work.pop();
      if (work.length) low.set(work[work.length - 1].v, Math.min(low.get(work[work.length - 1].v)!, low.get(top.v)!));
      if (low.get(top.v) !== index.get(top.v)) continue;
      const group: string[] = [];
      let w: string;
      do { w = stack.pop()!; onStack.delete(w); group.push(w); } while (w !== top.v);
      if (group.length > 1 || edges.get(top.v)!.includes(top.v)) cycles.push(group.map((f) => path.relative(dir, f)).sort());
    }
  }
  return cycles;
}

/**
 * Folders whose files form layers, lowest first: a file may import (values or types) files of its
 * own layer and of the layers below, never of one above. An entry ending in `/` is a folder, else a
 * file (`*` standing for one folder name); the longest entry naming a file places it; files no
 * entry names are not checked.
 * apps/server/src/query: the shared pieces (engine, dialects, the v0 schemas, each kind's among them,
 * the IR's parts), then
 * the analysis kinds, then the registry that lists them, then what reads the registry (the IR
 * document, upgrade, run, drilldown and routes, the executor, the v0 routes). CONTRIBUTING.md,
 * "Where things live".
 */
export const LAYERS: Record<string, ReadonlyArray<readonly string[]>> = {
  'apps/server/src/query': [
    ['engine/', 'dialects/', 'schema.ts', 'body-parts.ts', 'kinds/*/schema.ts', 'date-range-spec.ts', 'breakdowns.ts', 'analyses.ts', 'ir/schema.ts', 'ir/versions.ts', 'ir/results.ts', 'ir/range.ts'],
    ['kinds/'],
    ['registry.ts'],
    ['ir/', 'executor.ts', 'routes.ts'],
  ],
};

/** Whether a relative path matches an entry with `*` (one path segment, as in kinds/<kind>/schema.ts). */
const globMatch = (pattern: string, rel: string) =>
  new RegExp('^' + pattern.split('*').map((part) => part.replace(/[.+?^$(){}|[\]\\]/g, '\\$&')).join('[^/]+') + '$').test(rel);

/** The layer of `rel` (a path inside the layered folder), or undefined when no entry names it. */
function layerOf(layers: ReadonlyArray<readonly string[]>, rel: string): number | undefined {
  let best: { layer: number; length: number } | undefined;
  layers.forEach((entries, layer) => {
    for (const e of entries) {
      const hit = e.endsWith('/') ? rel.startsWith(e) : e.includes('*') ? globMatch(e, rel) : rel === e;
      if (hit && (!best || e.length > best.length)) best = { layer, length: e.length };
    }
  });
  return best?.layer;
}

/** One violation per import from a layer to a layer above it, in the folders of `layers` under `root`. */
export function checkLayers(root: string, layers: Record<string, ReadonlyArray<readonly string[]>> = LAYERS): string[] {
  const violations: string[] = [];
  for (const [folder, order] of Object.entries(layers)) {
    const dir = path.join(root, folder);
    if (!existsSync(dir)) continue;
    const files = sourceFiles(dir);
    const known = new Set(files);
    for (const file of files) {
      const from = layerOf(order, path.relative(dir, file));
      if (from === undefined) continue;
      for (const site of importsOf(file, readFileSync(file, 'utf8'))) {
        if (!site.specifier.startsWith('.')) continue;
        const target = resolveSource(file, site.specifier, known);
        const to = target === undefined ? undefined : layerOf(order, path.relative(dir, target));
        if (to === undefined || to <= from) continue;
        violations.push(`${path.relative(root, file)}:${site.line}: '${site.specifier}' imports layer ${to + 1} (${order[to].join(' ')}) from layer ${from + 1} of ${folder}: move what both need down, or the importer up`);
      }
    }
  }
  return violations;
}

/** One violation per run-time import circle inside a workspace of the repository at `root`. */
export function checkImportCycles(root: string): string[] {
  const dirs = [root, ...(readManifest(root).workspaces ?? []).map((w) => path.resolve(root, w))];
  const violations: string[] = [];
  for (const dir of dirs) {
    const src = path.join(dir, dir === root ? 'bin' : 'src');
    if (!existsSync(src)) continue;
    for (const group of importCycles(src)) {
      violations.push(`${path.relative(root, src)}: import cycle among ${group.join(', ')} (break it, or make the imports that close it \`import type\`)`);
    }
  }
  return violations;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const violations = [...checkPackageEdges(root), ...checkImportCycles(root), ...checkLayers(root)];
  if (process.argv.includes('--json')) console.log(JSON.stringify(violations));
  else if (violations.length === 0) console.log('package edges: every import between workspaces goes through a public entry, no workspace imports itself in a circle, and no layered folder imports upwards');
  else for (const v of violations) console.error(v);
  process.exit(violations.length === 0 ? 0 : 1);
}
