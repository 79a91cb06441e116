import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';

export interface VerifiedIdToken {
  issuer: string;
  subject: string;
  email?: string;
  emailVerified: boolean;
  name?: string;
  /** The groups claim (OIDC_GROUPS_CLAIM) when the token carries it as a list of strings; undefined otherwise. */
  groups?: string[];
}

/**
 * Verifies identity-provider ID tokens with jose against the provider's JWKS: signature,
 * issuer, audience and expiry are checked, and only asymmetric algorithms are accepted (so
 * `alg: none` and HMAC tokens signed with a public key never pass). jose caches the key set
 * and refetches it when a token names an unknown `kid` (at most once per cooldown).
 */
export class IdTokenVerifier {
  private jwks: ReturnType<typeof createRemoteJWKSet>;

  constructor(private opts: { issuer: string; audience: string; jwksUrl: string; cooldownMs: number; groupsClaim?: string }) {
    this.jwks = createRemoteJWKSet(new URL(opts.jwksUrl), {
      cooldownDuration: opts.cooldownMs,
      cacheMaxAge: 10 * 60_000,
      timeoutDuration: 5_000,
    });
  }

  /** Returns the verified claims, or undefined when the token does not verify. */
  async verify(token: string): Promise<VerifiedIdToken | undefined> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.jwks, {
        issuer: this.opts.issuer,
        audience: this.opts.audience,
        algorithms: ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'],
        requiredClaims: ['sub', 'exp'],
        clockTolerance: 5,
      }));
    } catch {
      return undefined;
    }
    if (typeof payload.sub !== 'string' || !payload.sub) return undefined;
    return {
      issuer: payload.iss!,
      subject: payload.sub,
      email: typeof payload.email === 'string' ? payload.email : undefined,
      // Providers that omit email_verified are trusted to send verified emails only.
      emailVerified: payload.email_verified !== false,
      name: typeof payload.name === 'string' ? payload.name : undefined,
      groups: groupsOf(payload[this.opts.groupsClaim ?? 'groups']),
    };
  }
}

/** Most providers send a list of strings; a lone string is one group; anything else: no claim. Bounded (a token is a request header). */
function groupsOf(v: unknown): string[] | undefined {
  if (typeof v === 'string') return [v];
  if (!Array.isArray(v)) return undefined;
  return v.filter((g): g is string => typeof g === 'string' && g.length > 0 && g.length <= 400).slice(0, 1000);
}
