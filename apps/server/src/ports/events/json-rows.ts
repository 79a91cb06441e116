/**
 * JSONEachRow bodies for ClickHouse inserts, written into reused buffers. The client's own
 * encoding (one JSON string per row, joined into one string, which the socket then encodes to
 * UTF-8) builds two fresh copies of every insert's body: for an ingestion unit of 10,000 events
 * that is about 10 MB allocated twice, and fresh memory costs more than the encoding itself
 * (docs/pipeline.md). Here each row's JSON is written straight into a buffer that the next insert
 * reuses.
 */

/** Larger buffers are not kept for reuse (one outsized insert must not pin its memory). */
const MAX_KEPT_BYTES = 64 * 1024 * 1024;
/** Buffers kept: the worker issues a unit's event, profile and link inserts at once. */
const MAX_KEPT_BUFFERS = 4;

export class JsonRowsEncoder {
  private free: Buffer[] = [];

  /**
   * The rows as newline-terminated JSON, with `done` to hand the buffer back once the request no
   * longer reads it. A body whose request failed is not handed back: the socket may still hold it.
   */
  encode(rows: readonly object[]): { body: Buffer; done: () => void } {
    let buf = this.free.pop() ?? Buffer.allocUnsafe(1024 * 1024);
    let off = 0;
    for (const row of rows) {
      const s = JSON.stringify(row);
      // UTF-8 takes at most 3 bytes per UTF-16 unit; the newline one more.
      const need = off + s.length * 3 + 1;
      if (need > buf.length) {
        const bigger = Buffer.allocUnsafe(Math.max(need, buf.length * 2));
        buf.copy(bigger, 0, 0, off);
        buf = bigger;
      }
      off += buf.write(s, off);
      buf[off++] = 10;
    }
    const whole = buf;
    return {
      body: whole.subarray(0, off),
      done: () => {
        if (whole.length <= MAX_KEPT_BYTES && this.free.length < MAX_KEPT_BUFFERS) this.free.push(whole);
      },
    };
  }
}
