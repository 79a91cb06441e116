// The unit tier: the suite's shared settings (../../.mocharc.json), this folder's files.
module.exports = { ...require('../../.mocharc.json'), spec: ['test/unit/**/*.test.ts'] };
