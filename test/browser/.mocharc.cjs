// The browser tier: the suite's shared settings (../../.mocharc.json), this folder's files.
module.exports = { ...require('../../.mocharc.json'), spec: ['test/browser/**/*.test.ts'] };
