import { useEffect, useState } from 'preact/hooks';
import { RETURN_KEY } from '../api.js';
import { navigate } from '../router.js';
import { session, setSession } from '../session.js';
import { consoleConfig, startOidc, type ConsoleConfig } from '../oidc.js';

/** Where to go after signing in: the page a 401 or a bookmark interrupted, else the start. */
export function takeReturnPath(): string {
  const to = sessionStorage.getItem(RETURN_KEY);
  sessionStorage.removeItem(RETURN_KEY);
  return to && to.startsWith('/') && !to.startsWith('//') && !to.startsWith('/sign-in') ? to : '/';
}

export function SignInPage() {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [config, setConfig] = useState<ConsoleConfig | null>(null);
  useEffect(() => {
    document.title = 'Sign in · Tally';
    if (session()) navigate(takeReturnPath(), { replace: true });
    void consoleConfig().then(setConfig);
  }, []);

  const submit = async (e: Event) => {
    e.preventDefault();
    const value = token.trim();
    if (!value) return setError('Enter an access token or the superadmin key.');
    setBusy(true);
    setError(null);
    try {
      // Checked before it becomes the session, so a wrong token stays on this form.
      const res = await fetch('/api/account', { headers: { authorization: `Bearer ${value}`, accept: 'application/json' } });
      if (res.status === 401) throw new Error('This token was not accepted: check it, or ask an admin for a new one.');
      if (!res.ok) {
        const body = await res.json().catch(() => ({}));
        throw new Error(body.message ?? body.error ?? `The API answered ${res.status}.`);
      }
      setSession({ token: value, via: 'token' });
      navigate(takeReturnPath(), { replace: true });
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };

  const oidc = async () => {
    setError(null);
    try {
      await startOidc(config!, sessionStorage.getItem(RETURN_KEY) ?? '/');
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    }
  };

  return (
    <section class="panel narrow sign-in">
      <h1>Sign in to Tally</h1>
      {config?.oidcIssuer && (
        <>
          <button type="button" class="primary wide" onClick={oidc}>Sign in with your identity provider</button>
          <p class="or"><span>or</span></p>
        </>
      )}
      <form onSubmit={submit} aria-labelledby="token-heading">
        <h2 id="token-heading">Sign in with an access token</h2>
        <label for="access-token">Access token</label>
        <input id="access-token" name="token" type="password" autoComplete="off" value={token} onInput={(e) => setToken((e.target as HTMLInputElement).value)} aria-describedby="token-help" />
        <p id="token-help" class="help">A machine-access token (Organisation → Tokens) or the superadmin key that <code>npm start</code> prints.</p>
        {error && <p class="error" role="alert">{error}</p>}
        <button type="submit" class="primary" disabled={busy}>Sign in</button>
      </form>
    </section>
  );
}
