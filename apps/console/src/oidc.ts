/**
 * Sign-in with the configured identity provider: OAuth 2.0 authorization code with PKCE (S256),
 * entirely in the browser (a public client: no secret). The ID token it returns is the bearer
 * credential the API already verifies against the provider's keys.
 */
export interface ConsoleConfig { oidcIssuer: string | null; oidcClientId: string | null }

let configPromise: Promise<ConsoleConfig> | undefined;
export function consoleConfig(): Promise<ConsoleConfig> {
  configPromise ??= fetch('/console/config.json')
    .then((r) => (r.ok ? (r.json() as Promise<ConsoleConfig>) : { oidcIssuer: null, oidcClientId: null }))
    .catch(() => ({ oidcIssuer: null, oidcClientId: null }));
  return configPromise;
}

const PENDING = 'tally.oidc';
export const REDIRECT_PATH = '/auth/callback';

const b64url = (bytes: ArrayBuffer | Uint8Array) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
const random = (n = 32) => b64url(crypto.getRandomValues(new Uint8Array(n)));

async function discovery(issuer: string): Promise<{ authorization_endpoint: string; token_endpoint: string }> {
  const url = issuer.replace(/\/?$/, '/') + '.well-known/openid-configuration';
  const res = await fetch(url);
  if (!res.ok) throw new Error(`the identity provider's discovery document answered ${res.status}`);
  const doc = await res.json();
  if (typeof doc.authorization_endpoint !== 'string' || typeof doc.token_endpoint !== 'string') throw new Error("the identity provider's discovery document has no authorization or token endpoint");
  return doc;
}

/** Leaves for the provider's sign-in page; `returnTo` is where the person lands afterwards. */
export async function startOidc(cfg: ConsoleConfig, returnTo: string): Promise<void> {
  if (!cfg.oidcIssuer || !cfg.oidcClientId) throw new Error('no identity provider is configured');
  const doc = await discovery(cfg.oidcIssuer);
  const verifier = random(48);
  const challenge = b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
  const state = random(16);
  const nonce = random(16);
  sessionStorage.setItem(PENDING, JSON.stringify({ verifier, state, nonce, tokenEndpoint: doc.token_endpoint, clientId: cfg.oidcClientId, returnTo }));
  const u = new URL(doc.authorization_endpoint);
  u.searchParams.set('response_type', 'code');
  u.searchParams.set('client_id', cfg.oidcClientId);
  u.searchParams.set('redirect_uri', location.origin + REDIRECT_PATH);
  u.searchParams.set('scope', 'openid email profile');
  u.searchParams.set('code_challenge', challenge);
  u.searchParams.set('code_challenge_method', 'S256');
  u.searchParams.set('state', state);
  u.searchParams.set('nonce', nonce);
  location.assign(u.toString());
}

/** On the callback page: trades the code for tokens; answers the ID token and where to go. */
export async function finishOidc(search: string): Promise<{ idToken: string; returnTo: string }> {
  const params = new URLSearchParams(search);
  const raw = sessionStorage.getItem(PENDING);
  sessionStorage.removeItem(PENDING);
  if (params.get('error')) throw new Error(`the identity provider refused: ${params.get('error_description') ?? params.get('error')}`);
  if (!raw) throw new Error('no sign-in was started in this tab');
  const pending = JSON.parse(raw) as { verifier: string; state: string; nonce: string; tokenEndpoint: string; clientId: string; returnTo: string };
  if (params.get('state') !== pending.state) throw new Error('the sign-in answer does not match the request (state)');
  const code = params.get('code');
  if (!code) throw new Error('the identity provider sent no code');
  const res = await fetch(pending.tokenEndpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: location.origin + REDIRECT_PATH, client_id: pending.clientId, code_verifier: pending.verifier }),
  });
  const body = await res.json().catch(() => ({}));
  if (!res.ok || typeof body.id_token !== 'string') throw new Error(`the identity provider's token endpoint answered ${res.status}${body.error ? `: ${body.error}` : ''}`);
  // The API verifies the signature; here only the nonce ties the token to this request.
  const payload = JSON.parse(atob(body.id_token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')));
  if (payload.nonce !== pending.nonce) throw new Error('the ID token was not issued for this sign-in (nonce)');
  return { idToken: body.id_token, returnTo: pending.returnTo || '/' };
}
