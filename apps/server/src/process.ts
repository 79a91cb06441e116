/**
 * Public entry `@tally-analytics/server/process`: what a process entry of ours does around its
 * work (the service's main.ts and the operator's): stop cleanly once on SIGTERM / SIGINT, and end
 * with the error's message, not a stack, when starting fails.
 */
export function stopOnSignals(doing: string, close: () => Promise<void>): void {
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: ${doing}`);
    await close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

export function runMain(main: () => Promise<void>): void {
  main().catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
