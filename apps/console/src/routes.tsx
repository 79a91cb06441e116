import type { Route } from './router.js';
import { SignInPage } from './pages/sign-in.js';
import { OidcCallbackPage } from './pages/oidc-callback.js';
import { HomePage } from './pages/home.js';
import { BoardsPage } from './pages/boards.js';
import { BoardPage } from './pages/board.js';
import { InsightsPage } from './pages/insights.js';

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
  { pattern: '/projects/:projectId/reports/:reportId', page: (p) => <InsightsPage key={p.reportId} projectId={p.projectId} reportId={p.reportId} /> },
];

/** The top navigation inside a project: label and the address under /projects/{id}. */
export const NAV: Array<{ label: string; path: string }> = [
  { label: 'Boards', path: 'boards' },
  { label: 'Insights', path: 'insights' },
];
