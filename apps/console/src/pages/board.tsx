import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, joinError } from '../api.js';
import { useShell } from '../context.js';
import { Link } from '../router.js';
import { RangePicker } from '../components/range-picker.js';
import { FiltersEditor } from '../components/filters-editor.js';
import { ResultChart, ResultTable } from '../components/result.js';
import { download, toCsv, toTable, toView, type View } from '../components/view.js';
import type { SeriesKind } from '../components/series-chart.js';
import type { Board, BoardCardWrite, Card, CardRun, DateRangeSpec, PropertyFilter } from '../types.js';

type RunState = { state: 'loading' } | { state: 'ok'; view: View; warnings: string[] } | { state: 'error'; message: string };
const HEIGHT = { short: 150, medium: 250, tall: 400 } as const;

/** The title a card is known by (its figure's accessible name): the report's name, or a text card's first line. */
export const cardTitle = (c: Card) => (c.card_type === 'report' ? c.report.name : c.text.split('\n')[0].replace(/^#+\s*/, '').slice(0, 120) || 'Text');

function runState(run: CardRun): RunState {
  if (run.status === 'error') return { state: 'error', message: joinError(run.error.error, run.error.message) };
  try {
    return { state: 'ok', view: toView(run.type, run.result), warnings: run.warnings };
  } catch (e) {
    return { state: 'error', message: (e as Error).message };
  }
}

/** A saved IR report's chart choice, else a line. */
function seriesKindOf(c: Card): SeriesKind {
  const chart = c.card_type === 'report' ? (c.report.query as any)?.analysis?.chart : undefined;
  return chart === 'bar' || chart === 'number' ? 'bar' : chart === 'area' ? 'stacked' : 'line';
}

/**
 * A board: its cards on a 12-column grid (each card's span and height from the API), the board's
 * range and filters over every card. Each report card runs on its own request, so one slow or
 * failing card never holds the others. Members save the range, filters and order; a viewer's
 * range applies to this view only (one run of the board with the range as an override).
 */
export function BoardPage(props: { projectId: string; boardId: string }) {
  const { canWrite } = useShell();
  const [board, setBoard] = useState<Board | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [runs, setRuns] = useState<Record<number, RunState>>({});
  const [override, setOverride] = useState<{ date_range: DateRangeSpec | null } | null>(null);
  const [announce, setAnnounce] = useState('');
  const [saving, setSaving] = useState<string | null>(null);
  const generation = useRef(0);
  /** After a keyboard move, the handle to focus once the cards are drawn again (ids may change on save). */
  const focusAfterMove = useRef<number | null>(null);
  useEffect(() => {
    if (focusAfterMove.current === null) return;
    const handles = document.querySelectorAll<HTMLElement>('.grid .handle');
    handles[focusAfterMove.current]?.focus();
  }, [board]);

  const cards = board ? [...board.cards].sort((a, b) => a.position - b.position) : [];

  const runAll = async (b: Board, ov: typeof override) => {
    const gen = ++generation.current;
    const reportCards = b.cards.filter((c) => c.card_type === 'report');
    setRuns(Object.fromEntries(reportCards.map((c) => [c.id, { state: 'loading' } as RunState])));
    const put = (id: number, s: RunState) => gen === generation.current && setRuns((r) => ({ ...r, [id]: s }));
    const failed = (e: unknown): RunState => ({
      state: 'error',
      // A card removed since the board loaded (its report deleted): say so next to the API's words.
      message: e instanceof ApiError && e.status === 404 ? `${e.message}: its report may have been deleted; reload the board.` : e instanceof Error ? e.message : String(e),
    });
    if (ov) {
      try {
        const out = await api.runBoard(b.id, { date_range: ov.date_range });
        for (const c of out.cards) put(c.card_id, runState(c));
      } catch (e) {
        for (const c of reportCards) put(c.id, failed(e));
      }
      return;
    }
    // A few cards in flight at once: each draws the moment its own answer arrives.
    let next = 0;
    const worker = async () => {
      while (next < reportCards.length) {
        const c = reportCards[next++];
        try {
          const out = await api.runCard(b.id, c.id);
          const run = out.cards.find((x) => x.card_id === c.id);
          put(c.id, run ? runState(run) : { state: 'error', message: 'The board answered without this card.' });
        } catch (e) {
          put(c.id, failed(e));
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(4, reportCards.length) }, worker));
  };

  useEffect(() => {
    setBoard(null);
    setError(null);
    api.board(props.boardId).then(
      (b) => {
        setBoard(b);
        document.title = `${b.name} · Tally`;
        void runAll(b, null);
      },
      (e: ApiError) => setError(e.status === 404 ? 'This board does not exist, or is in another organisation.' : e.message),
    );
  }, [props.boardId]);

  const writes = (list: Card[]): BoardCardWrite[] =>
    list.map((c, i) => (c.card_type === 'report'
      ? { cardType: 'report', reportId: c.report_id, position: i, span: c.span as 4 | 6 | 8 | 12, height: c.height }
      : { cardType: 'text', text: c.text, position: i, span: c.span as 4 | 6 | 8 | 12, height: c.height }));

  /** Saves a change; the answer's cards may carry new ids, so results move over by position. */
  const save = async (patch: Parameters<typeof api.updateBoard>[1], opts: { rerun?: boolean; order?: Card[] } = {}) => {
    if (!board) return;
    setSaving('Saving…');
    try {
      const next = await api.updateBoard(board.id, patch);
      setBoard(next);
      if (opts.rerun) void runAll(next, null);
      else if (opts.order) {
        const nextSorted = [...next.cards].sort((a, b) => a.position - b.position);
        setRuns((r) => Object.fromEntries(nextSorted.map((c, i) => [c.id, r[opts.order![i]?.id] ?? { state: 'loading' }])));
      }
      setSaving('Saved');
    } catch (e) {
      setSaving(null);
      setError((e as Error).message);
    }
  };

  const move = (from: number, to: number, fromKeyboard = false) => {
    if (!board || to < 0 || to >= cards.length || from === to) return;
    focusAfterMove.current = fromKeyboard ? to : null;
    const order = [...cards];
    const [c] = order.splice(from, 1);
    order.splice(to, 0, c);
    // Shown at once; the API's answer replaces it.
    setBoard({ ...board, cards: order.map((x, i) => ({ ...x, position: i })) });
    setAnnounce(`${cardTitle(c)} moved to position ${to + 1} of ${cards.length}`);
    void save({ cards: writes(order) }, { order });
  };

  const setRange = (r: DateRangeSpec | null) => {
    if (!board) return;
    if (canWrite) void save({ date_range: r }, { rerun: true });
    else {
      const ov = { date_range: r };
      setOverride(ov);
      void runAll(board, ov);
    }
  };

  if (error && !board) return <section class="page"><h1>Board</h1><p class="error" role="alert">{error}</p></section>;
  if (!board) return <section class="page"><p role="status" class="loading">Loading board…</p></section>;
  const range = override ? override.date_range : board.date_range;

  return (
    <section class="page">
      <div class="page-head">
        <h1>{board.name}</h1>
        <div class="toolbar">
          <RangePicker id="board-range" value={range} onChange={setRange} allowNone="Each report's own range" />
          <button type="button" onClick={() => runAll(board, override)}>Refresh</button>
          <span id="board-save-status" class="muted" role="status">{saving ?? ''}</span>
        </div>
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      <FiltersEditor id="board-filters" legend="Board filters" value={board.filters as PropertyFilter[]} keys={[]} disabled={!canWrite}
        onChange={(f) => void save({ filters: f }, { rerun: true })} />
      <p class="sr-only" aria-live="polite">{announce}</p>
      {cards.length === 0 ? (
        <p class="muted">This board has no card yet. Build an insight and choose "Add to board".</p>
      ) : (
        <div class="grid" role="list" aria-label="Cards">
          {cards.map((c, i) => (
            <CardView key={c.id} card={c} index={i} count={cards.length} run={runs[c.id]} projectId={props.projectId} canWrite={canWrite} onMove={move} boardName={board.name} />
          ))}
        </div>
      )}
    </section>
  );
}

function CardView(props: { card: Card; index: number; count: number; run?: RunState; projectId: string; canWrite: boolean; boardName: string; onMove: (from: number, to: number, fromKeyboard?: boolean) => void }) {
  const { card, run } = props;
  const [table, setTable] = useState(false);
  const [dragOver, setDragOver] = useState(false);
  const title = cardTitle(card);
  const height = HEIGHT[card.height];

  const onKey = (e: KeyboardEvent) => {
    const move = (to: number) => props.onMove(props.index, to, true);
    const delta = e.key === 'ArrowLeft' || e.key === 'ArrowUp' ? -1 : e.key === 'ArrowRight' || e.key === 'ArrowDown' ? 1 : 0;
    if (e.key === 'Home') move(0);
    else if (e.key === 'End') move(props.count - 1);
    else if (delta) move(props.index + delta);
    else return;
    e.preventDefault();
  };

  return (
    <div role="listitem" class={`cell span-${card.span}`} data-card={card.id}
      draggable={props.canWrite}
      onDragStart={(e) => { e.dataTransfer?.setData('text/plain', String(props.index)); }}
      onDragOver={(e) => { if (props.canWrite) { e.preventDefault(); setDragOver(true); } }}
      onDragLeave={() => setDragOver(false)}
      onDrop={(e) => { e.preventDefault(); setDragOver(false); const from = Number(e.dataTransfer?.getData('text/plain')); if (Number.isInteger(from)) props.onMove(from, props.index); }}>
      <figure role="figure" aria-label={title} class={`card ${dragOver ? 'drop' : ''}`}>
        <figcaption class="card-head">
          <span class="card-title">{card.card_type === 'report' ? <Link href={`/projects/${props.projectId}/reports/${card.report_id}`}>{title}</Link> : title}</span>
          <span class="card-actions">
            {card.card_type === 'report' && (
              <>
                <button type="button" aria-expanded={table} aria-controls={`table-${card.id}`} onClick={() => setTable(!table)} disabled={run?.state !== 'ok'}>Table</button>
                <button type="button" aria-label={`CSV of ${title}`} disabled={run?.state !== 'ok'}
                  onClick={() => run?.state === 'ok' && download(`${props.boardName}-${title}.csv`.replace(/[^\w.-]+/g, '-'), toCsv(toTable(run.view)))}>CSV</button>
              </>
            )}
            {props.canWrite && (
              <button type="button" class="handle" aria-label={`Move ${title}`} aria-describedby="move-help" onKeyDown={onKey}>⠿</button>
            )}
          </span>
        </figcaption>
        <div class="card-body" style={{ minHeight: `${height}px` }}>
          {card.card_type === 'text' ? (
            // The first line is the card's title (cardTitle), shown in the caption; the body is the rest.
            <div class="text-card">{card.text.split('\n').slice(1).map((l) => <p>{l.replace(/^#+\s*/, '')}</p>)}</div>
          ) : !run || run.state === 'loading' ? (
            <p class="loading" role="status">Loading…</p>
          ) : run.state === 'error' ? (
            <div class="card-error" role="alert">{run.message}</div>
          ) : (
            <>
              <ResultChart view={run.view} title={title} height={height} seriesKind={seriesKindOf(card)} />
              {table && <div id={`table-${card.id}`}><ResultTable view={run.view} title={title} /></div>}
              {run.warnings.length > 0 && <p class="muted small">{run.warnings.join(' ')}</p>}
            </>
          )}
        </div>
      </figure>
      {props.index === 0 && <p id="move-help" class="sr-only">Use the arrow keys on the move button to reorder cards; Home and End move to the first or last place.</p>}
    </div>
  );
}
