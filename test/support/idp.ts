import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash, randomBytes } from 'node:crypto';
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
  /** Who the next browser sign-in (authorization code + PKCE) signs in as; set by a test. */
  nextLogin?: { sub: string; email: string };
  /** Codes issued by /authorize, redeemed once at /token. */
  private codes = new Map<string, { challenge: string; nonce?: string; clientId: string; redirectUri: string; sub: string; email: string }>();
  private server?: http.Server;
  private keys: Array<{ kid: string; privateKey: CryptoKey; jwk: JWK }> = [];

  static async start(): Promise<TestIdp> {
    const idp = new TestIdp();
    await idp.rotate();
    idp.server = http.createServer((req, res) => {
      if (req.url?.startsWith('/.well-known/openid-configuration') || req.url?.startsWith('/authorize') || req.url?.startsWith('/token')) {
        void idp.oauth(req, res);
        return;
      }
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

  /**
   * The browser sign-in a web console does (OpenID Connect discovery, authorization code with
   * PKCE S256): /authorize approves at once as `nextLogin` and redirects back with a code;
   * /token checks the code, redirect URI, client and code_verifier and answers an ID token
   * carrying the request's nonce.
   */
  private async oauth(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url!, this.issuer);
    res.setHeader('access-control-allow-origin', '*');
    const json = (status: number, body: unknown) => {
      res.statusCode = status;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(body));
    };
    if (url.pathname === '/.well-known/openid-configuration') {
      return json(200, {
        issuer: this.issuer, authorization_endpoint: `${this.issuer}authorize`, token_endpoint: `${this.issuer}token`, jwks_uri: this.jwksUrl,
        response_types_supported: ['code'], code_challenge_methods_supported: ['S256'], id_token_signing_alg_values_supported: ['RS256'],
      });
    }
    if (url.pathname === '/authorize') {
      const q = url.searchParams;
      const redirectUri = q.get('redirect_uri');
      if (!redirectUri || q.get('response_type') !== 'code' || q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge') || !q.get('client_id')) {
        return json(400, { error: 'invalid_request' });
      }
      if (!this.nextLogin) return json(400, { error: 'access_denied', error_description: 'no test login set (idp.nextLogin)' });
      const code = randomBytes(16).toString('hex');
      this.codes.set(code, { challenge: q.get('code_challenge')!, nonce: q.get('nonce') ?? undefined, clientId: q.get('client_id')!, redirectUri, ...this.nextLogin });
      const back = new URL(redirectUri);
      back.searchParams.set('code', code);
      if (q.get('state')) back.searchParams.set('state', q.get('state')!);
      res.statusCode = 302;
      res.setHeader('location', back.toString());
      return void res.end();
    }
    if (url.pathname === '/token' && req.method === 'POST') {
      let raw = '';
      for await (const chunk of req) raw += chunk;
      const form = new URLSearchParams(raw);
      const code = form.get('code') ?? '';
      const grant = this.codes.get(code);
      this.codes.delete(code);
      const verifier = form.get('code_verifier') ?? '';
      const challenge = createHash('sha256').update(verifier).digest('base64url');
      if (form.get('grant_type') !== 'authorization_code' || !grant || grant.redirectUri !== form.get('redirect_uri') || grant.clientId !== form.get('client_id') || grant.challenge !== challenge) {
        return json(400, { error: 'invalid_grant' });
      }
      const idToken = await this.token(grant.sub, { email: grant.email, audience: grant.clientId === this.audience ? undefined : grant.clientId, nonce: grant.nonce });
      return json(200, { access_token: randomBytes(16).toString('hex'), token_type: 'Bearer', expires_in: 3600, id_token: idToken });
    }
    json(404, { error: 'not found' });
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
    opts: { email?: string | null; issuer?: string; audience?: string; expiresIn?: string | number; emailVerified?: boolean; name?: string; nonce?: string; claims?: Record<string, unknown> } = {},
  ): Promise<string> {
    const key = this.keys[this.keys.length - 1];
    const claims: Record<string, unknown> = { ...(opts.claims ?? {}) };
    const email = opts.email === undefined ? `${sub}@example.test` : opts.email;
    if (email) claims.email = email;
    if (opts.emailVerified !== undefined) claims.email_verified = opts.emailVerified;
    if (opts.name) claims.name = opts.name;
    if (opts.nonce) claims.nonce = opts.nonce;
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
