import assert from 'node:assert/strict';
import { createClient } from '@clickhouse/client';
import { OLDEST_CLICKHOUSE, checkClickHouseVersion, clickHouseVersionProblem, parseClickHouseVersion, readClickHouseVersion } from '../../apps/server/src/ports/events/clickhouse-version.js';
import { ClickHouseEventStore } from '../../apps/server/src/ports/events/clickhouse.js';
import { requireServices } from '../support/backends.js';

/** The ClickHouse adapter refuses, at start, a server older than the oldest tested release (18.16). */

describe('ClickHouse version check', () => {
  it('parses the version strings servers and packages print', () => {
    assert.deepEqual(parseClickHouseVersion('18.16.1'), [18, 16, 1]);
    assert.deepEqual(parseClickHouseVersion('25.8.20.4'), [25, 8, 20, 4]);
    assert.deepEqual(parseClickHouseVersion('v24.3.5.46-lts'), [24, 3, 5, 46]);
    assert.deepEqual(parseClickHouseVersion('19.1'), [19, 1]);
    assert.equal(parseClickHouseVersion('unknown'), undefined);
  });

  it('accepts 18.16 and every later release, refuses older ones with a message naming both versions', () => {
    assert.deepEqual(OLDEST_CLICKHOUSE, [18, 16]);
    for (const ok of ['18.16.1', '18.16.0', '18.17.2', '19.1.6', '20.3.1.1', '23.8.16.40', '25.8.20.4', '26.3.1.896']) assert.equal(clickHouseVersionProblem(ok), undefined, ok);
    for (const old of ['18.14.19', '18.1.0', '1.1.54394', '17.12.1']) {
      const p = clickHouseVersionProblem(old);
      assert.ok(p, old);
      assert.match(p, new RegExp(`ClickHouse ${old.replace(/\./g, '\\.')} is older than 18\\.16`));
      assert.match(p, /upgrade/);
    }
    assert.match(clickHouseVersionProblem('') ?? '', /not a version number/);
  });

  it('checkClickHouseVersion throws the message for an old server, returns the version otherwise', async () => {
    await assert.rejects(checkClickHouseVersion(async () => '18.14.19'), /ClickHouse 18\.14\.19 is older than 18\.16/);
    assert.equal(await checkClickHouseVersion(async () => '18.16.1'), '18.16.1');
  });

  describe('against the real server', () => {
    before(function () {
      requireServices(this, 'TEST_CLICKHOUSE_URL');
    });

    it('the test server (Debian 18.16) passes, and migrate(), which checks it first, runs on a database not created yet', async function () {
      this.timeout(60_000);
      const url = process.env.TEST_CLICKHOUSE_URL!;
      const version = await readClickHouseVersion(createClient({ url }));
      assert.equal(clickHouseVersionProblem(version), undefined, version);
      // A store on a database that does not exist yet: the check runs on the default database, then migrate creates it.
      const database = `tally_version_${process.pid}_${Date.now()}`;
      const store = new ClickHouseEventStore({ url, database });
      try {
        await store.migrate();
        await store.ping();
      } finally {
        const admin = createClient({ url });
        await admin.command({ query: `DROP DATABASE IF EXISTS ${database}` });
        await admin.close();
        await store.close();
      }
    });
  });
});
