/**
 * The open-loop load generator of `npm run bench:flags`, in a process of its own (plain node, no
 * TypeScript loader) so that the benchmark's own heap (peers' clients, local evaluation, results)
 * and its garbage collections do not delay the reading of answers: inside the benchmark process
 * the bare node:http floor measured p99 13–29 ms at 1,000 req/s, from this process 1.4–1.6 ms.
 *
 *   node scripts/bench-open-loop.mjs '<json>'
 *
 * <json>: { url, method, headers, path, body?, rate, seconds, idStart, ids } where `path` and
 * `body` hold `%ID%` for the request's user id (`user-<n>`, n = idStart, idStart + 1, … modulo ids).
 * Prints one JSON line: rps, requests, p50, p99 (from the scheduled time), p99FromSend (from the
 * write), lag50/lag99 (how late this process sent), errors, unanswered, sustained, sent, busy.
 *
 * Every 2 ms the requests that are due go out, each on an idle keep-alive socket (a new one when
 * all are busy, up to 256, then queued here); latency runs from the scheduled send time to the
 * last byte, so a server that falls behind shows its backlog (given `seconds` more to drain it;
 * then the rest counts as unanswered, with its age at the cutoff). Raw HTTP/1.1 over net sockets,
 * numbers in preallocated arrays: little CPU and little garbage per request.
 */
import net from 'node:net';

const cfg = JSON.parse(process.argv[2]);
const MAX_SOCKETS = 256;
const url = new URL(cfg.url);
const total = Math.round(cfg.rate * cfg.seconds);
const head = Object.entries(cfg.headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
let idNext = cfg.idStart;
const request = () => {
  const id = `user-${idNext++ % cfg.ids}`;
  const body = cfg.body ? cfg.body.replace('%ID%', id) : '';
  return `${cfg.method} ${cfg.path.replace('%ID%', id)} HTTP/1.1\r\nhost: ${url.host}\r\n${head}${body ? `content-length: ${Buffer.byteLength(body)}\r\n` : ''}\r\n${body}`;
};

const latencies = new Float64Array(total);
const fromSend = new Float64Array(total);
const sendLag = new Float64Array(total);
let answered = 0;
let lagged = 0;
let errors = 0;
let pending = 0;
let finished = false;
let lastAnswer = 0;
const idle = [];
const all = [];
const queue = [];
/** Per socket: the request in flight and what is known of its answer so far. */
const inflight = new Map();
const CRLF2 = Buffer.from('\r\n\r\n');
const LAST_CHUNK = Buffer.from('0\r\n\r\n');

const write = (sock, scheduled) => {
  inflight.set(sock, { scheduled, sentAt: performance.now(), head: null, need: -1, got: 0, chunked: false, tail: null });
  sock.write(request());
};
const onData = (sock, chunk) => {
  const w = inflight.get(sock);
  if (!w) return;
  if (w.need < 0 && !w.chunked) {
    // the head: usually whole in the first chunk; kept only while it is not
    const buf = w.head ? Buffer.concat([w.head, chunk]) : chunk;
    const end = buf.indexOf(CRLF2);
    if (end < 0) { w.head = buf; return; }
    const h = buf.toString('latin1', 0, end);
    if (!h.startsWith('HTTP/1.1 200')) errors++;
    if (/transfer-encoding:\s*chunked/i.test(h)) w.chunked = true;
    else w.need = end + 4 + Number(/content-length:\s*(\d+)/i.exec(h)?.[1] ?? 0);
    w.head = null;
    chunk = buf;
  }
  w.got += chunk.length;
  if (w.chunked) {
    // done when the body ends with the last chunk (its 5 bytes may straddle two reads)
    const t = w.tail ? Buffer.concat([w.tail, chunk]) : chunk;
    if (!t.subarray(Math.max(0, t.length - 5)).equals(LAST_CHUNK)) { w.tail = t.subarray(Math.max(0, t.length - 4)); return; }
  } else if (w.got < w.need) return;
  lastAnswer = performance.now();
  latencies[answered] = lastAnswer - w.scheduled;
  fromSend[answered++] = lastAnswer - w.sentAt;
  inflight.delete(sock);
  pending--;
  const next = queue.shift();
  if (next !== undefined) write(sock, next);
  else idle.push(sock);
};
const socket = () =>
  new Promise((resolve) => {
    const sock = net.connect(Number(url.port), url.hostname, () => resolve(sock));
    sock.setNoDelay(true);
    sock.on('data', (c) => onData(sock, c));
    sock.on('error', () => undefined);
    // a server closing an idle keep-alive socket races with a request written on it: drop the
    // socket and send that request again on another one, as HTTP clients do (same scheduled time)
    sock.on('close', () => {
      const i = idle.indexOf(sock);
      if (i >= 0) idle.splice(i, 1);
      all.splice(all.indexOf(sock), 1);
      const w = inflight.get(sock);
      if (!w || finished) return;
      inflight.delete(sock);
      if (w.got > 0 || w.head) { errors++; pending--; return; } // it had started answering
      void socket().then((fresh) => write(fresh, w.scheduled));
    });
    all.push(sock);
  });

for (let i = 0; i < 32; i++) idle.push(await socket());
const send = async (scheduled) => {
  pending++;
  let sock = idle.pop();
  if (!sock && all.length < MAX_SOCKETS) sock = await socket();
  if (sock) {
    sendLag[lagged++] = performance.now() - scheduled;
    write(sock, scheduled);
  } else queue.push(scheduled);
};
const cpu0 = process.cpuUsage();
const start = performance.now();
let sent = 0;
await new Promise((done) => {
  const tick = () => {
    // request k is scheduled at k / rate seconds: floor(elapsed * rate) + 1 of them are due
    const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * cfg.rate) + 1);
    while (sent < due) void send(start + (sent++ * 1000) / cfg.rate);
    if (sent >= total) done();
    else setTimeout(tick, 2);
  };
  tick();
});
const cutoff = performance.now() + cfg.seconds * 1000;
while (pending > 0 && performance.now() < cutoff) await new Promise((r) => setTimeout(r, 5));
finished = true;
const now = performance.now();
const elapsed = ((pending > 0 ? now : lastAnswer) - start) / 1000;
const cpu = process.cpuUsage(cpu0);
const ages = [...[...inflight.values()].map((w) => now - w.scheduled), ...queue.map((q) => now - q)];
const unanswered = pending;
for (const s of [...all]) s.destroy();

const round2 = (x) => Math.round(x * 100) / 100;
const quantile = (xs, p) => {
  const sorted = Float64Array.from(xs).sort();
  return sorted.length ? round2(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]) : 0;
};
const withAges = [...latencies.subarray(0, answered), ...ages];
const rps = Math.round(answered / elapsed);
const p99 = quantile(withAges, 0.99);
console.log(JSON.stringify({
  rps, requests: answered, p50: quantile(withAges, 0.5), p99, errors: errors + unanswered, unanswered,
  lag50: quantile(sendLag.subarray(0, lagged), 0.5), lag99: quantile(sendLag.subarray(0, lagged), 0.99),
  p99FromSend: quantile(fromSend.subarray(0, answered), 0.99),
  // kept up: (nearly) the offered rate, no errors, and no backlog building up over the phase
  sustained: errors + unanswered === 0 && rps >= cfg.rate * 0.97 && p99 < 250,
  sent, busy: round2((cpu.user + cpu.system) / 1000 / (now - start)),
}));
process.exit(0);
