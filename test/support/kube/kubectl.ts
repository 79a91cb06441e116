import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FakeKube } from './server.js';
import { kubeTools } from './tools.js';

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real kubectl against a fake API server, as `user`, with a private discovery cache
 * (so one test's server never answers from another's cache).
 */
export async function kubectlFor(fake: FakeKube, user?: string) {
  const { kubectl } = await kubeTools();
  const kubeconfig = await fake.kubeconfigFile(user);
  const cacheDir = await mkdtemp(join(tmpdir(), 'kubectl-cache-'));
  const args = (rest: string[]) => ['--kubeconfig', kubeconfig, '--cache-dir', cacheDir, ...rest];
  const run = (rest: string[], stdin?: string): Promise<KubectlResult> =>
    new Promise((resolve, reject) => {
      const child = spawn(kubectl, args(rest), { env: { PATH: process.env.PATH ?? '', HOME: cacheDir } });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
      child.stdin.end(stdin ?? '');
    });
  /** A long-running kubectl (`get -w`): its output lines as they come. */
  const start = (rest: string[]): { child: ChildProcessWithoutNullStreams; lines: string[]; waitFor(re: RegExp, ms?: number): Promise<string> } => {
    const child = spawn(kubectl, args(rest), { env: { PATH: process.env.PATH ?? '', HOME: cacheDir } });
    const lines: string[] = [];
    let buffer = '';
    const waiters = new Set<() => void>();
    child.stdout.on('data', (d) => {
      buffer += d;
      const parts = buffer.split('\n');
      buffer = parts.pop()!;
      lines.push(...parts);
      for (const w of waiters) w();
    });
    const waitFor = (re: RegExp, ms = 10_000) =>
      new Promise<string>((resolve, reject) => {
        const check = () => {
          const hit = lines.find((l) => re.test(l));
          if (hit) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(hit);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`kubectl ${rest.join(' ')}: no line matching ${re} in:\n${lines.join('\n')}`));
        }, ms);
        waiters.add(check);
        check();
      });
    return { child, lines, waitFor };
  };
  return { run, start, kubeconfig };
}
