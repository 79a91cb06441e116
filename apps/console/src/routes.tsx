import type { Route } from './router.js';
import { SignInPage } from './pages/sign-in.js';
import { OidcCallbackPage } from './pages/oidc-callback.js';
import { HomePage } from './pages/home.js';
import { BoardsPage } from './pages/boards.js';
import { BoardPage } from './pages/board.js';
import { InsightsPage } from './pages/insights.js';
import { ReportsPage } from './pages/reports/index.js';
import { FlagsPage } from './pages/flags/index.js';
import { ExperimentsPage } from './pages/experiments/index.js';
import { PeoplePage, PersonPage } from './pages/people/index.js';
import { EventsPage } from './pages/events/index.js';
import { AuditLogPage } from './pages/audit/index.js';
import { LexiconPage } from './pages/lexicon/index.js';
import { AnnotationsPage } from './pages/annotations/index.js';
import type { Role } from './types.js';

/**
 * Every page of the console, first match wins. To add a page: a file under pages/, one line
 * here, and (for the top navigation) one entry in NAV below. See apps/console/README.md.
 */
export const ROUTES: Route[] = [
  { pattern: '/sign-in', page: () => <SignInPage />, public: true },
  { pattern: '/auth/callback', page: () => <OidcCallbackPage />, public: true },
  { pattern: '/', page: () => <HomePage /> },
  { pattern: '/projects/:projectId', page: (p) => <BoardsPage projectId={p.projectId} /> },
  { pattern: '/projects/:projectId/boards', page: (p) => <BoardsPage projectId={p.projectId} /> },
  { pattern: '/projects/:projectId/boards/:boardId', page: (p) => <BoardPage projectId={p.projectId} boardId={p.boardId} /> },
  { pattern: '/projects/:projectId/insights', page: (p) => <InsightsPage key="new" projectId={p.projectId} /> },
  { pattern: '/projects/:projectId/reports', page: (p) => <ReportsPage projectId={p.projectId} /> },
  { pattern: '/projects/:projectId/reports/:reportId', page: (p) => <InsightsPage key={p.reportId} projectId={p.projectId} reportId={p.reportId} /> },
  { pattern: '/projects/:projectId/flags', page: (p) => <FlagsPage projectId={p.projectId} /> },
  { pattern: '/projects/:projectId/flags/:flagId', page: (p) => <FlagsPage projectId={p.projectId} flagId={p.flagId} /> },
  { pattern: '/projects/:projectId/experiments', page: (p) => <ExperimentsPage projectId={p.projectId} /> },
  { pattern: '/projects/:projectId/experiments/:experimentId', page: (p) => <ExperimentsPage projectId={p.projectId} experimentId={p.experimentId} /> },
  { pattern: '/projects/:projectId/people', page: (p) => <PeoplePage projectId={p.projectId} /> },
  { pattern: '/projects/:projectId/people/:distinctId', page: (p) => <PersonPage key={p.distinctId} projectId={p.projectId} distinctId={p.distinctId} /> },
  { pattern: '/projects/:projectId/events', page: (p) => <EventsPage projectId={p.projectId} /> },
  { pattern: '/projects/:projectId/events/lexicon', page: (p) => <LexiconPage projectId={p.projectId} /> },
  { pattern: '/projects/:projectId/events/annotations', page: (p) => <AnnotationsPage projectId={p.projectId} /> },
  { pattern: '/projects/:projectId/audit-log', page: (p) => <AuditLogPage projectId={p.projectId} /> },
];

/** The top navigation inside a project: label, the address under /projects/{id}, and the least role it is shown to. */
export const NAV: Array<{ label: string; path: string; minRole?: Role }> = [
  { label: 'Boards', path: 'boards' },
  { label: 'Insights', path: 'insights' },
  { label: 'Reports', path: 'reports' },
  { label: 'Flags', path: 'flags' },
  { label: 'Experiments', path: 'experiments' },
  { label: 'People', path: 'people' },
  { label: 'Events', path: 'events' },
  { label: 'Audit log', path: 'audit-log', minRole: 'admin' },
];
