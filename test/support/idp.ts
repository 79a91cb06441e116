import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair, type JWK } from 'jose';

/**
 * A real identity provider on loopback for tests: serves a JWKS of keys jose generated and
 * signs ID tokens with them. `rotate()` replaces the signing key (new kid) to prove the service
 * refetches keys it has not seen.
 */
export class TestIdp {
  issuer = '';
  jwksUrl = '';
  audience = 'analytics-test';
  jwksFetches = 0;
  private server?: http.Server;
  private keys: Array<{ kid: string; privateKey: CryptoKey; jwk: JWK }> = [];

  static async start(): Promise<TestIdp> {
    const idp = new TestIdp();
    await idp.rotate();
    idp.server = http.createServer((req, res) => {
      if (req.url === '/.well-known/jwks.json') {
        idp.jwksFetches++;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ keys: idp.keys.map((k) => k.jwk) }));
      } else {
        res.statusCode = 404;
        res.end();
      }
    });
    await new Promise<void>((r) => idp.server!.listen(0, '127.0.0.1', r));
    const port = (idp.server.address() as AddressInfo).port;
    idp.issuer = `http://127.0.0.1:${port}/`;
    idp.jwksUrl = `http://127.0.0.1:${port}/.well-known/jwks.json`;
    return idp;
  }

  /** Adds a new signing key (published alongside the old ones) and signs with it from now on. */
  async rotate(): Promise<void> {
    const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
    const kid = `k${this.keys.length + 1}-${Math.random().toString(36).slice(2, 8)}`;
    const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
    this.keys.push({ kid, privateKey: privateKey as CryptoKey, jwk });
  }

  /** Env for the service under test. */
  env(): Record<string, string> {
    return { OIDC_ISSUER: this.issuer, OIDC_AUDIENCE: this.audience, OIDC_JWKS_URL: this.jwksUrl, OIDC_JWKS_COOLDOWN_MS: '0' };
  }

  /** An ID token for `sub` (email defaults to `<sub>@example.test`). */
  async token(
    sub: string,
    opts: { email?: string | null; issuer?: string; audience?: string; expiresIn?: string | number; emailVerified?: boolean; name?: string } = {},
  ): Promise<string> {
    const key = this.keys[this.keys.length - 1];
    const claims: Record<string, unknown> = {};
    const email = opts.email === undefined ? `${sub}@example.test` : opts.email;
    if (email) claims.email = email;
    if (opts.emailVerified !== undefined) claims.email_verified = opts.emailVerified;
    if (opts.name) claims.name = opts.name;
    return new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: key.kid })
      .setSubject(sub)
      .setIssuer(opts.issuer ?? this.issuer)
      .setAudience(opts.audience ?? this.audience)
      .setIssuedAt()
      .setExpirationTime(opts.expiresIn ?? '1h')
      .sign(key.privateKey);
  }

  async close(): Promise<void> {
    await new Promise<void>((r) => this.server?.close(() => r()));
  }
}
