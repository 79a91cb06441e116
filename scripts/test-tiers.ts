/**
 * `npm test`: every test tier (test/<tier>/, each with its .mocharc.cjs) in TEST_LANES lanes at once
 * (default 2; the browser tier afterwards, alone), so the suite takes about as long as its longest
 * lane plus the browser tier rather than the sum of its tiers. A tier's output is printed whole when it ends (lanes never interleave their lines);
 * the run fails when any tier fails, and ends with each tier's figures.
 *
 *   npm test                          # every tier
 *   npm test -- service browser       # some tiers
 *   TEST_LANES=1 npm test             # one tier after the other
 *
 * Each tier is split into TEST_SHARDS_<TIER> mocha processes (SHARDS below by default), files dealt
 * round robin by size, so that a long tier does not hold one lane to itself while the other idles.
 * Every mocha process starts its own services on fresh databases (test/support/backends.ts), so
 * shards share nothing but the machine.
 */
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');
const TIERS = ['unit', 'service', 'cluster', 'packaging', 'browser'] as const;
type Tier = (typeof TIERS)[number];
/** Mocha processes per tier: the service tier is as long as the others together. */
const SHARDS: Record<Tier, number> = { service: 2, browser: 1, cluster: 1, packaging: 1, unit: 1 };

const asked = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const unknown = asked.filter((a) => !(TIERS as readonly string[]).includes(a));
if (unknown.length) {
  console.error(`unknown tier ${unknown.join(', ')}: the tiers are ${TIERS.join(', ')}`);
  process.exit(2);
}
const tiers = asked.length ? TIERS.filter((t) => asked.includes(t)) : [...TIERS];
const lanes = Math.max(1, Number(process.env.TEST_LANES ?? 2) || 1);

const filesOf = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
  const p = path.join(dir, e.name);
  return e.isDirectory() ? filesOf(p) : e.name.endsWith('.test.ts') ? [p] : [];
});

interface Job { name: string; tier: Tier; files: string[]; weight: number }
const jobs: Job[] = tiers.flatMap((tier) => {
  const files = filesOf(path.join(ROOT, 'test', tier)).map((f) => ({ f, size: statSync(f).size })).sort((a, b) => b.size - a.size);
  const n = Math.max(1, Math.min(files.length, Number(process.env[`TEST_SHARDS_${tier.toUpperCase()}`] ?? SHARDS[tier]) || 1));
  const shards = Array.from({ length: n }, () => ({ files: [] as string[], weight: 0 }));
  for (const { f, size } of files) {
    const lightest = shards.reduce((a, b) => (b.weight < a.weight ? b : a));
    lightest.files.push(path.relative(ROOT, f));
    lightest.weight += size;
  }
  return shards.filter((s) => s.files.length).map((s, i) => ({ name: n > 1 ? `${tier} ${i + 1}/${n}` : tier, tier, files: s.files.sort(), weight: s.weight }));
});
// Longest first, so the lanes end together: in a clean run on 2 cores the cluster tier took 7m20s
// (kept whole: it starts engine clusters and several service processes, and two of its halves at
// once would double the heaviest load on the machine), the browser 5m03s,
// each half of the service tier 2m45s, packaging 45s, unit 5s.
const ORDER: Tier[] = ['cluster', 'browser', 'service', 'packaging', 'unit'];
jobs.sort((a, b) => ORDER.indexOf(a.tier) - ORDER.indexOf(b.tier));

interface Done { name: string; code: number; ms: number; summary: string; failures: string[] }
const results: Done[] = [];

function run(job: Job): Promise<void> {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(process.execPath, [path.join(ROOT, 'node_modules/mocha/bin/mocha.js'), '--config', path.join(ROOT, '.mocharc.json'), ...job.files], {
      cwd: ROOT, env: process.env, stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => out.push(b));
    child.on('close', (code, signal) => {
      const text = Buffer.concat(out).toString('utf8');
      const ms = Date.now() - started;
      const summary = [...text.matchAll(/^ {2}(\d+ (?:passing|failing|pending))/gm)].map((m) => m[1]).join(', ') || 'no summary';
      process.stdout.write(`\n===== ${job.name} (${job.files.length} files) =====\n${text}`);
      results.push({ name: job.name, code: code ?? (signal ? 1 : 0), ms, summary, failures: failuresOf(text) });
      resolve();
    });
  });
}

/**
 * Mocha's failure list, one line each (the test's title and the first line of its error), repeated
 * under the summary: a CI log is often read from its end, where the tiers' own reports are far above.
 */
function failuresOf(text: string): string[] {
  const at = text.search(/^ {2}\d+ failing/m);
  if (at < 0) return [];
  const lines = text.slice(at).split('\n');
  const found: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^ {2}\d+\) /.test(lines[i])) continue;
    const title: string[] = [lines[i].trim()];
    let j = i + 1;
    for (; j < lines.length && lines[j].trim() && !/(Error|error)\b.*:/.test(lines[j]); j++) title.push(lines[j].trim());
    const error = lines.slice(j).find((l) => l.trim())?.trim() ?? '';
    found.push(`${title.join(' ')} ${error}`.slice(0, 300));
  }
  return found;
}

// The browser tier runs after the others, alone: its checks of focus and pointer follow the page's
// frames, and beside a service or cluster tier on 2 cores a different one of them timed out in each
// of two clean runs (all passed alone).
const SOLO: Tier[] = ['browser'];
const started = Date.now();
for (const phase of [jobs.filter((j) => !SOLO.includes(j.tier)), jobs.filter((j) => SOLO.includes(j.tier))]) {
  const queue = [...phase];
  await Promise.all(Array.from({ length: Math.min(lanes, queue.length) }, async () => {
    for (let job = queue.shift(); job; job = queue.shift()) await run(job);
  }));
}

const minutes = (ms: number) => `${Math.floor(ms / 60_000)}m${String(Math.round((ms % 60_000) / 1000)).padStart(2, '0')}s`;
console.log(`\n===== tiers, ${lanes} lane${lanes > 1 ? 's' : ''}, ${minutes(Date.now() - started)} in all =====`);
for (const r of results) console.log(`${r.code === 0 ? 'ok  ' : 'FAIL'} ${r.name.padEnd(14)} ${minutes(r.ms).padStart(7)}  ${r.summary}`);
for (const r of results) for (const f of r.failures) console.log(`  ${r.name}: ${f}`);
process.exit(results.some((r) => r.code !== 0) ? 1 : 0);
