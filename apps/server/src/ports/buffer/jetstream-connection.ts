import fs from 'node:fs';
import { ErrorCode, credsAuthenticator, type ConnectionOptions } from 'nats';
import type { NatsSecurity } from './jetstream-config.js';

/**
 * How the JetStream buffer connects: credentials and TLS (NatsSecurity) turned into the nats
 * client's own options, and a connection failure turned into a reason a person can act on.
 */

/** The nats client's options for credentials and TLS. */
export function securityOptions(sec: NatsSecurity): Partial<ConnectionOptions> {
  const opts: Partial<ConnectionOptions> = {};
  if (sec.user !== undefined) Object.assign(opts, { user: sec.user, pass: sec.password });
  if (sec.token !== undefined) opts.token = sec.token;
  const creds = sec.credsFile;
  // A function, so each (re)connection reads the file as it is now (rotated credentials).
  if (creds) opts.authenticator = credsAuthenticator(() => fs.readFileSync(creds));
  // The client reads these files at each connection too. Any TLS option makes TLS required.
  if (sec.tls) {
    opts.tls = {
      ...(sec.tls.caFile ? { caFile: sec.tls.caFile } : {}),
      ...(sec.tls.certFile ? { certFile: sec.tls.certFile, keyFile: sec.tls.keyFile } : {}),
    };
  }
  // By default the client gives up reconnecting after the same authorization error twice and
  // the buffer would stay closed for good; retrying (unready, logging why) picks up credentials
  // fixed on the server side.
  opts.ignoreAuthErrorAbort = true;
  return opts;
}

const AUTH_CODES: string[] = [
  ErrorCode.AuthorizationViolation, ErrorCode.AuthenticationExpired, ErrorCode.AuthenticationTimeout,
  ErrorCode.AccountExpired, ErrorCode.BadAuthentication, ErrorCode.BadCreds,
];

/**
 * Why NATS refused us, when the cause is ours to fix (credentials, certificates, TLS settings),
 * naming the variables involved; undefined for anything that may pass by itself (unreachable,
 * timeout, a server still starting).
 */
export function refusalReason(err: unknown): string | undefined {
  const e = err as { code?: string; message?: string };
  const code = String(e?.code ?? '');
  const message = String(e?.message ?? err);
  if (AUTH_CODES.includes(code)) {
    return `authorization refused (${message}): check NATS_USER/NATS_PASSWORD, NATS_TOKEN or NATS_CREDS against the server's accounts`;
  }
  if (code === ErrorCode.PermissionsViolation) return `permission refused (${message}): the NATS user needs the ingestion subjects and $JS.API.>`;
  if (code === ErrorCode.ServerOptionNotAvailable && /tls/i.test(message)) {
    return 'TLS: NATS_TLS_* is set but the server does not offer TLS';
  }
  if (/CERT|_SIGNATURE|ERR_TLS|ERR_SSL|SELF_SIGNED/.test(code) || /certificate/i.test(message)) {
    return `TLS certificate rejected (${message}${code && !message.includes(code) ? `, ${code}` : ''}): check NATS_TLS_CA names the CA that signed the server's certificate, and that the certificate names the host in NATS_URL`;
  }
  if (/ssl|tls/i.test(message)) return `TLS handshake failed (${message}): check NATS_TLS_CERT/NATS_TLS_KEY and the server's tls settings`;
  return undefined;
}

/**
 * A TLS server that requires client certificates drops a client without one only after the
 * handshake (TLS 1.3), which the client sees as a timeout: say so when that may be the cause.
 */
export function timeoutHint(err: unknown, cfg: { security: NatsSecurity }): string {
  const code = String((err as { code?: string })?.code ?? '');
  if (code !== ErrorCode.Timeout && code !== ErrorCode.ConnectionTimeout) return '';
  if (!cfg.security.tls || cfg.security.tls.certFile) return '';
  return ' (with TLS, a server that requires client certificates answers a client without one this way: set NATS_TLS_CERT and NATS_TLS_KEY)';
}

/** The servers of NATS_URL without any user:password@ they carry, for logs. */
export function serversForLog(servers: string[]): string {
  return servers.map((s) => s.replace(/\/\/[^@/]*@/, '//')).join(',');
}
