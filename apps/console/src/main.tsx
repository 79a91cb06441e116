import { render } from 'preact';
import 'uplot/dist/uPlot.min.css';
import './styles.css';
import { applyTheme, themeChoice } from './theme.js';
import { App } from './app.js';

applyTheme(themeChoice());
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => applyTheme(themeChoice()));
render(<App />, document.getElementById('app')!);
