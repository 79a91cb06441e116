import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, ApiError, RETURN_KEY, signOut } from './api.js';
import { Link, match, navigate, usePath } from './router.js';
import { NAV, ROUTES } from './routes.js';
import { onSession, session, setSession } from './session.js';
import { ShellContext, roleAtLeast, type Shell } from './context.js';
import { applyTheme, themeChoice, type ThemeChoice } from './theme.js';
import type { Account, Project } from './types.js';

export function App() {
  const path = usePath();
  const [, setTick] = useState(0);
  useEffect(() => onSession(() => setTick((t) => t + 1)), []);
  const pathname = path.split('?')[0];
  const found = match(ROUTES, pathname);
  const signedIn = !!session();

  useEffect(() => {
    if (!signedIn && found && !found.route.public) {
      sessionStorage.setItem(RETURN_KEY, path);
      navigate('/sign-in', { replace: true });
    }
  }, [signedIn, path]);

  if (!found) return <Frame><NotFound /></Frame>;
  if (found.route.public) return <main id="main" class="public">{found.route.page(found.params)}</main>;
  if (!signedIn) return null;
  return <SignedIn pathname={pathname} page={found.route.page(found.params)} projectId={found.params.projectId} />;
}

function Frame(props: { children: any }) {
  return <main id="main" class="public">{props.children}</main>;
}

function NotFound() {
  return (
    <section class="panel narrow">
      <h1>Page not found</h1>
      <p>Nothing lives at this address. <Link href="/">Go to the console's start</Link>.</p>
    </section>
  );
}

/**
 * A signed-in page opened directly (a visit, a reload) reads the account and projects as the
 * script loads, beside the board's early run, rather than after the first paint; taken by the
 * shell's first load if the session is still the one they were read with.
 */
let early: { session: ReturnType<typeof session>; reads: Promise<[Account, Project[]]> } | null = (() => {
  const found = match(ROUTES, location.pathname);
  const s = session();
  if (!s || !found || found.route.public) return null;
  const reads = Promise.all([api.account(), api.projects()]);
  reads.catch(() => {}); // answered by the shell's load, which shows the error
  return { session: s, reads };
})();
const takeEarly = () => {
  const e = early;
  early = null;
  return e && e.session === session() ? e.reads : null;
};

/** Loads the account and projects once per session (and again when the organisation changes). */
function SignedIn(props: { pathname: string; page: preact.JSX.Element; projectId?: string }) {
  const [account, setAccount] = useState<Account | null>(null);
  const [projects, setProjects] = useState<Project[]>([]);
  const [error, setError] = useState<string | null>(null);

  const reload = async () => {
    try {
      const [a, p] = await (takeEarly() ?? Promise.all([api.account(), api.projects()]));
      setAccount(a);
      setProjects(p);
      setError(null);
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) return;
      setError(e instanceof Error ? e.message : String(e));
    }
  };
  useEffect(() => void reload(), []);

  const shell = useMemo<Shell | null>(() => {
    if (!account) return null;
    const role = account.superadmin ? 'owner' : account.role ?? 'viewer';
    return { account, projects, role, canWrite: roleAtLeast(role, 'member'), canAdmin: roleAtLeast(role, 'admin'), reload };
  }, [account, projects]);

  if (error) {
    return (
      <main id="main" class="public">
        <section class="panel narrow" role="alert">
          <h1>The console could not load your account</h1>
          <p>{error}</p>
          <button type="button" onClick={() => signOut()}>Sign out</button>
        </section>
      </main>
    );
  }
  if (!shell) return <main id="main" class="public"><p class="loading" role="status">Loading…</p></main>;
  return (
    <ShellContext.Provider value={shell}>
      <a class="skip" href="#main">Skip to content</a>
      <Header shell={shell} pathname={props.pathname} projectId={props.projectId} />
      <main id="main" tabIndex={-1}>{props.page}</main>
    </ShellContext.Provider>
  );
}

function Header(props: { shell: Shell; pathname: string; projectId?: string }) {
  const { account, projects, role } = props.shell;
  const [theme, setTheme] = useState<ThemeChoice>(themeChoice());
  const [menuOpen, setMenuOpen] = useState(false);
  const project = projects.find((p) => String(p.id) === props.projectId);
  const orgId = session()?.orgId ?? account.organization?.id;

  const switchOrg = async (id: number) => {
    const s = session();
    if (!s) return;
    setSession({ ...s, orgId: id });
    // The other organisation's projects first, then its start page (never the old project's).
    await props.shell.reload();
    navigate('/');
  };
  const switchProject = (id: string) => {
    // Stay on the same kind of page in the other project when it has one without ids.
    const section = props.pathname.split('/')[3];
    navigate(`/projects/${id}/${section === 'insights' || NAV.some((n) => n.path === section && n.path !== 'boards') ? section : 'boards'}`);
  };
  const cycleTheme = () => {
    const next: ThemeChoice = theme === 'system' ? 'dark' : theme === 'dark' ? 'light' : 'system';
    applyTheme(next);
    setTheme(next);
  };

  return (
    <header class="top">
      <div class="brand"><Link href="/">Tally</Link></div>
      <button type="button" class="menu-toggle" aria-expanded={menuOpen} aria-controls="top-nav" onClick={() => setMenuOpen(!menuOpen)}>Menu</button>
      <div id="top-nav" class={`top-nav ${menuOpen ? 'open' : ''}`}>
        {account.memberships.length > 1 && (
          <label class="switch">
            <span>Organization</span>
            <select value={String(orgId ?? '')} onChange={(e) => switchOrg(Number((e.target as HTMLSelectElement).value))}>
              {account.memberships.map((m) => <option value={String(m.org_id)}>{m.org_name}</option>)}
            </select>
          </label>
        )}
        {projects.length > 0 && (
          <label class="switch">
            <span>Project</span>
            <select value={props.projectId ?? ''} onChange={(e) => switchProject((e.target as HTMLSelectElement).value)}>
              {!project && <option value="">Choose…</option>}
              {projects.map((p) => <option value={String(p.id)}>{p.name}</option>)}
            </select>
          </label>
        )}
        {props.projectId && (
          <nav aria-label="Project">
            <ul>
              {NAV.filter((n) => !n.minRole || roleAtLeast(role, n.minRole)).map((n) => {
                const href = `/projects/${props.projectId}/${n.path}`;
                const current = props.pathname.startsWith(href) || (n.path === 'boards' && props.pathname === `/projects/${props.projectId}`);
                return <li><Link href={href} aria-current={current ? 'page' : undefined}>{n.label}</Link></li>;
              })}
            </ul>
          </nav>
        )}
        <span class="who" title={account.user?.email ?? undefined}>
          {account.superadmin ? 'Superadmin' : account.user?.email ?? account.organization?.name ?? 'Access token'} · {role}
        </span>
        <button type="button" onClick={cycleTheme} aria-label={`Theme: ${theme} (change)`}>Theme: {theme}</button>
        <button type="button" onClick={() => signOut()}>Sign out</button>
      </div>
    </header>
  );
}
