import assert from 'node:assert/strict';
import { jsonByteLength } from '../../apps/server/src/ingestion/records.js';

/** `$payload_size` is counted without serialising: the count must equal the serialised UTF-8 length. */
describe('ingestion: jsonByteLength', () => {
  const rnd = (n: number) => Math.floor(Math.random() * n);
  const chars = ['a', '"', '\\', '\n', '\t', '\b', '\f', '\r', '\u0000', '\u001f', '\u007f', 'é', '\u07ff', '\u0800', '€', '\u2028', '\ud83d\ude00', '\ud800', '\udc00', '\uffff', '/'];
  const str = () => Array.from({ length: rnd(12) }, () => (rnd(3) ? chars[rnd(chars.length)] : String.fromCharCode(rnd(65536)))).join('');
  const nums = [0, -0, 1, 9, 10, 123456789, -5, 0.1, 1.5e-7, 1e21, 1e300, -1e-300, 2 ** 53, 2 ** 53 + 2, Number.MAX_VALUE, Number.MIN_VALUE, 1732428000000];
  const value = (depth: number): unknown => {
    switch (rnd(depth > 3 ? 5 : 7)) {
      case 0: return str();
      case 1: return rnd(2) ? nums[rnd(nums.length)] : Math.random() * 10 ** rnd(25) * (rnd(2) ? 1 : -1);
      case 2: return rnd(2) === 1;
      case 3: return null;
      case 4: return rnd(1000);
      case 5: return Array.from({ length: rnd(4) }, () => value(depth + 1));
      default: {
        const o: Record<string, unknown> = {};
        for (let i = rnd(5); i > 0; i--) o[rnd(4) ? str() : String(rnd(20))] = value(depth + 1);
        return o;
      }
    }
  };

  it('equals Buffer.byteLength(JSON.stringify(v)) on JSON.parse output', () => {
    for (let i = 0; i < 20_000; i++) {
      const text = JSON.stringify(value(0));
      const parsed = JSON.parse(text === undefined ? 'null' : text);
      assert.equal(jsonByteLength(parsed), Buffer.byteLength(JSON.stringify(parsed)), JSON.stringify(parsed));
    }
    const proto = JSON.parse('{"__proto__":{"x":"é"},"a":[1,"\\ud800"]}');
    assert.equal(jsonByteLength(proto), Buffer.byteLength(JSON.stringify(proto)));
    assert.equal(jsonByteLength({}), 2);
    assert.equal(jsonByteLength([]), 2);
  });

  it('answers -1 for values JSON.parse never makes', () => {
    assert.equal(jsonByteLength({ a: undefined }), -1);
    assert.equal(jsonByteLength([() => 1]), -1);
    assert.equal(jsonByteLength({ d: new Date(0) }), -1);
    assert.equal(jsonByteLength(10n), -1);
  });
});
