import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import client from 'prom-client';
import type { Logger } from '../http/errors.js';
import type { CredentialSource, TokenProject } from '../auth/credentials.js';
import { registry } from '../metrics/registry.js';
import { TENANT_CONFIG_FILE, TenantConfig } from './config.js';

/** Process-wide (one registry per process; with several services in one process the last applied wins). */
const metrics = {
  generation: new client.Gauge({ name: 'tally_tenant_config_generation', help: 'Generation of the applied tenant config (TENANT_CONFIG_PATH)', registers: [registry] }),
  projects: new client.Gauge({ name: 'tally_tenant_config_projects', help: 'Projects listed in the applied tenant config', registers: [registry] }),
  errors: new client.Counter({ name: 'tally_tenant_config_errors_total', help: 'Tenant config files refused (unreadable, invalid JSON or schema); the last good config stays', registers: [registry] }),
};

/** Default fallback poll period: with fs.watch missing an event, a change still lands well within 10 s. */
export const TENANT_CONFIG_POLL_MS = 2000;

/**
 * Keeps the tenant config of a directory that kubelet projects a Secret into: `tenants.json` is
 * a symlink into `..data/`, itself a symlink swapped atomically to a new timestamped directory on
 * every change. fs.watch on the directory reports the `..data` rename at once; a poll re-reads the
 * file every `pollMs` in case an event is missed (or the directory appears later). A file whose
 * content has not changed is not parsed again. A missing directory or file is an empty config; a
 * bad file is counted and logged, and the last good config stays.
 */
export class TenantConfigWatcher implements CredentialSource {
  private current = TenantConfig.empty();
  private lastText: string | undefined | null = null;
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private pending: NodeJS.Timeout | undefined;
  private reading: Promise<void> = Promise.resolve();
  private stopped = false;
  /** The last refusal, for logs and tests. */
  lastError: string | undefined;

  constructor(readonly dir: string, private log: Logger, private pollMs: number = TENANT_CONFIG_POLL_MS) {}

  /** Reads the directory once (so a pod starts with its config) and starts watching and polling. */
  async start(): Promise<this> {
    await this.reload();
    this.watchDir();
    this.timer = setInterval(() => {
      if (!this.watcher) this.watchDir();
      void this.reload();
    }, this.pollMs);
    this.timer.unref();
    return this;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.pending) clearTimeout(this.pending);
    this.watcher?.close();
    this.watcher = undefined;
  }

  get config(): TenantConfig {
    return this.current;
  }

  projectByToken(token: string): TokenProject | undefined {
    return this.current.projectByToken(token);
  }

  projectByFlagSecretSha256(sha256Hex: string): TokenProject | undefined {
    return this.current.projectByFlagSecretSha256(sha256Hex);
  }

  /** A listed organisation's quota from memory (undefined: not listed). */
  quotaOf(orgId: number): number | null | undefined {
    return this.current.quotaOf(orgId);
  }

  /** Re-reads the file now (serialised: overlapping triggers run one after the other). */
  reload(): Promise<void> {
    this.reading = this.reading.then(() => this.readOnce());
    return this.reading;
  }

  private watchDir(): void {
    if (this.stopped) return;
    try {
      this.watcher = watch(this.dir, { persistent: false }, () => this.soon());
      this.watcher.on('error', () => {
        this.watcher?.close();
        this.watcher = undefined; // the poll re-establishes it
      });
    } catch {
      this.watcher = undefined; // directory absent: the poll covers it
    }
  }

  /** Several events arrive per swap (..data_tmp, ..data, the old directory): read once after them. */
  private soon(): void {
    if (this.pending || this.stopped) return;
    this.pending = setTimeout(() => {
      this.pending = undefined;
      void this.reload();
    }, 50);
    this.pending.unref();
  }

  private async readOnce(): Promise<void> {
    if (this.stopped) return;
    let text: string | undefined;
    try {
      text = await readFile(join(this.dir, TENANT_CONFIG_FILE), 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') return this.refuse(`${TENANT_CONFIG_FILE}: unreadable (${code ?? String(err)})`, undefined);
      text = undefined;
    }
    if (text === this.lastText) return;
    if (text === undefined) {
      this.apply(TenantConfig.empty(), text);
      return;
    }
    try {
      this.apply(TenantConfig.parse(text), text);
    } catch (err) {
      this.refuse(err instanceof Error ? err.message : String(err), text);
    }
  }

  private apply(config: TenantConfig, text: string | undefined): void {
    const previous = this.current.generation;
    this.current = config;
    this.lastText = text;
    this.lastError = undefined;
    metrics.generation.set(config.generation);
    metrics.projects.set(config.projects);
    if (text !== undefined || previous !== 0) {
      this.log.info('tenant config applied', { dir: this.dir, generation: config.generation, projects: config.projects });
    }
  }

  /** A bad file: counted once per distinct content (the poll would otherwise count it every period). */
  private refuse(message: string, text: string | undefined): void {
    if (text !== undefined) this.lastText = text;
    this.lastError = message;
    metrics.errors.inc();
    this.log.error('tenant config refused; keeping the last good one', { dir: this.dir, generation: this.current.generation, error: message });
  }
}
