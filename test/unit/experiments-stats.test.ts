import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  chiSquareSf, normalCdf, normalQuantile, normalSf, studentTCdf, studentTQuantile, studentTSf,
} from '../../apps/server/src/experiments/distributions.js';
import {
  NO_COMPARISON, adjustPValues, analyzeMetrics, bayesianComparison, relativeLift, sampleRatioMismatch,
  sequentialComparison, sequentialHalfwidth, sequentialPValue, summarizeVariant, welchComparison, welchDegreesOfFreedom,
  type MetricKind, type MetricTotals, type VariantTotals,
} from '../../apps/server/src/experiments/stats.js';

/**
 * The experiments' arithmetic against numbers computed elsewhere: scipy 1.17 for the distributions
 * and for the contract's formulas, statsmodels for Holm and Benjamini–Hochberg, and GrowthBook's
 * engine (gbstats, run from its source) for its own test cases and ours. Each table says the call
 * that produced it; the numbers are pasted as printed (repr of the float).
 */

/** |actual − expected| ≤ max(abs, rel·|expected|). */
function assertClose(actual: number | null | undefined, expected: number, tolerance: { rel?: number; abs?: number }, what: string): void {
  assert.equal(typeof actual, 'number', `${what}: expected a number, got ${actual}`);
  const bound = Math.max(tolerance.abs ?? 0, (tolerance.rel ?? 0) * Math.abs(expected));
  const error = Math.abs((actual as number) - expected);
  assert.ok(error <= bound, `${what}: got ${actual}, expected ${expected} (error ${error.toExponential(2)} > ${bound.toExponential(2)})`);
}

// Relative, so tails of 1e-12 are held to their own digits; the module measures about 1e-10 or better.
const DIST = { rel: 1e-8, abs: 1e-300 };

// scipy.stats.norm.cdf(x)
const NORMAL_CDF: number[][] = [
  [-8.5, 9.47953482220325e-18],
  [-7.034, 1.0034756170348553e-12],
  [-5, 2.866515718791933e-07],
  [-3, 0.0013498980316300933],
  [-1.96, 0.024997895148220435],
  [-1, 0.15865525393145707],
  [-0.3, 0.3820885778110474],
  [0, 0.5],
  [1e-08, 0.5000000039894228],
  [0.5, 0.6914624612740131],
  [1.645, 0.9500150944608786],
  [2.5, 0.9937903346742238],
  [4, 0.9999683287581669],
];
// scipy.stats.norm.sf(x)
const NORMAL_SF: number[][] = [
  [1.96, 0.024997895148220435],
  [4, 3.167124183311986e-05],
  [7.034, 1.0034756170348553e-12],
  [8.5, 9.47953482220325e-18],
  [10, 7.61985302416047e-24],
  [20, 2.7536241186061556e-89],
];
// scipy.stats.norm.ppf(p)
const NORMAL_PPF: number[][] = [
  [1e-12, -7.034483825301131],
  [1e-09, -5.9978070150076865],
  [1e-06, -4.753424308822899],
  [0.001, -3.090232306167813],
  [0.025, -1.9599639845400545],
  [0.05, -1.6448536269514729],
  [0.3, -0.5244005127080409],
  [0.5, 0.0],
  [0.6, 0.2533471031357997],
  [0.95, 1.6448536269514722],
  [0.975, 1.959963984540054],
  [0.995, 2.5758293035489004],
  [0.999999, 4.753424308817087],
];
// scipy.stats.t.cdf(t, df)
const T_CDF: number[][] = [
  [-4, 1, 0.07797913037736932], [-1.3, 1, 0.20871440016015272], [0.2, 1, 0.562832958189001], [2, 1, 0.8524163823495667], [3.5, 1, 0.9114144672170952],
  [-4, 1.5, 0.044916263477164126], [-1.3, 1.5, 0.17901469560079042], [0.2, 1.5, 0.567403161627116], [2, 1.5, 0.8879058348219744], [3.5, 1.5, 0.9458870225051711],
  [-4, 2, 0.028595479208968315], [-1.3, 2, 0.16162351590802015], [0.2, 2, 0.5700140042014005], [2, 2, 0.908248290463863], [3.5, 2, 0.9635863249727653],
  [-4, 2.5, 0.019506487920659125], [-1.3, 2.5, 0.15024339463535416], [0.2, 2.5, 0.5716951579854872], [2, 2.5, 0.9213042521210171], [3.5, 2.5, 0.9738272265198398],
  [-4, 3, 0.014004228005073076], [-1.3, 3, 0.14223375436394853], [0.2, 3, 0.5728648353768605], [2, 3, 0.9303370157205785], [3.5, 3, 0.9802594811903587],
  [-4, 4.7, 0.005848639606636213], [-1.3, 4.7, 0.12684864793230508], [0.2, 4.7, 0.5750782326428625], [2, 4.7, 0.9472139088982802], [3.5, 4.7, 0.9904352032498618],
  [-4, 10, 0.0012591663123683473], [-1.3, 10, 0.1113829086034223], [0.2, 10, 0.5772554043098272], [2, 10, 0.9633059826146299], [3.5, 10, 0.9971367472850574],
  [-4, 29.3, 0.00019720421948134944], [-1.3, 29.3, 0.10186765723557861], [0.2, 29.3, 0.5785688769050147], [2, 29.3, 0.9725771240997781], [3.5, 29.3, 0.999245140522976],
  [-4, 100, 6.0761822150380886e-05], [-1.3, 100, 0.09829473171118308], [0.2, 100, 0.5790566318987747], [2, 100, 0.9758939106344332], [3.5, 100, 0.9996517861413219],
  [-4, 1234.5, 3.355257262072731e-05], [-1.3, 1234.5, 0.09692181881126666], [0.2, 1234.5, 0.5792432395330223], [2, 1234.5, 0.9771404883844726], [3.5, 1234.5, 0.9997590830696282],
  [-4, 10000, 3.189933441156984e-05], [-1.3, 10000, 0.09681546609113426], [0.2, 10000, 0.5792576760432565], [2, 10000, 0.9772363696692823], [3.5, 10000, 0.9997663577540665],
  [-4, 100000, 3.1693998778597706e-05], [-1.3, 100000, 0.09680198277159006], [0.2, 100000, 0.5792595060971638], [2, 100000, 0.9772485182712467], [3.5, 100000, 0.9997672697303145],
  [-4, 1e+06, 3.167351700502405e-05], [-1.3, 1e+06, 0.09680063440456263], [0.2, 1e+06, 0.5792596891048856], [2, 1e+06, 0.9772497330743404], [3.5, 1e+06, 0.9997673608031595],
  [-4, 1e+07, 3.1671469345084426e-05], [-1.3, 1e+07, 0.0968004995675091], [0.2, 1e+07, 0.5792597074056811], [2, 1e+07, 0.9772498545540785], [3.5, 1e+07, 0.9997673699091966],
];
// scipy.stats.t.sf(t, df)
const T_SF: number[][] = [
  [5, 1, 0.0628329581890012], [9, 1, 0.03522328747727728], [1e+11, 1, 3.183098861837907e-12],
  [5, 1.5, 0.032687883810578106], [9, 1.5, 0.013829377602765494], [1e+08, 1.5, 3.770852432016246e-13],
  [5, 2, 0.018874775675311862], [9, 2, 0.006060830046393435], [1e+06, 2, 4.999999999992501e-13],
  [5, 2.5, 0.011725594985430925], [9, 2.5, 0.0028739530918040273], [55306.2, 2.5, 9.999988281840439e-13],
  [5, 3, 0.007696219036651147], [9, 3, 0.0014479060809320734], [10331.1, 3, 1.000002394023544e-12],
  [5, 4.7, 0.002433177360929075], [9, 4.7, 0.00019381864362795606], [534.497, 4.7, 9.999980468285783e-13],
  [5, 10, 0.00026866680137822634], [9, 10, 2.0690245248410042e-06], [40.5321, 10, 9.99999062436628e-13],
  [5, 29.3, 1.2358252710963618e-05], [9, 29.3, 3.103167563867143e-10], [11.5462, 29.3, 1.0000671701900178e-12],
  [5, 100, 1.225086706751901e-06], [9, 100, 7.680385257375236e-15], [8.02583, 100, 9.999781765798054e-13],
  [5, 1234.5, 3.2800380465665176e-07], [9, 1234.5, 4.1613210125079246e-19], [7.10703, 1234.5, 1.0000155574901528e-12],
  [5, 10000, 2.9151633068313295e-07], [9, 10000, 1.3339216347343303e-19], [7.04337, 10000, 1.0000114462089165e-12],
  [5, 100000, 2.8713508393208397e-07], [9, 100000, 1.147704502511574e-19], [7.03537, 100000, 1.0000124908143836e-12],
  [5, 1e+06, 2.8669989354453723e-07], [9, 1e+06, 1.1304865167464308e-19], [7.03457, 1e+06, 1.0000187054396408e-12],
  [5, 1e+07, 2.866564037504268e-07], [9, 1e+07, 1.128778082695371e-19], [7.03449, 1e+07, 1.00001938818612e-12],
];
// scipy.stats.t.ppf(p, df)
const T_PPF: number[][] = [
  [1e-12, 1, -318309886183.7907], [0.025, 1, -12.706204736174705], [0.3, 1, -0.7265425280053609], [0.95, 1, 6.313751514675037], [0.975, 1, 12.706204736174694], [0.995, 1, 63.656741162871526],
  [1e-12, 1.5, -52194694.27344636], [0.025, 1.5, -6.016663104427933], [0.3, 1.5, -0.651795482602357], [0.95, 1.5, 3.70518082009675], [0.975, 1.5, 6.016663104427929], [0.995, 1.5, 17.820310514462804],
  [1e-12, 2, -707106.7811854869], [0.025, 2, -4.302652729749464], [0.3, 2, -0.6172133998483678], [0.95, 2, 2.9199855803537242], [0.975, 2, 4.302652729749462], [0.995, 2, 9.924843200918287],
  [1e-12, 2.5, -55306.17407651582], [0.025, 2.5, -3.5746548420036834], [0.3, 2.5, -0.597307738252318], [0.95, 2.5, 2.5582186141359355], [0.975, 2.5, 3.5746548420036817], [0.995, 2.5, 7.163728138948783],
  [1e-12, 3, -10331.108244292487], [0.025, 3, -3.1824463052837086], [0.3, 3, -0.5843897274398188], [0.95, 3, 2.3533634348018233], [0.975, 3, 3.1824463052837078], [0.995, 3, 5.840909309733355],
  [1e-12, 4.7, -534.4967778766639], [0.025, 4.7, -2.6207260753531707], [0.3, 4.7, -0.5617670508497394], [0.95, 4.7, 2.043811093013787], [0.975, 4.7, 2.62072607535317], [0.995, 4.7, 4.1678920401190584],
  [1e-12, 10, -40.5320961786626], [0.025, 10, -2.2281388519862753], [0.3, 10, -0.5415280387550154], [0.95, 10, 1.8124611228116756], [0.975, 10, 2.228138851986274], [0.995, 10, 3.16927267261695],
  [1e-12, 29.3, -11.546232063749406], [0.025, 29.3, -2.04432042150014], [0.3, 29.3, -0.530154366160737], [0.95, 29.3, 1.6985533811280282], [0.975, 29.3, 2.044320421500141], [0.995, 29.3, 2.754420171610263],
  [1e-12, 100, -8.02582559449325], [0.025, 100, -1.983971518523552], [0.3, 100, -0.5260762706003465], [0.95, 100, 1.6602343260853392], [0.975, 100, 1.9839715185235518], [0.995, 100, 2.6258905214380173],
  [1e-12, 1234.5, -7.107032235971044], [0.025, 1234.5, -1.9618874833313455], [0.3, 1234.5, -0.524535941249618], [0.95, 1234.5, 1.6460888802690194], [0.975, 1234.5, 1.9618874833313453], [0.995, 1234.5, 2.579817729733322],
  [1e-12, 10000, -7.0433716020557755], [0.025, 10000, -1.9602012398906263], [0.3, 10000, -0.524417228345467], [0.95, 10000, 1.645006018069243], [0.975, 10000, 1.960201239890626], [0.995, 10000, 2.5763210466685282],
  [1e-12, 100000, -7.035371742393576], [0.025, 100000, -1.95998770753461], [0.3, 100000, -0.5244021842335457], [0.95, 100000, 1.6448688647849696], [0.975, 100000, 1.9599877075346095], [0.995, 100000, 2.575878469908375],
  [1e-12, 1e+06, -7.034572608411255], [0.025, 1e+06, -1.9599663568141072], [0.3, 1e+06, -0.5244006798602092], [0.95, 1e+06, 1.6448551507220404], [0.975, 1e+06, 1.959966356814107], [0.995, 1e+06, 2.5758342201053344],
  [1e-12, 1e+07, -7.03449270352616], [0.025, 1e+07, -1.9599642217672055], [0.3, 1e+07, -0.5244005294232538], [0.95, 1e+07, 1.6448537793284017], [0.975, 1e+07, 1.959964221767205], [0.995, 1e+07, 2.5758297952037488],
];
// scipy.stats.chi2.sf(x, df)
const CHI2_SF: number[][] = [
  [0.05, 1, 0.8230632737581214], [1, 1, 0.31731050786291115], [3.84, 1, 0.05004352124870519], [10.83, 1, 0.0009986863791802592], [25, 1, 5.733031437583875e-07], [60, 1, 9.485737571073857e-15], [200, 1, 2.0884875837625688e-45],
  [0.05, 2, 0.9753099120283326], [1, 2, 0.6065306597126334], [3.84, 2, 0.14660696213035013], [10.83, 2, 0.004449337812751395], [25, 2, 3.7266531720786718e-06], [60, 2, 9.357622968840163e-14], [200, 2, 3.7200759760208177e-44],
  [0.05, 3, 0.9970706672353801], [1, 3, 0.8012519569012009], [3.84, 3, 0.27926761711860965], [10.83, 3, 0.012681559772466945], [25, 3, 1.5440498291101365e-05], [60, 3, 5.878230727906921e-13], [200, 3, 4.218541107192018e-43],
  [0.05, 4, 0.999692659829041], [1, 4, 0.9097959895689501], [3.84, 4, 0.4280923294206225], [10.83, 4, 0.0285425020688002], [25, 4, 5.0309817823062075e-05], [60, 4, 2.9008631203404573e-12], [200, 4, 3.75727673578106e-42],
  [0.05, 7, 0.9999997916922473], [1, 7, 0.9948285365165155], [3.84, 7, 0.79801091503604], [10.83, 7, 0.1462081573314229], [25, 7, 0.0007588002556582502], [60, 7, 1.5095553022989154e-10], [200, 7, 1.147781224014262e-39],
  [0.05, 10, 0.9999999999202972], [1, 10, 0.9998278843700441], [3.84, 10, 0.9542763043207358], [10.83, 10, 0.37091514848208085], [25, 10, 0.005345505487134069], [60, 10, 3.6243009520614924e-09], [200, 10, 1.6139305336977317e-37],
];

describe('experiments statistics: distributions (scipy)', () => {
  it('standard normal CDF, survival function and quantile', () => {
    for (const [x, p] of NORMAL_CDF) assertClose(normalCdf(x), p, DIST, `Φ(${x})`);
    for (const [x, p] of NORMAL_SF) assertClose(normalSf(x), p, DIST, `1 − Φ(${x})`);
    for (const [p, x] of NORMAL_PPF) assertClose(normalQuantile(p), x, { rel: 1e-8, abs: 1e-15 }, `Φ⁻¹(${p})`);
    assert.equal(normalQuantile(0), -Infinity);
    assert.equal(normalQuantile(1), Infinity);
    assert.throws(() => normalQuantile(1.5), RangeError);
  });

  it("Student's t CDF at whole and fractional ν from 1 to 1e7", () => {
    for (const [t, df, p] of T_CDF) assertClose(studentTCdf(t, df), p, DIST, `F_t(${t}; ${df})`);
    // Both halves come from the same tail, so they add up to 1.
    for (const [t, df] of T_CDF) assert.ok(Math.abs(studentTCdf(-t, df) + studentTCdf(t, df) - 1) <= 1e-15, `F_t(−${t}) + F_t(${t}) = 1 at ν = ${df}`);
  });

  it("Student's t upper tail down to 1e-12", () => {
    for (const [t, df, p] of T_SF) assertClose(studentTSf(t, df), p, DIST, `1 − F_t(${t}; ${df})`);
  });

  it("Student's t quantile at whole and fractional ν, tails to 1e-12", () => {
    for (const [p, df, t] of T_PPF) assertClose(studentTQuantile(p, df), t, { rel: 1e-8, abs: 1e-12 }, `F_t⁻¹(${p}; ${df})`);
    // The quantile inverts the CDF it is paired with.
    for (const df of [1.2, 3.7, 57.5, 2e6]) {
      for (const p of [1e-10, 0.01, 0.2, 0.7, 0.999]) assertClose(studentTCdf(studentTQuantile(p, df), df), p, { rel: 1e-9 }, `F_t(F_t⁻¹(${p}; ${df}))`);
    }
  });

  it('chi-square survival function', () => {
    for (const [x, df, p] of CHI2_SF) assertClose(chiSquareSf(x, df), p, DIST, `P(χ²_${df} > ${x})`);
    assert.equal(chiSquareSf(0, 3), 1);
  });
});

/**
 * Three experiments' per-variant totals and the contract's numbers for them, computed with scipy:
 *   mean; variance: conversion m·(1 − m), count and sum numpy.var(values, ddof=1)
 *   lift = m_v/m_c − 1;  var = v_c·m_v²/(m_c⁴·n_c) + v_v/(m_c²·n_v);  sd = √var
 *   ν: scipy.stats.ttest_ind_from_stats(m_c, √v_c, n_c, m_v, √v_v, n_v, equal_var=False), its df
 *      (recovered from its p-value with scipy.optimize.brentq; equal to (a + b)²/(a²/(n_c − 1) + b²/(n_v − 1)) to 1e-9)
 *   pValue = 2·scipy.stats.t.sf(|lift/sd|, ν);  Welch interval lift ∓ scipy.stats.t.ppf((1 + level)/2, ν)·sd
 *   chanceToWin = scipy.stats.norm.cdf(lift/sd);  Bayesian interval lift ∓ scipy.stats.norm.ppf((1 + level)/2)·sd
 * gbstats' EffectBayesianABTest and TwoSidedTTest give the same numbers to 1e-15. The sequential
 * numbers are gbstats' SequentialTwoSidedTTest([(a, b)], SequentialConfig(alpha=1 − level)), with a, b
 * ProportionStatistic(sum, n) or SampleMeanStatistic(sum, sum_squares, n).
 * count: numpy.random.default_rng(47).poisson(2.0, 800) and .poisson(2.2, 760); sum: the values
 * [12.5, 0, 3.25, 40, 7] and [15, 22.5, 0, 9.75, 31, 4, 18] (ν = 6.53, a fractional t).
 */
interface Case {
  kind: MetricKind;
  control: VariantTotals;
  variant: VariantTotals;
  meanControl: number; varianceControl: number; meanVariant: number; varianceVariant: number;
  lift: number; liftVariance: number; welchDf: number; pValue: number;
  levels: Record<'0.95' | '0.9', {
    chanceToWin: number; bayesLow: number; bayesHigh: number; welchLow: number; welchHigh: number;
    sequentialP: number; sequentialLow: number; sequentialHigh: number;
  }>;
}
const CASES: Record<string, Case> = {
  conversion: {
    kind: 'conversion', control: { units: 1000, total: 123 }, variant: { units: 1020, total: 151 },
    meanControl: 0.123, varianceControl: 0.107871, meanVariant: 0.1480392156862745, varianceVariant: 0.1261236063052672,
    lift: 0.2035708592380041, liftVariance: 0.018501597664113356, welchDf: 2011.176399060776, pValue: 0.13464956510857512,
    levels: {
      '0.95': {
        chanceToWin: 0.9327536712288567, bayesLow: -0.0630245749759788, bayesHigh: 0.470166293451987, welchLow: -0.06318511220307732, welchHigh: 0.47032683067908554,
        sequentialP: 0.8733708089274289, sequentialLow: -0.221039774317614, sequentialHigh: 0.6281814927936223,
      },
      '0.9': {
        chanceToWin: 0.9327536712288567, bayesLow: -0.020163081974429897, bayesHigh: 0.4273048004504381, welchLow: -0.020266185832027828, welchHigh: 0.42740790430803605,
        sequentialP: 0.8431349613863104, sequentialLow: -0.1852533473827659, sequentialHigh: 0.5923950658587742,
      },
    },
  },
  count: {
    kind: 'count', control: { units: 800, total: 1717, sumOfSquares: 5725 }, variant: { units: 760, total: 1706, sumOfSquares: 5510 },
    meanControl: 2.14625, varianceControl: 2.55305225281602, meanVariant: 2.2447368421052634, varianceVariant: 2.2140697593786838,
    lift: 0.045887870520798124, liftVariance: 0.0013902799313194342, welchDf: 1557.3843101163668, pValue: 0.21862667617555323,
    levels: {
      '0.95': {
        chanceToWin: 0.8907795809141548, bayesLow: -0.027192243774412594, bayesHigh: 0.11896798481600884, welchLow: -0.027249083441535177, welchHigh: 0.11902482448313143,
        sequentialP: 1, sequentialLow: -0.07296346037613702, sequentialHigh: 0.1647392014177334,
      },
      '0.9': {
        chanceToWin: 0.8907795809141548, bayesLow: -0.015442894740541273, bayesHigh: 0.10721863578213753, welchLow: -0.015479398236040005, welchHigh: 0.10725513927763625,
        sequentialP: 1, sequentialLow: -0.06332737768768196, sequentialHigh: 0.15510311872927834,
      },
    },
  },
  sum: {
    kind: 'sum', control: { units: 5, total: 62.75, sumOfSquares: 1815.8125 }, variant: { units: 7, total: 100.25, sumOfSquares: 2127.3125 },
    meanControl: 12.55, varianceControl: 257.075, meanVariant: 14.321428571428571, varianceVariant: 115.26488095238096,
    lift: 0.14114968696641994, liftVariance: 0.5296435736462195, welchDf: 6.526140593855672, pValue: 0.8521132527455338,
    levels: {
      '0.95': {
        chanceToWin: 0.5768921832795347, bayesLow: -1.2852457623418103, bayesHigh: 1.5675451362746502, welchLow: -1.6054010301906476, welchHigh: 1.8877004041234875,
        sequentialP: 1, sequentialLow: -12.909359896776209, sequentialHigh: 13.19165927070905,
      },
      '0.9': {
        chanceToWin: 0.5768921832795347, bayesLow: -1.0559191095871576, bayesHigh: 1.3382184835199975, welchLow: -1.2528725809717298, welchHigh: 1.5351719549045697,
        sequentialP: 1, sequentialLow: -12.647642323243142, sequentialHigh: 12.929941697175982,
      },
    },
  },
};
// The same arithmetic done twice agrees to rounding; the contract's tolerance is 2e-3.
const RESULT = { rel: 1e-9, abs: 1e-12 };

function liftOf(kind: MetricKind, control: VariantTotals, variant: VariantTotals) {
  const lift = relativeLift(summarizeVariant(kind, control), summarizeVariant(kind, variant));
  assert.ok(lift.ok, `no lift: ${lift.ok ? '' : lift.reason}`);
  return lift;
}

describe('experiments statistics: results (scipy and gbstats)', () => {
  for (const [name, c] of Object.entries(CASES)) {
    it(`${name}: summaries, lift, Welch ν, p-value and intervals, chance to win, sequential`, () => {
      const control = summarizeVariant(c.kind, c.control);
      const variant = summarizeVariant(c.kind, c.variant);
      assertClose(control.mean, c.meanControl, RESULT, 'control mean');
      assertClose(control.variance, c.varianceControl, RESULT, 'control variance');
      assertClose(variant.mean, c.meanVariant, RESULT, 'variant mean');
      assertClose(variant.variance, c.varianceVariant, RESULT, 'variant variance');
      const lift = liftOf(c.kind, c.control, c.variant);
      assertClose(lift.mean, c.lift, RESULT, 'lift');
      assertClose(lift.variance, c.liftVariance, RESULT, 'var(lift)');
      assertClose(welchDegreesOfFreedom(lift.varianceControl, lift.unitsControl, lift.varianceVariant, lift.unitsVariant), c.welchDf, RESULT, 'Welch ν');
      for (const [levelText, l] of Object.entries(c.levels)) {
        const level = Number(levelText);
        const welch = welchComparison(lift, level);
        assertClose(welch.pValue, c.pValue, RESULT, `p-value at ${level}`);
        assertClose(welch.lift.low, l.welchLow, RESULT, `Welch low at ${level}`);
        assertClose(welch.lift.high, l.welchHigh, RESULT, `Welch high at ${level}`);
        const bayes = bayesianComparison(lift, level);
        assertClose(bayes.chanceToWin, l.chanceToWin, RESULT, `chance to win at ${level}`);
        assertClose(bayes.lift.low, l.bayesLow, RESULT, `Bayesian low at ${level}`);
        assertClose(bayes.lift.high, l.bayesHigh, RESULT, `Bayesian high at ${level}`);
        const sequential = sequentialComparison(lift, level);
        assertClose(sequential.pValue, l.sequentialP, RESULT, `sequential p-value at ${level}`);
        assertClose(sequential.lift.low, l.sequentialLow, RESULT, `sequential low at ${level}`);
        assertClose(sequential.lift.high, l.sequentialHigh, RESULT, `sequential high at ${level}`);
      }
    });
  }

  // gbstats' own test cases (packages/stats/tests), their expected values rounded to 5 decimals.
  const GB = { abs: 5e-6 };
  it("GrowthBook's Bayesian test cases (tests/bayesian/test_tests.py)", () => {
    // TestBinom.test_bayesian_binomial_ab_test: ProportionStatistic(sum=49, n=100) vs (sum=51, n=100)
    let lift = liftOf('conversion', { units: 100, total: 49 }, { units: 100, total: 51 });
    let b = bayesianComparison(lift, 0.95);
    assertClose(b.lift.mean, 0.04082, GB, 'expected');
    assertClose(Math.sqrt(lift.variance), 0.14725, GB, 'stddev');
    assertClose(b.lift.low, -0.24779, GB, 'ci low');
    assertClose(b.lift.high, 0.32943, GB, 'ci high');
    assertClose(b.chanceToWin, 0.60918, GB, 'chanceToWin');
    // TestNorm.test_bayesian_gaussian_ab_test: SampleMeanStatistic(sum=100, sum_squares=1002.25, n=10) vs (105, 1111.5, 10)
    lift = liftOf('sum', { units: 10, total: 100, sumOfSquares: 1002.25 }, { units: 10, total: 105, sumOfSquares: 1111.5 });
    b = bayesianComparison(lift, 0.95);
    assertClose(b.lift.mean, 0.05, GB, 'expected');
    assertClose(Math.sqrt(lift.variance), 0.03572, GB, 'stddev');
    assertClose(b.lift.low, -0.02, GB, 'ci low');
    assertClose(b.lift.high, 0.12, GB, 'ci high');
    assertClose(b.chanceToWin, 0.91923, GB, 'chanceToWin');
  });

  it("GrowthBook's frequentist and sequential test cases (tests/frequentist/test_tests.py)", () => {
    // TestTwoSidedTTest.test_two_sided_ttest: SampleMeanStatistic(sum=1396.87, sum_squares=52377.9767, n=3407) vs (2422.7, 134698.29, 3461)
    let lift = liftOf('sum', { units: 3407, total: 1396.87, sumOfSquares: 52377.9767 }, { units: 3461, total: 2422.7, sumOfSquares: 134698.29 });
    let f = welchComparison(lift, 0.95);
    assertClose(f.lift.mean, 0.70732, GB, 'expected');
    assertClose(Math.sqrt(lift.variance), 0.37879, GB, 'stddev');
    assertClose(f.lift.low, -0.03526, GB, 'ci low');
    assertClose(f.lift.high, 1.44989, GB, 'ci high');
    assertClose(f.pValue, 0.06191, GB, 'pValue');
    // test_two_sided_ttest_binom: ProportionStatistic(sum=14, n=28) vs (16, 30)
    lift = liftOf('conversion', { units: 28, total: 14 }, { units: 30, total: 16 });
    f = welchComparison(lift, 0.95);
    assertClose(f.lift.mean, 0.06667, GB, 'expected');
    assertClose(f.lift.low, -0.47767, GB, 'ci low');
    assertClose(f.lift.high, 0.61101, GB, 'ci high');
    assertClose(f.pValue, 0.80707, GB, 'pValue');
    // TestSequentialTTest.test_sequential_test_runs: (1396.87, 52377.9767, n=3000) vs (2422.7, 134698.29, 3461), tuning 1000
    lift = liftOf('sum', { units: 3000, total: 1396.87, sumOfSquares: 52377.9767 }, { units: 3461, total: 2422.7, sumOfSquares: 134698.29 });
    let s = sequentialComparison(lift, 0.95, 1000);
    assertClose(s.lift.mean, 0.50336, GB, 'expected');
    assertClose(s.lift.low, -0.55844, GB, 'ci low');
    assertClose(s.lift.high, 1.56516, GB, 'ci high');
    assertClose(s.pValue, 1, GB, 'pValue');
    // test_sequential_test_runs_prop: ProportionStatistic(sum=1396, n=3000) vs (2422, 3461), default tuning
    lift = liftOf('conversion', { units: 3000, total: 1396 }, { units: 3461, total: 2422 });
    s = sequentialComparison(lift, 0.95);
    assertClose(s.lift.mean, 0.50386, GB, 'expected');
    assertClose(s.lift.low, 0.40098, GB, 'ci low');
    assertClose(s.lift.high, 0.60675, GB, 'ci high');
    assertClose(s.pValue, 0, GB, 'pValue');
  });

  it('the sequential interval is wider than the fixed one and excludes 0 exactly when its p-value is below 1 − level', () => {
    const base = liftOf(CASES.count.kind, CASES.count.control, CASES.count.variant);
    const fixed = welchComparison(base, 0.95);
    const sequential = sequentialComparison(base, 0.95);
    assert.ok(sequential.lift.low < fixed.lift.low && sequential.lift.high > fixed.lift.high, 'wider');
    // More units, same variance per unit: narrower.
    assert.ok(sequentialHalfwidth(0.001, 20_000, 0.05) < sequentialHalfwidth(0.002, 10_000, 0.05));
    let rejected = 0;
    for (let mean = -0.3; mean <= 0.3; mean += 0.0125) {
      for (const level of [0.8, 0.9, 0.95, 0.99]) {
        const s = sequentialComparison({ ...base, mean }, level);
        const excludesZero = s.lift.low > 0 || s.lift.high < 0;
        assert.equal(s.pValue < 1 - level, excludesZero, `lift ${mean} at ${level}: p ${s.pValue}, interval ${s.lift.low}..${s.lift.high}`);
        if (excludesZero) rejected++;
      }
    }
    assert.ok(rejected > 10 && rejected < 180, `both outcomes occur (${rejected} rejected)`);
    assert.equal(sequentialPValue(0, 0.01, 1000, 0.05), 1);
  });
});

describe('experiments statistics: corrections and SRM', () => {
  // statsmodels.stats.multitest.multipletests(p, method='holm' | 'fdr_bh')[1]
  const P = [0.01, 0.04, 0.03, 0.005, 0.2, 0.04, 0.9, 0.0001];
  const HOLM = [0.06, 0.16, 0.15, 0.035, 0.4, 0.16, 0.9, 0.0008];
  const BH = [0.02666666666666667, 0.05333333333333334, 0.05333333333333334, 0.02, 0.2285714285714286, 0.05333333333333334, 0.9, 0.0008];

  it('Holm and Benjamini–Hochberg adjusted p-values, in the order given', () => {
    adjustPValues(P, 'holm').forEach((p, i) => assertClose(p, HOLM[i], { abs: 1e-15 }, `holm ${i}`));
    adjustPValues(P, 'bh').forEach((p, i) => assertClose(p, BH[i], { abs: 1e-15 }, `bh ${i}`));
    assert.deepEqual(adjustPValues(P, 'none'), P);
    assert.deepEqual(adjustPValues([], 'holm'), []);
    assert.deepEqual(adjustPValues([0.3], 'bh'), [0.3]);
    assert.deepEqual(adjustPValues([0.6, 0.7], 'holm'), [1, 1]);
    assert.throws(() => adjustPValues([0.1, NaN], 'holm'), RangeError);
  });

  // scipy.stats.chisquare(observed, [w/Σw·Σobserved for w in weights]); the last case (a 0% variant)
  // is gbstats.utils.check_srm, which leaves 0-weight variants out of the sum but not out of k.
  const SRM: Array<[number[], number[], number]> = [
    [[5050, 4950], [50, 50], 0.31731050786291115],
    [[5200, 4800], [50, 50], 6.334248366623988e-05],
    [[3500, 3250, 3250], [34, 33, 33], 0.10772603444616917],
    [[1023, 8977], [10, 90], 0.44327972708850916],
    [[250, 260, 240, 250], [25, 25, 25, 25], 0.8494670333918255],
    [[100, 0], [50, 50], 1.5239706048320995e-23],
    [[40, 50, 10], [50, 50, 0], 0.36787944117144245],
  ];
  it('sample-ratio mismatch: χ² against the expected split', () => {
    for (const [observed, weights, p] of SRM) {
      const srm = sampleRatioMismatch(observed, weights);
      assertClose(srm.pValue, p, DIST, `SRM ${observed} against ${weights}`);
      assert.equal(srm.ok, p >= 0.001);
    }
    assert.equal(sampleRatioMismatch([5200, 4800], [50, 50]).ok, false);
    assert.deepEqual(sampleRatioMismatch([0, 0], [50, 50]), { chiSquare: 0, pValue: 1, ok: true });
    assert.throws(() => sampleRatioMismatch([1, 2], [0, 0]), RangeError);
    assert.throws(() => sampleRatioMismatch([1, 2], [50]), RangeError);
  });
});

describe('experiments statistics: edge cases and the whole result', () => {
  const conversion = (key: string, units: number, total: number) => ({ key, units, total });
  const metric = (id: string, kind: MetricKind, variants: MetricTotals['variants']): MetricTotals => ({ id, kind, variants });

  /** Every number in a result is finite: no NaN or Infinity ever reaches JSON. */
  function assertAllFinite(value: unknown, path = 'result'): void {
    if (typeof value === 'number') assert.ok(Number.isFinite(value), `${path} is ${value}`);
    else if (Array.isArray(value)) value.forEach((v, i) => assertAllFinite(v, `${path}[${i}]`));
    else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) assertAllFinite(v, `${path}.${k}`);
  }

  it('summaries: undefined means and variances are null, impossible totals throw', () => {
    assert.deepEqual(summarizeVariant('conversion', { units: 0, total: 0 }), { units: 0, total: 0, mean: null, variance: null });
    assert.deepEqual(summarizeVariant('sum', { units: 1, total: 4.5, sumOfSquares: 20.25 }), { units: 1, total: 4.5, mean: 4.5, variance: null });
    assert.deepEqual(summarizeVariant('count', { units: 3, total: 6, sumOfSquares: 12 }), { units: 3, total: 6, mean: 2, variance: 0 });
    assert.deepEqual(summarizeVariant('sum', { units: 2, total: 1e308, sumOfSquares: Infinity }), { units: 2, total: 1e308, mean: 5e307, variance: null });
    assert.throws(() => summarizeVariant('conversion', { units: 3, total: 4 }), RangeError);
    assert.throws(() => summarizeVariant('count', { units: 3, total: 4 }), RangeError);
    assert.throws(() => summarizeVariant('count', { units: -1, total: 0, sumOfSquares: 0 }), RangeError);
    assert.throws(() => summarizeVariant('sum', { units: 2.5, total: 0, sumOfSquares: 0 }), RangeError);
  });

  it('a comparison that cannot be made is null with its reason, on both engines', () => {
    const metrics = [
      metric('no-units', 'conversion', [conversion('control', 100, 10), conversion('empty', 0, 0)]),
      metric('control-empty', 'conversion', [conversion('control', 0, 0), conversion('empty', 50, 5)]),
      metric('control-zero', 'conversion', [conversion('control', 100, 0), conversion('empty', 100, 3)]),
      metric('zero-variance', 'count', [{ key: 'control', units: 3, total: 6, sumOfSquares: 12 }, { key: 'empty', units: 4, total: 9, sumOfSquares: 25 }]),
      metric('one-unit', 'sum', [{ key: 'control', units: 5, total: 10, sumOfSquares: 30 }, { key: 'empty', units: 1, total: 2, sumOfSquares: 4 }]),
      metric('overflow', 'sum', [{ key: 'control', units: 2, total: 3, sumOfSquares: 5 }, { key: 'empty', units: 2, total: 1e308, sumOfSquares: Infinity }]),
    ];
    const reasons = [NO_COMPARISON.variantHasNoUnits, NO_COMPARISON.controlHasNoUnits, NO_COMPARISON.controlMeanZero, NO_COMPARISON.zeroVariance, NO_COMPARISON.tooFewUnits, NO_COMPARISON.notFinite];
    for (const settings of [
      { engine: 'bayesian' as const, confidenceLevel: 0.95 },
      { engine: 'frequentist' as const, confidenceLevel: 0.95, correction: 'holm' as const },
      { engine: 'frequentist' as const, confidenceLevel: 0.9, sequential: true },
    ]) {
      const results = analyzeMetrics(metrics, 'control', settings);
      assertAllFinite(results);
      results.forEach((m, i) => {
        const v = m.variants[1];
        assert.equal(v.reason, reasons[i], `${m.id}: ${v.reason}`);
        assert.equal(v.lift, null);
        assert.equal(v.significant, null);
        if (settings.engine === 'bayesian') assert.equal(v.chanceToWin, null);
        else assert.equal(v.pValue, null);
        if ('correction' in settings) assert.equal(v.adjustedPValue, null);
      });
    }
  });

  it('the whole result: the control has no comparison, a correction runs over every (metric, variant) pair', () => {
    const metrics: MetricTotals[] = [
      metric('checkout', 'conversion', [conversion('control', 2000, 200), conversion('a', 2000, 248), conversion('b', 2000, 207)]),
      metric('orders', 'count', [
        { key: 'control', units: 2000, total: 2600, sumOfSquares: 6100 },
        { key: 'a', units: 2000, total: 2790, sumOfSquares: 6900 },
        { key: 'b', units: 2000, total: 2500, sumOfSquares: 5800 },
      ]),
    ];
    const plain = analyzeMetrics(metrics, 'control', { engine: 'frequentist', confidenceLevel: 0.95 });
    const holm = analyzeMetrics(metrics, 'control', { engine: 'frequentist', confidenceLevel: 0.95, correction: 'holm' });
    assertAllFinite(holm);
    const pairs = plain.flatMap((m) => m.variants.slice(1));
    const expected = adjustPValues(pairs.map((v) => v.pValue as number), 'holm');
    holm.flatMap((m) => m.variants.slice(1)).forEach((v, i) => {
      assert.equal(v.pValue, pairs[i].pValue);
      assert.equal(v.adjustedPValue, expected[i]);
      assert.equal(v.significant, expected[i] < 0.05);
    });
    // The correction changed a verdict: 'a' on checkout is significant alone but not after Holm over 4 pairs.
    assert.ok(plain[0].variants[1].significant === true && (plain[0].variants[1].pValue as number) > 0.0125);
    assert.equal(holm[0].variants[1].significant, false);
    for (const m of holm) {
      assert.deepEqual(Object.keys(m.variants[0]).sort(), ['key', 'mean', 'total', 'units', 'variance']);
      assert.equal(m.variants[0].key, 'control');
    }
    assert.equal('adjustedPValue' in plain[0].variants[1], false);

    const bayes = analyzeMetrics(metrics, 'control', { engine: 'bayesian', confidenceLevel: 0.95, correction: 'bh', sequential: true });
    const lift = liftOf('conversion', metrics[0].variants[0], metrics[0].variants[1]);
    assert.deepEqual(bayes[0].variants[1], { key: 'a', ...summarizeVariant('conversion', metrics[0].variants[1]), ...bayesianComparison(lift, 0.95) });

    const sequential = analyzeMetrics(metrics, 'control', { engine: 'frequentist', confidenceLevel: 0.95, sequential: true });
    const s = sequential[0].variants[1];
    assert.deepEqual(s.lift, sequentialComparison(lift, 0.95).lift);
    assert.equal(s.significant, s.lift!.low > 0 || s.lift!.high < 0);
    // pValue stays Welch's fixed-sample p-value as the contract defines it; the decision rests on
    // the always-valid one. Here they disagree: significant at a fixed sample, not yet sequentially.
    assert.equal(s.pValue, plain[0].variants[1].pValue);
    assert.equal(s.sequentialPValue, sequentialComparison(lift, 0.95).pValue);
    assert.ok((s.pValue as number) < 0.05 && (s.sequentialPValue as number) >= 0.05 && s.significant === false);
    const sequentialHolm = analyzeMetrics(metrics, 'control', { engine: 'frequentist', confidenceLevel: 0.95, sequential: true, correction: 'holm' });
    const deciding = adjustPValues(sequential.flatMap((m) => m.variants.slice(1)).map((v) => v.sequentialPValue as number), 'holm');
    sequentialHolm.flatMap((m) => m.variants.slice(1)).forEach((v, i) => {
      assert.equal(v.adjustedPValue, expected[i]);
      assert.equal(v.significant, deciding[i] < 0.05);
    });
    assert.throws(() => analyzeMetrics(metrics, 'nobody', { engine: 'bayesian', confidenceLevel: 0.95 }), RangeError);
    assert.throws(() => analyzeMetrics(metrics, 'control', { engine: 'bayesian', confidenceLevel: 1 }), RangeError);
  });

  it('any totals an aggregation can produce give finite numbers or null with a reason (fast-check)', () => {
    const units = fc.oneof(fc.constantFrom(0, 1, 2), fc.integer({ min: 0, max: 1_000_000 }));
    const value = fc.oneof(fc.constantFrom(0, 1, 1e-300, 1e154, 1e300), fc.double({ min: -1e6, max: 1e6, noNaN: true }));
    const variantTotals = (kind: MetricKind) =>
      kind === 'conversion'
        ? units.chain((n) => fc.integer({ min: 0, max: n }).map((total) => ({ units: n, total })))
        : fc.tuple(units, fc.array(value, { minLength: 1, maxLength: 4 })).map(([n, values]) => {
          // n units whose values cycle through `values`: totals any real aggregation could return.
          const k = Math.min(n, values.length);
          let total = 0;
          let sumOfSquares = 0;
          for (let i = 0; i < k; i++) {
            const v = kind === 'count' ? Math.round(Math.abs(values[i])) : values[i];
            const share = i < n % k ? Math.ceil(n / k) : Math.floor(n / k);
            total += v * share;
            sumOfSquares += v * v * share;
          }
          return { units: n, total, sumOfSquares };
        });
    const metricArb = fc.constantFrom<MetricKind>('conversion', 'count', 'sum').chain((kind) =>
      fc.array(variantTotals(kind), { minLength: 2, maxLength: 4 }).map((vs) => metric('m', kind, vs.map((v, i) => ({ key: i === 0 ? 'control' : `v${i}`, ...v })))));
    const settingsArb = fc.record({
      engine: fc.constantFrom<'bayesian' | 'frequentist'>('bayesian', 'frequentist'),
      confidenceLevel: fc.double({ min: 0.5, max: 0.999, noNaN: true, minExcluded: true }),
      sequential: fc.boolean(),
      correction: fc.constantFrom<'none' | 'holm' | 'bh'>('none', 'holm', 'bh'),
    });
    fc.assert(fc.property(fc.array(metricArb, { minLength: 1, maxLength: 3 }), settingsArb, (metrics, settings) => {
      const results = analyzeMetrics(metrics, 'control', settings);
      assertAllFinite(results);
      for (const v of results.flatMap((m) => m.variants.slice(1))) {
        if (v.lift === null) {
          assert.equal(typeof v.reason, 'string');
          assert.equal(v.significant, null);
        } else {
          assert.equal(v.reason, undefined);
          assert.ok(v.lift!.low <= v.lift!.mean && v.lift!.mean <= v.lift!.high);
          assert.equal(typeof v.significant, 'boolean');
          if (settings.engine === 'bayesian') assert.ok(v.chanceToWin! >= 0 && v.chanceToWin! <= 1);
          else assert.ok(v.pValue! >= 0 && v.pValue! <= 1);
        }
      }
    }), { numRuns: 500, seed: 47 });
  });
});
