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

/** Chart colours from the stylesheet, so canvases follow the theme too. */
export function palette(): { series: string[]; text: string; grid: string; accent: string } {
  const css = getComputedStyle(document.documentElement);
  const v = (n: string) => css.getPropertyValue(n).trim();
  return {
    series: [1, 2, 3, 4, 5, 6, 7, 8].map((i) => v(`--series-${i}`)),
    text: v('--muted'),
    grid: v('--grid'),
    accent: v('--accent'),
  };
}
