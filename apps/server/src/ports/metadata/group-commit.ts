/**
 * Group commit for metadata round trips: while a call of the returned function runs, later calls
 * wait; when it ends, the waiting ones go to `runGroup` together (in arrival order), which
 * answers each of them. An idle caller runs `runOne` at once, so nothing waits without a reason;
 * with `gather` (a store whose calls finish before the event loop reads the next request, e.g.
 * SQLite) it waits one setImmediate instead, so the requests read meanwhile join it in `runGroup`.
 * Calls are therefore one at a time per process (the quota and the rate limits serialised on
 * their rows in the database anyway). A `runGroup` that throws rejects its whole group.
 */
export function groupCommit<T, R>(
  runOne: (item: T) => Promise<R>,
  runGroup: (items: T[]) => Promise<Array<PromiseSettledResult<R>>>,
  opts: { gather?: () => boolean } = {},
): (item: T) => Promise<R> {
  let busy = false;
  const waiting: Array<{ item: T; resolve: (r: R) => void; reject: (err: unknown) => void }> = [];
  const drain = async () => {
    try {
      while (waiting.length > 0) {
        const group = waiting.splice(0);
        try {
          const out = await runGroup(group.map((w) => w.item));
          group.forEach((w, i) => {
            const o = out[i];
            if (o.status === 'fulfilled') w.resolve(o.value);
            else w.reject(o.reason);
          });
        } catch (err) {
          for (const w of group) w.reject(err);
        }
      }
    } finally {
      busy = false;
    }
  };
  return async (item) => {
    if (busy) return new Promise<R>((resolve, reject) => waiting.push({ item, resolve, reject }));
    busy = true;
    if (opts.gather?.()) {
      setImmediate(() => void drain());
      return new Promise<R>((resolve, reject) => waiting.push({ item, resolve, reject }));
    }
    try {
      return await runOne(item);
    } finally {
      void drain();
    }
  };
}
