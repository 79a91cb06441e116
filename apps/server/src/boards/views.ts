import type { Db } from '../ports/metadata/knex.js';

/** A board's view is written at most this often (per board, per process and in the table). */
export const VIEW_RECORD_MS = 60_000;

/** A board a person ran lately, with its project. */
export interface ViewedBoard {
  boardId: number;
  projectId: number;
  lastViewedAt: number;
}

/**
 * When a person last ran each board (`board_views`), so the worker warms the cards of the boards
 * people look at (warming.ts). Written cheaply: at most once a minute per board, remembered in
 * this process first, and the upsert itself leaves a row younger than a minute alone (other
 * processes). Machine tokens and installation keys running a board are not views.
 */
export class BoardViews {
  private written = new Map<number, number>();

  constructor(private db: Db) {}

  async record(boardId: number, projectId: number, now = Date.now()): Promise<void> {
    const last = this.written.get(boardId);
    if (last !== undefined && now - last < VIEW_RECORD_MS) return;
    this.written.set(boardId, now);
    if (this.written.size > 10_000) this.written.clear();
    await this.db.raw(
      `INSERT INTO board_views (board_id, project_id, last_viewed_at) VALUES (?, ?, ?)
       ON CONFLICT (board_id) DO UPDATE SET last_viewed_at = excluded.last_viewed_at, project_id = excluded.project_id
       WHERE board_views.last_viewed_at <= excluded.last_viewed_at - ?`,
      [boardId, projectId, now, VIEW_RECORD_MS],
    );
  }

  /** Forgets views older than `beforeMs` and those of deleted boards; answers how many rows went. */
  async prune(beforeMs: number): Promise<number> {
    return this.db('board_views').where('last_viewed_at', '<', beforeMs).orWhereNotIn('board_id', this.db('boards').select('id')).delete();
  }

  /** Boards still existing that were viewed at or after `sinceMs`, most recently viewed first. */
  async since(sinceMs: number): Promise<ViewedBoard[]> {
    const rows = await this.db('board_views as v')
      .join('boards as b', 'b.id', 'v.board_id')
      .where('v.last_viewed_at', '>=', sinceMs)
      .orderBy([{ column: 'v.last_viewed_at', order: 'desc' }, { column: 'v.board_id', order: 'asc' }])
      .select('v.board_id', 'b.project_id', 'v.last_viewed_at');
    return rows.map((r) => ({ boardId: Number(r.board_id), projectId: Number(r.project_id), lastViewedAt: Number(r.last_viewed_at) }));
  }
}
