/** Light, dark, or the system's choice (prefers-color-scheme); the choice is kept per browser. */
export type ThemeChoice = 'system' | 'light' | 'dark';
const KEY = 'tally.theme';

export function themeChoice(): ThemeChoice {
  const v = localStorage.getItem(KEY);
  return v === 'light' || v === 'dark' ? v : 'system';
}

export function effectiveTheme(choice = themeChoice()): 'light' | 'dark' {
  if (choice !== 'system') return choice;
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

export function applyTheme(choice: ThemeChoice) {
  if (choice === 'system') localStorage.removeItem(KEY);
  else localStorage.setItem(KEY, choice);
  document.documentElement.dataset.theme = effectiveTheme(choice);
  window.dispatchEvent(new Event('tally-theme'));
}

/** How many series colours the stylesheet defines (--series-1 …); past them, series also get a dash pattern. */
export const SERIES_COLOURS = 12;
const DASHES: Array<number[] | undefined> = [undefined, [8, 3], [2, 3], [8, 3, 2, 3]];
/** The k-th series' colour variable and dash pattern: 12 colours, then the same colours dashed. */
export const seriesStyle = (k: number) => ({ color: `var(--series-${(k % SERIES_COLOURS) + 1})`, dash: DASHES[Math.floor(k / SERIES_COLOURS) % DASHES.length] });

type Palette = { series: string[]; text: string; grid: string; accent: string };
let palette_: Palette | null = null;
// Every theme change (a choice, the system's scheme) goes through applyTheme's event; this listener is added before any chart's.
window.addEventListener('tally-theme', () => (palette_ = null));

/**
 * Chart colours from the stylesheet, so canvases follow the theme too. Read once per theme: each
 * read of the computed style after a chart was added restyles the page, once per chart on a board.
 */
export function palette(): Palette {
  if (palette_) return palette_;
  const css = getComputedStyle(document.documentElement);
  const v = (n: string) => css.getPropertyValue(n).trim();
  return (palette_ = {
    series: Array.from({ length: SERIES_COLOURS }, (_, i) => v(`--series-${i + 1}`)),
    text: v('--muted'),
    grid: v('--grid'),
    accent: v('--accent'),
  });
}
