// Builds the web console into apps/console/dist, which the API serves at `/` (apps/server/src/console).
// Preact's JSX through esbuild (no plugin needed); no source maps shipped to keep the folder small.
import { defineConfig } from 'vite';
import { fileURLToPath } from 'node:url';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  logLevel: 'warn',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  resolve: { alias: { react: 'preact/compat', 'react-dom': 'preact/compat' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2020',
    sourcemap: false,
    reportCompressedSize: false,
    chunkSizeWarningLimit: 400,
  },
  server: { proxy: { '/api': 'http://127.0.0.1:8080', '/console/config.json': 'http://127.0.0.1:8080' } },
});
