import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readlink, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FakeKube } from './server.js';
import type { KubeObject } from './types.js';

/**
 * Projects a Secret of the fake API into a directory exactly as kubelet's AtomicWriter does for a
 * Secret volume, and keeps it in step with the Secret's changes:
 *
 *   dir/..2026_11_23_19_53_16.4183077921/<key>   the payload, one timestamped directory per version
 *   dir/..data -> ..2026_11_23_19_53_16.4183077921   swapped atomically (symlink ..data_tmp, rename)
 *   dir/<key> -> ..data/<key>                    what the pod reads
 *
 * A deleted Secret leaves the last files in place (kubelet keeps a mounted volume's content).
 */

export interface SecretProjection {
  dir: string;
  /** Versions written so far (the first projection counts). */
  readonly writes: number;
  /** Resolves once the directory holds the Secret's content at this resourceVersion or later. */
  settled(): Promise<void>;
  stop(): void;
}

function timestampedName(): string {
  const d = new Date();
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  const stamp = `${d.getUTCFullYear()}_${p(d.getUTCMonth() + 1)}_${p(d.getUTCDate())}_${p(d.getUTCHours())}_${p(d.getUTCMinutes())}_${p(d.getUTCSeconds())}`;
  return `..${stamp}.${randomBytes(5).readUInt32BE(0)}`;
}

/** One AtomicWriter pass: payload keyed by file name. */
export async function writeAtomically(dir: string, payload: Record<string, Buffer>): Promise<void> {
  await mkdir(dir, { recursive: true });
  const previous = await readlink(join(dir, '..data')).catch(() => undefined);
  const version = timestampedName();
  await mkdir(join(dir, version), { mode: 0o755 });
  for (const [key, content] of Object.entries(payload)) await writeFile(join(dir, version, key), content, { mode: 0o644 });
  await rm(join(dir, '..data_tmp'), { force: true });
  await symlink(version, join(dir, '..data_tmp'));
  await rename(join(dir, '..data_tmp'), join(dir, '..data'));
  const keys = new Set(Object.keys(payload));
  for (const key of keys) {
    await symlink(join('..data', key), join(dir, key)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
  }
  for (const entry of await readdir(dir)) {
    if (entry.startsWith('..')) continue;
    if (!keys.has(entry)) await rm(join(dir, entry), { force: true });
  }
  if (previous && previous !== version) await rm(join(dir, previous), { recursive: true, force: true });
}

export async function projectSecret(fake: FakeKube, namespace: string, name: string, dir: string, opts: { delayMs?: number } = {}): Promise<SecretProjection> {
  const key = (o: KubeObject) => o.metadata.namespace === namespace && o.metadata.name === name;
  let writes = 0;
  let chain: Promise<void> = Promise.resolve();
  let lastSeen = '';
  const apply = (secret: KubeObject) => {
    const data = (secret.data ?? {}) as Record<string, string>;
    const payload = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64')]));
    lastSeen = secret.metadata.resourceVersion ?? '';
    chain = chain
      .then(() => (opts.delayMs ? new Promise((ok) => setTimeout(ok, opts.delayMs)) : undefined))
      .then(() => writeAtomically(dir, payload))
      .then(() => void writes++);
  };
  await mkdir(dir, { recursive: true });
  const existing = fake.api.store.list('/secrets', namespace).find(key);
  if (existing) apply(existing);
  const off = fake.api.store.onChange((change) => {
    if (change.typeKey !== '/secrets' || !key(change.object) || change.type === 'DELETED') return;
    if (change.object.metadata.resourceVersion !== lastSeen) apply(change.object);
  });
  await chain;
  return {
    dir,
    get writes() {
      return writes;
    },
    settled: () => chain,
    stop: off,
  };
}
