import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Account, Project, Role } from './types.js';

/** What every page may read: who is signed in, with which role, in which project. */
export interface Shell {
  account: Account;
  projects: Project[];
  /** The caller's role in the current organisation; the superadmin acts as owner. */
  role: Role;
  /** member or more: reports, boards, flags, annotations, lexicon. */
  canWrite: boolean;
  /** admin or more: projects, members, tokens. */
  canAdmin: boolean;
  reload(): Promise<void>;
}

export const ShellContext = createContext<Shell | null>(null);

export function useShell(): Shell {
  const s = useContext(ShellContext);
  if (!s) throw new Error('useShell outside the signed-in shell');
  return s;
}

const ORDER: Role[] = ['viewer', 'member', 'admin', 'owner'];
export const roleAtLeast = (role: Role, min: Role) => ORDER.indexOf(role) >= ORDER.indexOf(min);
