import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { useShell } from '../context.js';
import { Link, navigate } from '../router.js';
import type { BoardListItem } from '../types.js';

/** The project's boards, and (member or more) a form to start one. */
export function BoardsPage(props: { projectId: string }) {
  const { canWrite, projects } = useShell();
  const [boards, setBoards] = useState<BoardListItem[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [name, setName] = useState('');
  const project = projects.find((p) => String(p.id) === props.projectId);
  useEffect(() => {
    document.title = `Boards · ${project?.name ?? 'Tally'}`;
    setBoards(null);
    api.boards(props.projectId).then(setBoards, (e) => setError(e.message));
  }, [props.projectId]);

  const create = async (e: Event) => {
    e.preventDefault();
    if (!name.trim()) return;
    try {
      const b = await api.createBoard(props.projectId, name.trim());
      navigate(`/projects/${props.projectId}/boards/${b.id}`);
    } catch (err) {
      setError((err as Error).message);
    }
  };

  return (
    <section class="page">
      <div class="page-head">
        <h1>Boards</h1>
        <Link class="button" href={`/projects/${props.projectId}/insights`}>New insight</Link>
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      {!boards ? <p role="status" class="loading">Loading boards…</p> : boards.length === 0 ? <p class="muted">No board yet.</p> : (
        <ul class="board-list">
          {boards.map((b) => (
            <li>
              <Link href={`/projects/${props.projectId}/boards/${b.id}`}>{b.name}</Link>
              <span class="muted"> · {b.card_count} {b.card_count === 1 ? 'card' : 'cards'}{b.preview.length ? ` · ${b.preview.map((p) => p.label).join(', ')}` : ''}</span>
            </li>
          ))}
        </ul>
      )}
      {canWrite && (
        <form class="inline-form" onSubmit={create}>
          <label for="new-board">New board name</label>
          <input id="new-board" value={name} maxLength={200} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
          <button type="submit">Create board</button>
        </form>
      )}
    </section>
  );
}
