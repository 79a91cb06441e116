import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../apps/server/src/config.js';
import { openEventStore, type EventStore } from '../../apps/server/src/ports/events/index.js';
import type { Backend } from './backends.js';

export interface EventStoreFixture {
  /** A migrated store on the suite's fresh backend, opened before its tests (with `open: true`). */
  readonly store: EventStore;
  /** Another store on the same databases and files, e.g. with materialised columns; not migrated, the caller closes it. */
  open(materialized?: string[]): EventStore;
}

/**
 * For suites that talk to the event store port directly, without the service: registers mocha
 * hooks that provision a fresh backend and a temporary data directory (DuckDB's file lives in
 * it) before the suite, and close the store, drop the databases and remove the directory after.
 */
export function useEventStore(backend: Backend, opts: { open?: boolean } = {}): EventStoreFixture {
  let opened: EventStore | undefined;
  let openStore: ((materialized?: string[]) => EventStore) | undefined;
  let drop: (() => Promise<void>) | undefined;
  let dir: string | undefined;

  before(async () => {
    const stores = await backend.provision();
    drop = stores.drop;
    const dataDir = (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'event-store-')));
    const config = loadConfig({ ...stores.env, DATA_DIR: dataDir });
    openStore = (materialized) => openEventStore({ clickhouse: config.clickhouse, dataDir, duckdbFile: path.join(dataDir, 'events.duckdb'), materialized });
    if (opts.open !== false) {
      opened = openStore();
      await opened.migrate();
    }
  });
  after(async () => {
    await opened?.close();
    await drop?.();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  return {
    get store() {
      if (!opened) throw new Error('useEventStore: no store opened (open: false, or before the suite ran)');
      return opened;
    },
    open(materialized) {
      if (!openStore) throw new Error('useEventStore: the backend is not provisioned yet');
      return openStore(materialized);
    },
  };
}
