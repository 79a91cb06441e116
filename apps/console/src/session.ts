/**
 * The signed-in session, kept in sessionStorage (one tab, gone when it closes): the bearer
 * credential (an access token, the superadmin key, or an identity provider's ID token) and the
 * organisation the person switched to. Nothing here is sent anywhere but this origin's API.
 */
export interface Session {
  token: string;
  via: 'token' | 'oidc';
  /** Set when the person picked an organisation: sent as X-Tally-Organization. */
  orgId?: number;
}

const KEY = 'tally.session';
let current: Session | null = read();
const listeners = new Set<() => void>();

function read(): Session | null {
  try {
    const raw = sessionStorage.getItem(KEY);
    return raw ? (JSON.parse(raw) as Session) : null;
  } catch {
    return null;
  }
}

export const session = () => current;

export function setSession(next: Session | null) {
  current = next;
  if (next) sessionStorage.setItem(KEY, JSON.stringify(next));
  else sessionStorage.removeItem(KEY);
  listeners.forEach((l) => l());
}

export function onSession(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}
