import { useEffect, useState } from 'preact/hooks';
import type { ComponentChildren, JSX } from 'preact';

/**
 * A small History-API router. Routes are patterns like `/projects/:projectId/boards/:boardId`;
 * the first match wins. Pages get the decoded parameters as props. Register a page in
 * `routes.tsx`.
 */
export interface Route {
  pattern: string;
  /** Lazy so a page's code (and its charts) loads only when it is opened. */
  page: (params: Record<string, string>) => JSX.Element;
  /** Pages reachable without a session (sign-in, the identity provider's callback). */
  public?: boolean;
}

const listeners = new Set<() => void>();
window.addEventListener('popstate', () => listeners.forEach((l) => l()));

export function navigate(to: string, opts: { replace?: boolean } = {}) {
  if (to === location.pathname + location.search) return;
  if (opts.replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  window.scrollTo(0, 0);
  listeners.forEach((l) => l());
}

export function usePath(): string {
  const [path, setPath] = useState(location.pathname + location.search);
  useEffect(() => {
    const l = () => setPath(location.pathname + location.search);
    listeners.add(l);
    return () => void listeners.delete(l);
  }, []);
  return path;
}

export function match(routes: Route[], pathname: string): { route: Route; params: Record<string, string> } | undefined {
  const parts = pathname.replace(/\/+$/, '').split('/').slice(1);
  for (const route of routes) {
    const pat = route.pattern.replace(/\/+$/, '').split('/').slice(1);
    if (pat.length !== parts.length) continue;
    const params: Record<string, string> = {};
    if (pat.every((seg, i) => (seg.startsWith(':') ? ((params[seg.slice(1)] = decodeURIComponent(parts[i])), parts[i] !== '') : seg === parts[i]))) {
      return { route, params };
    }
  }
  return undefined;
}

/** An `<a>` that navigates inside the app (modifier-clicks still open a new tab). */
export function Link(props: { href: string; children: ComponentChildren; class?: string; 'aria-current'?: 'page' | undefined }) {
  const onClick = (e: MouseEvent) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(props.href);
  };
  return <a href={props.href} class={props.class} aria-current={props['aria-current']} onClick={onClick}>{props.children}</a>;
}
