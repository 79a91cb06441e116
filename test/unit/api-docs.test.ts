import assert from 'node:assert/strict';
import fs from 'node:fs';
import { API_DOC, currentApi, renderApiReference } from '../../scripts/api-docs.js';

/**
 * docs/api.md is generated from the routes' declarations. A route added, removed or changed
 * without regenerating it fails here, naming the command that brings it up to date.
 */
describe('docs/api.md, the HTTP API reference', () => {
  let api: Awaited<ReturnType<typeof currentApi>>;
  before(async function () {
    this.timeout(120_000);
    api = await currentApi();
  });

  it('is what the routes declare now', () => {
    const expected = renderApiReference(api.routes, api.openapi);
    const actual = fs.existsSync(API_DOC) ? fs.readFileSync(API_DOC, 'utf8') : '';
    if (actual === expected) return;
    const want = expected.split('\n');
    const have = actual.split('\n');
    let i = 0;
    while (i < want.length && want[i] === have[i]) i++;
    assert.fail(
      `docs/api.md is out of date with the routes: run \`npm run docs:api\` and commit the file.\n` +
      `First difference at line ${i + 1}:\n  in the file:  ${have[i] ?? '(end of file)'}\n  from routes:  ${want[i] ?? '(end of file)'}`,
    );
  });

  it('lists every declared route once, with its credential kind', () => {
    const { routes, openapi } = api;
    const text = renderApiReference(routes, openapi);
    for (const r of routes) {
      const heading = `### \`${r.method.toUpperCase()} ${r.path}\``;
      assert.equal(text.split(heading + '\n').length - 1, 1, `${heading} once`);
      const after = text.slice(text.indexOf(heading + '\n'));
      assert.match(after.slice(0, after.indexOf('- auth:') + 40), new RegExp(`- auth: \`${r.auth}\``), `${heading}: auth ${r.auth}`);
    }
  });
});
