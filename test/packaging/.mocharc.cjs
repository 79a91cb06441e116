// The packaging tier: the suite's shared settings (../../.mocharc.json), this folder's files, or only
// the test files named on the command line (`npx mocha --config test/packaging/.mocharc.cjs <file>`).
const named = process.argv.slice(2).some((a) => /\.test\.ts$/.test(a));
module.exports = { ...require('../../.mocharc.json'), ...(named ? {} : { spec: ['test/packaging/**/*.test.ts'] }) };
