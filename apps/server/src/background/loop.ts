/**
 * A background loop of the `worker` role (e.g. the ingestion consumer). Its own module so that
 * worker-role.ts (which starts them all) imports the domains and no domain imports worker-role.ts.
 */
export interface BackgroundLoop {
  name: string;
  stop(): Promise<void>;
}

/**
 * A loop that polls: `run` after `firstDelayMs`, then again `intervalMs` after each run ends,
 * until stopped; `stop()` waits for a run in progress. `run` may ask whether a stop was asked
 * (to end a loop of its own early); a run's error goes to `onError` and the polling goes on.
 */
export function pollingLoop(
  name: string,
  timing: { firstDelayMs: number; intervalMs: number },
  run: (stopping: () => boolean) => Promise<void>,
  onError: (err: unknown) => void,
): BackgroundLoop {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> = Promise.resolve();
  const tick = async () => {
    try {
      await run(() => stopped);
    } catch (err) {
      onError(err);
    }
    if (!stopped) timer = setTimeout(() => { current = tick(); }, timing.intervalMs);
  };
  timer = setTimeout(() => { current = tick(); }, timing.firstDelayMs);
  return {
    name,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await current;
    },
  };
}
