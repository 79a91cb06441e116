import assert from 'node:assert/strict';
import { resultToCsv, toCsv } from '../../apps/server/src/reports/csv.js';

describe('report CSV export', () => {
  it('quotes separators, quotes and line breaks; defuses spreadsheet formulas in text cells', () => {
    assert.equal(toCsv([['a,b', 'say "hi"', 'two\nlines', '=1+1', '-x', '@me', 'plain'], [1, -2, null, true]]),
      '"a,b","say ""hi""","two\nlines",\'=1+1,\'-x,\'@me,plain\r\n1,-2,,true\r\n');
  });

  it('v0 and IR trend shapes as a series × bucket grid', () => {
    const v0 = { buckets: ['2024-01-01', '2024-01-02'], series: [{ name: 'view', data: [{ bucket: '2024-01-01', value: 3 }, { bucket: '2024-01-02', value: 0 }] }] };
    assert.equal(resultToCsv(v0), 'series,2024-01-01,2024-01-02\r\nview,3,0\r\n');
    const ir = {
      kind: 'trend', buckets: ['2024-01-01', '2024-01-02'],
      series: [
        { metricId: 'A', name: 'view', segment: 'fr', range: 'primary', data: [1, 2] },
        { metricId: 'A', name: 'view', segment: null, range: 'comparison', data: [4, 5] },
      ],
    };
    assert.equal(resultToCsv(ir), 'series,2024-01-01,2024-01-02\r\nview (fr),1,2\r\nview ((none)) [comparison],4,5\r\n');
  });

  it('any other shape: a row per object, the union of keys, nested values as JSON', () => {
    assert.equal(resultToCsv([{ a: 1, b: { c: 2 } }, { a: 3, d: 'x' }]), 'a,b,d\r\n1,"{""c"":2}",\r\n3,,x\r\n');
  });
});
