import { useEffect, useState } from 'preact/hooks';
import { Link, navigate } from '../router.js';
import { setSession } from '../session.js';
import { finishOidc } from '../oidc.js';

/** The identity provider sends the person back here with a code; trade it and go on. */
export function OidcCallbackPage() {
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    finishOidc(location.search)
      .then(({ idToken, returnTo }) => {
        setSession({ token: idToken, via: 'oidc' });
        navigate(returnTo.startsWith('/') && !returnTo.startsWith('//') ? returnTo : '/', { replace: true });
      })
      .catch((e) => setError(e instanceof Error ? e.message : String(e)));
  }, []);
  return (
    <section class="panel narrow">
      <h1>Signing in…</h1>
      {error ? <p class="error" role="alert">{error} <Link href="/sign-in">Back to sign-in</Link></p> : <p role="status">Checking the identity provider's answer.</p>}
    </section>
  );
}
