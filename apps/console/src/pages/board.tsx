import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, joinError, runBoardStream, type BoardRunBody, type BoardStreamLine } from '../api.js';
import { session } from '../session.js';
import { useShell } from '../context.js';
import { Link, navigate } from '../router.js';
import { RangePicker } from '../components/range-picker.js';
import { FiltersEditor } from '../components/filters-editor.js';
import { ResultChart, ResultTable } from '../components/result.js';
import { NumberCard } from '../components/number-card.js';
import { download, toCsv, toTable, toView, type View } from '../components/view.js';
import type { SeriesKind } from '../components/series-chart.js';
import type { Board, BoardCardWrite, Card, CardRun, DateRangeSpec, LexiconProperty, PropertyFilter } from '../types.js';
import { CardMenu } from './board-menu.js';
import './board.css';

type RunState = { state: 'loading' } | { state: 'ok'; view: View; warnings: string[]; computedAt: number } | { state: 'error'; message: string };
/** A board's range and filters as someone is looking at it, not saved yet (null: as saved). */
type Look = { date_range: DateRangeSpec | null; filters: PropertyFilter[] };
const HEIGHT = { short: 150, medium: 250, tall: 400 } as const;
const SPANS: Array<[number, string]> = [[4, 'Third'], [6, 'Half'], [8, 'Two thirds'], [12, 'Full width']];
const HEIGHTS: Array<[Card['height'], string]> = [['short', 'Short'], ['medium', 'Medium'], ['tall', 'Tall']];

/** The title a card is known by (its figure's accessible name): the report's name, or a text card's first line. */
export const cardTitle = (c: Card) => (c.card_type === 'report' ? c.report.name : c.text.split('\n')[0].replace(/^#+\s*/, '').slice(0, 120) || 'Text');

function runState(run: CardRun): RunState {
  if (run.status === 'error') return { state: 'error', message: joinError(run.error.error, run.error.message) };
  try {
    return { state: 'ok', view: toView(run.type, run.result), warnings: run.warnings, computedAt: run.computed_at ?? run.cached_at ?? Date.now() };
  } catch (e) {
    return { state: 'error', message: (e as Error).message };
  }
}

/** A saved IR report's chart choice, else a line. */
function seriesKindOf(c: Card): SeriesKind {
  const chart = c.card_type === 'report' ? (c.report.query as any)?.analysis?.chart : undefined;
  return chart === 'bar' || chart === 'number' ? 'bar' : chart === 'area' ? 'stacked' : 'line';
}

/** An IR report's own way to show when it is a number or a table (its `analysis.chart`), else null. */
function reportDisplay(c: Card): 'number' | 'table' | null {
  const chart = c.card_type === 'report' ? (c.report.query as any)?.analysis?.chart : undefined;
  return chart === 'number' || chart === 'table' ? chart : null;
}

/**
 * How a card shows its report: a number or a table set on the card wins; a card left at `chart`
 * (the default) shows the report as the report itself does, its number or table included
 * (docs/console.md, "Number and table cards").
 */
export function shownAs(c: Card): Card['display'] {
  return c.display !== 'chart' ? c.display : reportDisplay(c) ?? 'chart';
}

/** A report card's other ways to show (its menu's Show as items); retention and flows have no single number. */
function displayItems(c: Card): Array<[Card['display'], string]> {
  if (c.card_type !== 'report') return [];
  const own = reportDisplay(c);
  const all: Array<[Card['display'], string]> = [['number', 'Show as number'], ['table', 'Show as table'], ['chart', own ? `Show as the report does (${own})` : 'Show as chart']];
  const current = shownAs(c);
  return all.filter(([d]) => (d === 'chart' ? own ?? 'chart' : d) !== current && !(d === 'number' && (c.report.type === 'retention' || c.report.type === 'flows')));
}

/** A streamed board run whose lines are kept, so a page that starts following later replays them first. */
class RunFeed {
  private lines: BoardStreamLine[] = [];
  private listener: ((line: BoardStreamLine) => void) | null = null;
  readonly abort = new AbortController();
  readonly done: Promise<void>;
  readonly startedAt = Date.now();
  failed = false;
  constructor(readonly boardId: string, body: BoardRunBody, quiet = false) {
    this.done = runBoardStream(boardId, body, (line) => {
      this.lines.push(line);
      this.listener?.(line);
    }, { signal: this.abort.signal, quiet });
    this.done.catch(() => (this.failed = true));
  }
  follow(onLine: (line: BoardStreamLine) => void): Promise<void> {
    for (const line of this.lines) onLine(line);
    this.listener = onLine;
    return this.done;
  }
}

/**
 * Opening a board's address (a visit, a reload) starts its run as the console's script loads,
 * beside the account and projects reads rather than after them; the page follows it when it
 * mounts. The stream's first line is the board itself, so the page lays out from it.
 */
let early: RunFeed | null = (() => {
  const m = /^\/projects\/[^/]+\/boards\/(\d+)\/?$/.exec(location.pathname);
  return m && session() ? new RunFeed(m[1], {}, true) : null;
})();
/** The early run, if it is this board's, has not failed (a session refused meanwhile: signing in again starts afresh) and is recent. */
const takeEarly = (boardId: string) => {
  const feed = early;
  early = null;
  const usable = !!feed && feed.boardId === boardId && !feed.failed && Date.now() - feed.startedAt < 30_000;
  if (feed && !usable) feed.abort.abort();
  return usable ? feed : null;
};

/** `updated 3 min ago` from when an answer was computed. */
export function updatedAgo(now: number, at: number): string {
  const s = Math.max(0, Math.round((now - at) / 1000));
  if (s < 60) return 'updated just now';
  if (s < 3600) return `updated ${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `updated ${Math.floor(s / 3600)} h ago`;
  return `updated ${new Date(at).toLocaleDateString()}`;
}

const lookBody = (lk: Look | null): BoardRunBody => (lk ? { date_range: lk.date_range, filters: lk.filters, replace_filters: true } : {});
/** A card removed since the board loaded (its report deleted): say so next to the API's words. */
const failedMessage = (e: unknown) =>
  e instanceof ApiError && e.status === 404 ? `${e.message}: its report may have been deleted; reload the board.` : e instanceof Error ? e.message : String(e);

const sorted = (b: Board) => [...b.cards].sort((a, c) => a.position - c.position);
const sameLook = (a: Look, b: Look) => JSON.stringify(a) === JSON.stringify(b);
const lookOf = (b: Board): Look => ({ date_range: b.date_range, filters: b.filters as PropertyFilter[] });

const writes = (list: Card[]): BoardCardWrite[] =>
  list.map((c, i) => (c.card_type === 'report'
    ? { cardType: 'report', reportId: c.report_id, position: i, span: c.span as 4 | 6 | 8 | 12, height: c.height, display: c.display }
    : { cardType: 'text', text: c.text, position: i, span: c.span as 4 | 6 | 8 | 12, height: c.height, display: 'chart' }));

/**
 * A board: its cards on a 12-column grid (each card's span and height from the API), the board's
 * range and filters over every card. The board and every card's answer come in one streamed
 * request (POST /api/boards/{id}/run as NDJSON): the page lays out from its first line and each
 * card draws the moment its answer arrives, so one slow or failing card never holds the others.
 * Each card says when its answer was computed; Refresh (the board's or a card's) recomputes. A range or filter change shows at once for the person
 * making it only; `Save to board` keeps it for everyone. Members edit the board in place (text
 * cards, remove, resize, reorder, rename, duplicate, delete); every write carries the version it
 * was made on, so a change someone saved meanwhile is never overwritten (the API answers 409).
 */
export function BoardPage(props: { projectId: string; boardId: string }) {
  const { canWrite } = useShell();
  const [board, setBoardState] = useState<Board | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [conflict, setConflict] = useState(false);
  const [runs, setRuns] = useState<Record<number, RunState>>({});
  const [look, setLook] = useState<Look | null>(null);
  const [announce, setAnnounce] = useState('');
  const [saving, setSaving] = useState<string | null>(null);
  const [properties, setProperties] = useState<LexiconProperty[]>([]);
  const [editing, setEditing] = useState<null | 'rename' | 'text' | 'delete'>(null);
  /** The card whose size controls are open, by position (a save gives cards new ids), and the control to focus again. */
  const [resizing, setResizing] = useState<{ index: number; focus: 'width' | 'height' } | null>(null);
  const generation = useRef(0);
  /** The board run the page follows now: stopped when another starts or the page goes (the API then skips what is left). */
  const feedRef = useRef<RunFeed | null>(null);
  const [refreshNote, setRefreshNote] = useState('');
  const [now, setNow] = useState(() => Date.now());
  const boardRef = useRef<Board | null>(null);
  /** The version the next write is made on: the last one this page saved or loaded. */
  const version = useRef(0);
  /** Writes go one after another, each on the version the previous one answered. */
  const queue = useRef<Promise<unknown>>(Promise.resolve());
  const pending = useRef(0);
  /** After a keyboard move, the handle to focus once the cards are drawn again (ids may change on save). */
  const focusAfterMove = useRef<number | null>(null);
  const setBoard = (b: Board) => {
    boardRef.current = b;
    setBoardState(b);
  };
  // A layout effect: the focus moves in the same frame the cards are drawn again, so it never falls to the page in between.
  useLayoutEffect(() => {
    if (resizing) document.querySelector<HTMLElement>(`.grid .cell:nth-child(${resizing.index + 1}) .resize select[name="${resizing.focus}"]`)?.focus();
    if (focusAfterMove.current === null) return;
    const handles = document.querySelectorAll<HTMLElement>('.grid .handle');
    handles[focusAfterMove.current]?.focus();
  }, [board, resizing]);

  const cards = board ? sorted(board) : [];

  /**
   * Follows one board run: the board line lays the page out (unless it is already, `laidOut`),
   * each card draws the moment its answer arrives, and a card the run never answered (its report
   * deleted since the board loaded) or a run that failed says so in its card. Cards already
   * answered when the board line comes (from the cache) draw in the same frame as the grid:
   * painting the grid a frame earlier cost the whole board that frame, about 100 ms.
   */
  const follow = async (feed: RunFeed, gen: number, laidOut: Board | null) => {
    feedRef.current?.abort.abort();
    feedRef.current = feed;
    const put = (id: number, s: RunState) => gen === generation.current && setRuns((r) => ({ ...r, [id]: s }));
    let shown = laidOut;
    const answered = new Set<number>();
    const draw = (card: CardRun) => {
      answered.add(card.card_id);
      put(card.card_id, runState(card));
    };
    const unanswered = (message: string) => {
      for (const c of shown?.cards ?? []) if (c.card_type === 'report' && !answered.has(c.id)) put(c.id, { state: 'error', message });
    };
    try {
      await feed.follow((line) => {
        if (gen !== generation.current) return;
        if (line.kind === 'board') {
          if (line.refresh) setRefreshNote(line.refresh.refused ? `Shown from the cache: refreshing again is allowed at ${new Date(line.refresh.next_allowed_at).toLocaleTimeString()}.` : '');
          if (shown) return;
          const b = line.board;
          shown = b;
          version.current = b.version;
          setBoard(b);
          document.title = `${b.name} · Tally`;
          setRuns(Object.fromEntries(b.cards.filter((c) => c.card_type === 'report').map((c) => [c.id, { state: 'loading' } as RunState])));
        } else if (line.kind === 'card') {
          draw(line.card);
        } else if (line.kind === 'error') {
          unanswered(joinError(line.error.error, line.error.message));
        }
      });
      unanswered('card not found: its report may have been deleted; reload the board.');
    } catch (e) {
      if (gen !== generation.current || feed.abort.signal.aborted) return;
      if (!shown) setError(e instanceof ApiError && e.status === 404 ? 'This board does not exist, or is in another organisation.' : (e as Error).message);
      else unanswered(failedMessage(e));
    }
  };

  /** Runs every card again as one streamed request: `refresh` recomputes them (bypassing the results cache). */
  const runAll = (b: Board, lk: Look | null, refresh = false) => {
    const gen = ++generation.current;
    setRuns(Object.fromEntries(b.cards.filter((c) => c.card_type === 'report').map((c) => [c.id, { state: 'loading' } as RunState])));
    return follow(new RunFeed(String(b.id), { ...lookBody(lk), ...(refresh ? { refresh: true } : {}) }), gen, b);
  };

  /** One card's Refresh: that card recomputed on its own. */
  const refreshCard = async (c: Card) => {
    const b = boardRef.current;
    if (!b) return;
    const gen = generation.current;
    const put = (s: RunState) => gen === generation.current && setRuns((r) => ({ ...r, [c.id]: s }));
    put({ state: 'loading' });
    try {
      const out = await api.runBoard(b.id, { ...lookBody(look), refresh: true, card_id: c.id });
      const run = out.cards.find((x) => x.card_id === c.id);
      if (out.refresh && gen === generation.current) setRefreshNote(out.refresh.refused ? `Shown from the cache: refreshing ${cardTitle(c)} again is allowed at ${new Date(out.refresh.next_allowed_at).toLocaleTimeString()}.` : '');
      put(run ? runState(run) : { state: 'error', message: 'The board answered without this card.' });
    } catch (e) {
      put({ state: 'error', message: failedMessage(e) });
    }
  };

  /** The board and its cards' answers in one streamed request (the one started as the console loaded, when there is one). */
  const load = () => {
    setError(null);
    setConflict(false);
    setLook(null);
    setRefreshNote('');
    return follow(takeEarly(props.boardId) ?? new RunFeed(props.boardId, {}), ++generation.current, null);
  };
  // A layout effect: an early run's board line already in lays the board out before the first paint, not a frame later.
  useLayoutEffect(() => {
    setBoardState(null);
    boardRef.current = null;
    void load();
    propertiesAsked.current = false;
    return () => feedRef.current?.abort.abort();
  }, [props.boardId]);
  /**
   * The lexicon's list (the properties data has, with their lexicon entries) for the filter box,
   * which leaves out the hidden ones as the Insights pickers do. Asked when the filters first take
   * the focus, not as the board opens: listing the properties scans the project's events, and on
   * DuckDB (one statement at a time) it ran before or between the cards' own queries (2.1 s at 2M events).
   */
  const propertiesAsked = useRef(false);
  const askProperties = () => {
    if (propertiesAsked.current) return;
    propertiesAsked.current = true;
    api.lexiconProperties(props.projectId).then(setProperties, () => (propertiesAsked.current = false));
  };
  useEffect(() => {
    const tick = setInterval(() => setNow(Date.now()), 30_000);
    return () => clearInterval(tick);
  }, []);

  /**
   * Saves a change on the version last seen. The answer's cards carry new ids: results move over
   * by position. Answers false (and shows why) when the API refused; the caller keeps its edits.
   */
  const save = (patch: Parameters<typeof api.updateBoard>[1], opts: { rerun?: boolean } = {}): Promise<boolean> => {
    pending.current++;
    setSaving('Saving…');
    const job = queue.current.then(async () => {
      const b = boardRef.current;
      if (!b) return false;
      try {
        const next = await api.updateBoard(b.id, { ...patch, version: version.current });
        version.current = next.version;
        pending.current--;
        // Later writes are queued on top of what is shown: only the last answer replaces it.
        if (pending.current === 0) {
          const shown = boardRef.current ? sorted(boardRef.current) : [];
          const nextSorted = sorted(next);
          if (opts.rerun) void runAll(next, null);
          else setRuns((r) => Object.fromEntries(nextSorted.map((c, i) => [c.id, r[shown[i]?.id] ?? { state: 'loading' }])));
          setBoard(next);
          document.title = `${next.name} · Tally`;
          setSaving('Saved');
        }
        setError(null);
        return true;
      } catch (e) {
        pending.current--;
        setSaving(null);
        if (e instanceof ApiError && e.status === 409) {
          setConflict(true);
          setError(`Not saved: someone else changed this board since you opened it. Your change is still shown here; reload the board to see theirs, then make yours again. (${e.message})`);
        } else setError(`Not saved: ${(e as Error).message}`);
        return false;
      }
    });
    queue.current = job;
    return job;
  };

  /** Shows a card change at once; the API's answer replaces it. */
  const changeCards = (list: Card[], message?: string) => {
    const b = boardRef.current;
    if (!b) return Promise.resolve(false);
    setBoard({ ...b, cards: list.map((x, i) => ({ ...x, position: i })) });
    if (message) setAnnounce(message);
    return save({ cards: writes(list) });
  };

  const move = (from: number, to: number, fromKeyboard = false) => {
    if (!board || to < 0 || to >= cards.length || from === to) return;
    focusAfterMove.current = fromKeyboard ? to : null;
    setResizing(null);
    const order = [...cards];
    const [c] = order.splice(from, 1);
    order.splice(to, 0, c);
    void changeCards(order, `${cardTitle(c)} moved to position ${to + 1} of ${cards.length}`);
  };

  const removeCard = (index: number) => {
    const c = cards[index];
    focusAfterMove.current = null;
    setResizing(null);
    void changeCards(cards.filter((_, i) => i !== index), `${cardTitle(c)} removed from the board`);
  };

  const resizeCard = (index: number, size: { span?: number; height?: Card['height'] }) =>
    void changeCards(cards.map((c, i) => (i === index ? { ...c, ...size } : c)) as Card[], `${cardTitle(cards[index])} resized`);

  const showAs = (index: number, display: Card['display']) =>
    void changeCards(cards.map((c, i) => (i === index ? { ...c, display } : c)) as Card[], `${cardTitle(cards[index])} shown as a ${display}`);

  const addText = (text: string) => {
    const b = boardRef.current!;
    const card = { id: -Date.now(), board_id: b.id, card_type: 'text', report_id: null, text, position: cards.length, span: 6, height: 'short', display: 'chart' } as Card;
    return changeCards([...cards, card], `${cardTitle(card)} added`);
  };

  /** The range or filters as this person now looks at the board: shown at once, saved only by Save to board. */
  const changeLook = (next: Look) => {
    if (!board) return;
    const lk = sameLook(next, lookOf(board)) ? null : next;
    setLook(lk);
    setSaving(null);
    void runAll(board, lk);
  };
  const saveLook = async () => {
    if (!look) return;
    if (await save({ date_range: look.date_range, filters: look.filters })) setLook(null);
  };

  const duplicate = async () => {
    if (!board) return;
    try {
      const copy = await api.createBoardWith(props.projectId, { name: `${board.name} (copy)`.slice(0, 200), date_range: board.date_range, filters: board.filters as PropertyFilter[], cards: writes(cards) });
      navigate(`/projects/${props.projectId}/boards/${copy.id}`);
    } catch (e) {
      setError(`Not duplicated: ${(e as Error).message}`);
    }
  };

  const deleteBoard = async () => {
    if (!board) return;
    try {
      await api.deleteBoard(board.id);
      navigate(`/projects/${props.projectId}/boards`);
    } catch (e) {
      setError(`Not deleted: ${(e as Error).message}`);
    }
  };

  if (error && !board) return <section class="page"><h1>Board</h1><p class="error" role="alert">{error}</p></section>;
  if (!board) return <section class="page"><p role="status" class="loading">Loading board…</p></section>;
  const shown = look ?? lookOf(board);
  const keys = properties.filter((p) => !p.hidden).map((p) => p.key);
  const values = (key: string) => properties.find((p) => p.key === key)?.sampleValues ?? [];

  return (
    <section class="page">
      <div class="page-head">
        <h1>{board.name}</h1>
        <div class="toolbar">
          <RangePicker id="board-range" value={shown.date_range} onChange={(r) => changeLook({ ...shown, date_range: r })} allowNone="Each report's own range" />
          <button type="button" onClick={() => { setNow(Date.now()); void runAll(board, look, true); }}>Refresh</button>
          <span id="board-save-status" class="muted" role="status">{saving ?? ''}</span>
          <span id="board-refresh-status" class="muted small" role="status">{refreshNote}</span>
        </div>
      </div>
      {canWrite && (
        <div class="toolbar board-edit" role="group" aria-label="Edit board">
          <button type="button" aria-expanded={editing === 'text'} onClick={() => setEditing(editing === 'text' ? null : 'text')}>Add text</button>
          <button type="button" aria-expanded={editing === 'rename'} onClick={() => setEditing(editing === 'rename' ? null : 'rename')}>Rename board</button>
          <button type="button" onClick={duplicate}>Duplicate board</button>
          <button type="button" aria-expanded={editing === 'delete'} onClick={() => setEditing(editing === 'delete' ? null : 'delete')}>Delete board</button>
        </div>
      )}
      {editing === 'rename' && <RenameForm name={board.name} onSave={async (name) => { if (await save({ name })) setEditing(null); }} onCancel={() => setEditing(null)} />}
      {editing === 'text' && <TextCardForm onSave={async (text) => { if (await addText(text)) setEditing(null); }} onCancel={() => setEditing(null)} />}
      {editing === 'delete' && (
        <div class="board-form" role="group" aria-labelledby="delete-board-q">
          <p id="delete-board-q">Delete the board “{board.name}” for everyone? Its reports stay in Reports.</p>
          <div class="row">
            <button type="button" class="danger" onClick={deleteBoard}>Delete this board</button>
            <button type="button" onClick={() => setEditing(null)}>Cancel</button>
          </div>
        </div>
      )}
      {error && (
        <div class="error board-error" role="alert">
          <span>{error}</span>
          {conflict && <button type="button" onClick={() => void load()}>Reload board</button>}
        </div>
      )}
      <div onFocusIn={askProperties}>
        <FiltersEditor id="board-filters" legend="Board filters" value={shown.filters} keys={keys} values={values}
          onChange={(f) => changeLook({ ...shown, filters: f })} />
      </div>
      {(look || canWrite) && (
        <div class={`look ${look ? 'dirty' : ''}`}>
          <p class="muted small" role="status">
            {look ? (canWrite ? 'This range and these filters show only for you until you save them to the board.' : 'This range and these filters show only for you: a member can save them to the board.') : ''}
          </p>
          {canWrite && <button type="button" class={look ? 'primary' : ''} disabled={!look} onClick={saveLook}>Save to board</button>}
          {look && <button type="button" onClick={() => changeLook(lookOf(board))}>Discard changes</button>}
        </div>
      )}
      <p class="sr-only" aria-live="polite">{announce}</p>
      {cards.length === 0 ? (
        <p class="muted">This board has no card yet. Build an insight and choose "Add to board", or add a text card.</p>
      ) : (
        <div class="grid" role="list" aria-label="Cards">
          {cards.map((c, i) => (
            <CardView key={c.id} card={c} index={i} count={cards.length} run={runs[c.id]} projectId={props.projectId} canWrite={canWrite} onMove={move} boardName={board.name}
              onRemove={() => removeCard(i)} onResize={(size) => resizeCard(i, size)} onShowAs={(d) => showAs(i, d)}
              onRefresh={() => void refreshCard(c)} now={now}
              resizing={resizing?.index === i} onResizing={(focus) => setResizing(focus ? { index: i, focus } : null)} />
          ))}
        </div>
      )}
    </section>
  );
}

/** Renaming keeps what was typed when the save fails (the error shows above). */
function RenameForm(props: { name: string; onSave: (name: string) => void; onCancel: () => void }) {
  const [name, setName] = useState(props.name);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.select(), []);
  return (
    <form class="board-form inline-form" onSubmit={(e) => { e.preventDefault(); if (name.trim()) props.onSave(name.trim()); }}>
      <label for="board-name">Board name</label>
      <input id="board-name" ref={input} value={name} maxLength={200} required onInput={(e) => setName((e.target as HTMLInputElement).value)}
        onKeyDown={(e) => e.key === 'Escape' && props.onCancel()} />
      <button type="submit" class="primary">Save name</button>
      <button type="button" onClick={props.onCancel}>Cancel</button>
    </form>
  );
}

/** A text card: its first line is the card's title, the rest its body. Kept when the save fails. */
function TextCardForm(props: { onSave: (text: string) => void; onCancel: () => void }) {
  const [text, setText] = useState('');
  const area = useRef<HTMLTextAreaElement>(null);
  useEffect(() => area.current?.focus(), []);
  return (
    <form class="board-form" onSubmit={(e) => { e.preventDefault(); if (text.trim()) props.onSave(text.trim()); }}>
      <label for="text-card">Text card</label>
      <p id="text-card-help" class="muted small">The first line is the card's title.</p>
      <textarea id="text-card" ref={area} rows={4} maxLength={10_000} aria-describedby="text-card-help" value={text}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)} onKeyDown={(e) => e.key === 'Escape' && props.onCancel()} />
      <div class="row">
        <button type="submit" class="primary">Add card</button>
        <button type="button" onClick={props.onCancel}>Cancel</button>
      </div>
    </form>
  );
}

function CardView(props: {
  card: Card; index: number; count: number; run?: RunState; projectId: string; canWrite: boolean; boardName: string;
  onMove: (from: number, to: number, fromKeyboard?: boolean) => void; onRemove: () => void; onResize: (size: { span?: number; height?: Card['height'] }) => void;
  onShowAs: (display: Card['display']) => void;
  /** Recomputes this card (Refresh); `now` is the clock its "updated … ago" reads. */
  onRefresh: () => void; now: number;
  resizing: boolean; onResizing: (focus: 'width' | 'height' | null) => void;
}) {
  const { card, run } = props;
  const [table, setTable] = useState(false);
  const [dragOver, setDragOver] = useState(false);
  const title = cardTitle(card);
  const height = HEIGHT[card.height];
  const shown = shownAs(card);

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
                {shown === 'chart' && <button type="button" aria-expanded={table} aria-controls={`table-${card.id}`} onClick={() => setTable(!table)} disabled={run?.state !== 'ok'}>Table</button>}
                <button type="button" aria-label={`CSV of ${title}`} disabled={run?.state !== 'ok'}
                  onClick={() => run?.state === 'ok' && download(`${props.boardName}-${title}.csv`.replace(/[^\w.-]+/g, '-'), toCsv(toTable(run.view)))}>CSV</button>
              </>
            )}
            {props.canWrite && (
              <>
                <CardMenu title={title} items={[
                  ...displayItems(card).map(([display, label]) => ({ label, run: () => props.onShowAs(display) })),
                  { label: 'Resize', run: () => props.onResizing('width') },
                  { label: 'Remove from board', run: props.onRemove },
                ]} />
                <button type="button" class="handle" aria-label={`Move ${title}`} aria-describedby="move-help" onKeyDown={onKey}>⠿</button>
              </>
            )}
          </span>
        </figcaption>
        {props.resizing && (
          <fieldset class="resize">
            <legend>Size of {title}</legend>
            <label for={`width-${card.id}`}>Width</label>
            <select id={`width-${card.id}`} name="width" value={card.span} onChange={(e) => { props.onResizing('width'); props.onResize({ span: Number((e.target as HTMLSelectElement).value) }); }}>
              {SPANS.map(([s, l]) => <option value={s}>{l}</option>)}
            </select>
            <label for={`height-${card.id}`}>Height</label>
            <select id={`height-${card.id}`} name="height" value={card.height} onChange={(e) => { props.onResizing('height'); props.onResize({ height: (e.target as HTMLSelectElement).value as Card['height'] }); }}>
              {HEIGHTS.map(([h, l]) => <option value={h}>{l}</option>)}
            </select>
            <button type="button" onClick={() => props.onResizing(null)}>Done</button>
          </fieldset>
        )}
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
              {shown === 'number' ? <NumberCard view={run.view} title={title} />
                : shown === 'table' ? <ResultTable view={run.view} title={title} />
                : <ResultChart view={run.view} title={title} height={height} seriesKind={seriesKindOf(card)} />}
              {table && shown === 'chart' && <div id={`table-${card.id}`}><ResultTable view={run.view} title={title} /></div>}
              {run.warnings.length > 0 && <p class="muted small">{run.warnings.join(' ')}</p>}
            </>
          )}
        </div>
        {card.card_type === 'report' && (
          <p class="card-foot muted small">
            {run?.state === 'ok' && <span title={new Date(run.computedAt).toLocaleString()}>{updatedAgo(props.now, run.computedAt)}</span>}
            <button type="button" class="link" aria-label={`Refresh ${title}`} disabled={!run || run.state === 'loading'} onClick={props.onRefresh}>Refresh</button>
          </p>
        )}
      </figure>
      {props.index === 0 && <p id="move-help" class="sr-only">Use the arrow keys on the move button to reorder cards; Home and End move to the first or last place.</p>}
    </div>
  );
}
