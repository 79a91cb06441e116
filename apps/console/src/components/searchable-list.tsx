import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';

/**
 * The list-with-search shape of the Reports, Lexicon and Annotations pages: a search box whose
 * words are kept in the address, then the list's states (loading, empty, nothing matches, the
 * table) with a status line for screen readers.
 */

/** Every word of the search in `text`, any case. */
export const matchesWords = (text: string, q: string) => {
  const lower = text.toLowerCase();
  return q.toLowerCase().split(/\s+/).filter(Boolean).every((w) => lower.includes(w));
};

/** An address parameter of the page as it is now ('' when absent). */
export const urlParam = (name: string) => new URLSearchParams(location.search).get(name) ?? '';

/** Keeps a view's choice (a search, a tab) in the address, so it can be shared and survives Back. */
export function setUrlParam(name: string, value: string) {
  const u = new URL(location.href);
  if (value) u.searchParams.set(name, value);
  else u.searchParams.delete(name);
  history.replaceState(history.state, '', u.pathname + u.search);
}

/** The search's words, read from and written to the address's `q`. */
export function useUrlSearch(): [string, (v: string) => void] {
  const [q, setQ] = useState(() => urlParam('q'));
  return [q, (v: string) => {
    setQ(v);
    setUrlParam('q', v);
  }];
}

/** A labelled search box in a `search` landmark. */
export function SearchBox(props: { id: string; label: string; placeholder: string; class: string; value: string; onSearch: (v: string) => void }) {
  return (
    <div class={props.class} role="search">
      <label for={props.id}>{props.label}</label>
      <input id={props.id} type="search" value={props.value} placeholder={props.placeholder} onInput={(e) => props.onSearch((e.target as HTMLInputElement).value)} />
    </div>
  );
}

/**
 * A searched list's body: the error, a status line ("3 of 12 reports", or the last action's
 * words), then loading, the empty list's words, the no-match words, or the table (`children`).
 */
export function SearchedList<T>(props: {
  items: T[] | null; shown: T[]; noun: string; error: string | null; status: string;
  loading: string; empty: ComponentChildren; noMatch: ComponentChildren; class: string; children: ComponentChildren;
}) {
  const { items } = props;
  return (
    <>
      {props.error && <p class="error" role="alert">{props.error}</p>}
      <p class="sr-only" role="status">{props.status || (items ? `${props.shown.length} of ${items.length} ${props.noun}` : '')}</p>
      {!items ? <p role="status" class="loading">{props.loading}</p> : items.length === 0 ? (
        <p class="muted">{props.empty}</p>
      ) : props.shown.length === 0 ? (
        <p class="muted">{props.noMatch}</p>
      ) : (
        <div class={`table-wrap ${props.class}`}>{props.children}</div>
      )}
    </>
  );
}
