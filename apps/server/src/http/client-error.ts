import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * Requests Node's HTTP parser refuses before Koa sees them (request line and headers past 16 KB, a
 * malformed request): answered with a JSON envelope like every other error, instead of Node's
 * bare status line with an empty body.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  if (!socket.writable || err.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const [status, error, message] =
    err.code === 'HPE_HEADER_OVERFLOW' ? [431, 'request headers too large', 'the request line and headers exceed 16 KB']
    : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? [408, 'request timeout', 'the request was not received in time']
    : [400, 'bad request', 'the request is not valid HTTP'];
  const body = JSON.stringify({ error, code: 'bad_request', message });
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}
