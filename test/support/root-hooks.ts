/**
 * Mocha root hooks of every tier (the root .mocharc.json `require`s this file): what the run holds
 * across files is released once the last file is done, the shared test services of
 * test/support/service.ts among them (their servers closed, their databases dropped). Kept free of
 * imports, so the unit tier loads nothing of the server through it.
 */
const atEnd: Array<() => Promise<void>> = [];
let loaded = false;

/** Runs `release` after the run's last test; fails when these hooks are not loaded (nothing would release it). */
export function releaseAtEnd(release: () => Promise<void>): void {
  if (!loaded) throw new Error('test/support/root-hooks.ts is not loaded: run mocha with the repo\'s .mocharc.json (its `require`)');
  atEnd.push(release);
}

export const mochaHooks = {
  beforeAll() {
    loaded = true;
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(120_000); // a service's close waits for its workers, then drops its databases
    const errors: unknown[] = [];
    for (const release of atEnd.splice(0).reverse()) await release().catch((err) => errors.push(err));
    if (errors.length > 0) throw errors[0];
  },
};
