/**
 * The distribution functions the experiment statistics need: the standard normal, Student's t and
 * the chi-square, built on the regularised incomplete gamma and beta functions (continued fractions
 * as in Numerical Recipes §6.2 and §6.4). Tails are computed directly, never as 1 − (something
 * close to 1), so a p-value of 1e-12 keeps its digits.
 */

const EPSILON = 1e-16;
const TINY = 1e-300;
const MAX_ITERATIONS = 100_000;
const LN_SQRT_2PI = 0.5 * Math.log(2 * Math.PI);
const LN_SQRT_PI = 0.5 * Math.log(Math.PI);

// Lanczos g = 7, n = 9: relative error about 1e-15 for the small arguments it is used for.
const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
  12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
];
// Above this, Stirling's series with the terms of stirlingCorrection is accurate to about 1e-16.
const STIRLING_FROM = 10;

/** The tail of Stirling's series, lnΓ(x) − ((x − ½)·ln x − x + ½·ln 2π), for x ≥ 10. */
function stirlingCorrection(x: number): number {
  const x2 = 1 / (x * x);
  return (1 / 12 + x2 * (-1 / 360 + x2 * (1 / 1260 + x2 * (-1 / 1680 + x2 * (1 / 1188 + x2 * (-691 / 360360)))))) / x;
}

/** ln Γ(x) for x > 0. */
export function lnGamma(x: number): number {
  if (!(x > 0)) throw new RangeError(`lnGamma needs x > 0, got ${x}`);
  if (x >= STIRLING_FROM) return (x - 0.5) * Math.log(x) - x + LN_SQRT_2PI + stirlingCorrection(x);
  // Γ(x) = Γ(x + 1)/x keeps the Lanczos sum away from its poles for small x.
  if (x < 0.5) return lnGamma(x + 1) - Math.log(x);
  const z = x - 1;
  let sum = LANCZOS[0];
  for (let i = 1; i < LANCZOS.length; i++) sum += LANCZOS[i] / (z + i);
  const t = z + 7.5;
  return LN_SQRT_2PI + (z + 0.5) * Math.log(t) - t + Math.log(sum);
}

/**
 * lnΓ(x + d) − lnΓ(x) for x, d ≥ 0. For large x the two logarithms are huge and nearly equal, so
 * the difference is taken inside Stirling's series instead (the t distribution at ν = 1e7 needs it).
 */
export function lnGammaIncrement(x: number, d: number): number {
  if (x < STIRLING_FROM) return lnGamma(x + d) - lnGamma(x);
  return (x - 0.5) * Math.log1p(d / x) + d * Math.log(x + d) - d + stirlingCorrection(x + d) - stirlingCorrection(x);
}

/** ln B(a, b) = lnΓ(a) + lnΓ(b) − lnΓ(a + b). */
export function lnBeta(a: number, b: number): number {
  const small = Math.min(a, b);
  const large = Math.max(a, b);
  return lnGamma(small) - lnGammaIncrement(large, small);
}

/** P(a, x) by its power series; converges quickly for x < a + 1. */
function gammaSeries(a: number, x: number): number {
  let term = 1 / a;
  let sum = term;
  for (let n = 1; n < MAX_ITERATIONS; n++) {
    term *= x / (a + n);
    sum += term;
    if (Math.abs(term) < Math.abs(sum) * EPSILON) break;
  }
  return sum * Math.exp(-x + a * Math.log(x) - lnGamma(a));
}

/** Q(a, x) by its continued fraction (modified Lentz); converges quickly for x ≥ a + 1. */
function gammaContinuedFraction(a: number, x: number): number {
  let b = x + 1 - a;
  let c = 1 / TINY;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i < MAX_ITERATIONS; i++) {
    const an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < TINY) d = TINY;
    c = b + an / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < EPSILON) break;
  }
  return Math.exp(-x + a * Math.log(x) - lnGamma(a)) * h;
}

/** The regularised lower incomplete gamma function P(a, x) = γ(a, x)/Γ(a). */
export function regularizedGammaP(a: number, x: number): number {
  if (!(a > 0)) throw new RangeError(`regularizedGammaP needs a > 0, got ${a}`);
  if (!(x > 0)) return 0;
  if (x === Infinity) return 1;
  return x < a + 1 ? gammaSeries(a, x) : 1 - gammaContinuedFraction(a, x);
}

/** The regularised upper incomplete gamma function Q(a, x) = 1 − P(a, x). */
export function regularizedGammaQ(a: number, x: number): number {
  if (!(a > 0)) throw new RangeError(`regularizedGammaQ needs a > 0, got ${a}`);
  if (!(x > 0)) return 1;
  if (x === Infinity) return 0;
  return x < a + 1 ? 1 - gammaSeries(a, x) : gammaContinuedFraction(a, x);
}

/** The continued fraction of I_x(a, b) (modified Lentz), without its prefactor. */
function betaContinuedFraction(x: number, complement: number, a: number, b: number): number {
  const qab = a + b;
  const qap = a + 1;
  const qam = a - 1;
  let c = 1;
  // 1 − (a + b)·x/(a + 1), written with 1 − x: it cancels to a few digits when a is huge and x ≈ 1.
  let d = (1 - b + qab * complement) / qap;
  if (Math.abs(d) < TINY) d = TINY;
  d = 1 / d;
  let h = d;
  for (let m = 1; m < MAX_ITERATIONS; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < TINY) d = TINY;
    c = 1 + aa / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (qab + m) * x) / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < TINY) d = TINY;
    c = 1 + aa / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < EPSILON) break;
  }
  return h;
}

/**
 * The regularised incomplete beta function I_x(a, b). `complement` is 1 − x; pass it when the caller
 * knows it more precisely than 1 − x can be computed (x close to 1).
 */
export function regularizedBeta(x: number, a: number, b: number, complement = 1 - x): number {
  if (!(a > 0) || !(b > 0)) throw new RangeError(`regularizedBeta needs a, b > 0, got ${a}, ${b}`);
  if (!(x > 0)) return 0;
  if (!(complement > 0)) return 1;
  // ln x from the smaller of x and 1 − x, so that a·ln x stays exact when a is huge and x ≈ 1.
  const lnX = x > 0.5 ? Math.log1p(-complement) : Math.log(x);
  const lnComplement = complement > 0.5 ? Math.log1p(-x) : Math.log(complement);
  const lnFront = a * lnX + b * lnComplement - lnBeta(a, b);
  if (x < (a + 1) / (a + b + 2)) return (Math.exp(lnFront) * betaContinuedFraction(x, complement, a, b)) / a;
  return 1 - (Math.exp(lnFront) * betaContinuedFraction(complement, x, b, a)) / b;
}

/** Φ(x), the standard normal CDF: Φ(x) = ½·Q(½, x²/2) for x ≤ 0, mirrored for x > 0. */
export function normalCdf(x: number): number {
  if (Number.isNaN(x)) return NaN;
  const tail = 0.5 * regularizedGammaQ(0.5, (x * x) / 2);
  return x <= 0 ? tail : 1 - tail;
}

/** 1 − Φ(x), computed without the cancellation of 1 − Φ(x) for large x. */
export function normalSf(x: number): number {
  return normalCdf(-x);
}

/** φ(x), the standard normal density. */
export function normalPdf(x: number): number {
  return Math.exp(-0.5 * x * x - LN_SQRT_2PI);
}

/**
 * Φ⁻¹(p): a start from Abramowitz & Stegun 26.2.23 (error below 4.5e-4), then Halley steps on the
 * lower tail, each of which triples the correct digits.
 */
export function normalQuantile(p: number): number {
  if (!(p > 0 && p < 1)) {
    if (p === 0) return -Infinity;
    if (p === 1) return Infinity;
    throw new RangeError(`normalQuantile needs 0 ≤ p ≤ 1, got ${p}`);
  }
  if (p === 0.5) return 0;
  const q = Math.min(p, 1 - p);
  const r = Math.sqrt(-2 * Math.log(q));
  let x = -(r - (2.515517 + r * (0.802853 + r * 0.010328)) / (1 + r * (1.432788 + r * (0.189269 + r * 0.001308))));
  for (let i = 0; i < 8; i++) {
    const e = normalCdf(x) - q;
    const u = e * Math.sqrt(2 * Math.PI) * Math.exp((x * x) / 2);
    const next = x - u / (1 + (x * u) / 2);
    const done = Math.abs(next - x) <= 1e-15 * Math.max(1, Math.abs(x));
    x = next;
    if (done) break;
  }
  // x solves the lower tail; the upper half is its mirror, exact by symmetry.
  return p < 0.5 ? x : -x;
}

function checkDegrees(df: number, name: string): void {
  if (!(df > 0)) throw new RangeError(`${name} needs degrees of freedom > 0, got ${df}`);
}

/** P(T > t) for t ≥ 0 under Student's t with ν degrees of freedom: ½·I_{ν/(ν+t²)}(ν/2, ½). */
function studentTUpperTail(t: number, df: number): number {
  if (df === Infinity) return normalSf(t);
  const t2 = t * t;
  if (t2 === Infinity) return 0;
  // x and 1 − x both from t² and ν, so neither loses digits when ν ≫ t² or t² ≫ ν.
  return 0.5 * regularizedBeta(df / (df + t2), df / 2, 0.5, t2 / (df + t2));
}

/** F_t(t; ν), Student's t CDF; ν may be fractional (Welch–Satterthwaite). */
export function studentTCdf(t: number, df: number): number {
  checkDegrees(df, 'studentTCdf');
  if (Number.isNaN(t)) return NaN;
  if (t === 0) return 0.5;
  const tail = studentTUpperTail(Math.abs(t), df);
  return t > 0 ? 1 - tail : tail;
}

/** 1 − F_t(t; ν), computed directly for large t. */
export function studentTSf(t: number, df: number): number {
  return studentTCdf(-t, df);
}

/** The density of Student's t with ν degrees of freedom. */
export function studentTPdf(t: number, df: number): number {
  checkDegrees(df, 'studentTPdf');
  if (df === Infinity) return normalPdf(t);
  const lnNorm = lnGammaIncrement(df / 2, 0.5) - 0.5 * Math.log(df) - LN_SQRT_PI;
  return Math.exp(lnNorm - ((df + 1) / 2) * Math.log1p((t * t) / df));
}

/**
 * F_t⁻¹(p; ν). ν = 1 and 2 have closed forms; otherwise Newton's method on ln P(T > t) against
 * ln t, which is close to a straight line in both the normal-like and the heavy tails, started
 * from the normal quantile (a lower bound: t's tails are heavier) and kept inside a bracket.
 */
export function studentTQuantile(p: number, df: number): number {
  checkDegrees(df, 'studentTQuantile');
  if (!(p > 0 && p < 1)) {
    if (p === 0) return -Infinity;
    if (p === 1) return Infinity;
    throw new RangeError(`studentTQuantile needs 0 ≤ p ≤ 1, got ${p}`);
  }
  if (p === 0.5) return 0;
  const sign = p < 0.5 ? -1 : 1;
  const q = Math.min(p, 1 - p);
  if (df === Infinity) return -sign * normalQuantile(q);
  if (df === 1) return sign / Math.tan(Math.PI * q);
  if (df === 2) return (sign * (1 - 2 * q)) / Math.sqrt(2 * q * (1 - q));
  const lnQ = Math.log(q);
  let low = Math.log(-normalQuantile(q));
  let high = Infinity;
  let u = low;
  for (let i = 0; i < 200; i++) {
    const t = Math.exp(u);
    const tail = studentTUpperTail(t, df);
    const gap = Math.log(tail) - lnQ;
    if (gap === 0) break;
    if (gap > 0) low = u;
    else high = u;
    // d ln P(T > t) / d ln t = −t·f(t)/P(T > t)
    let next = u + (gap * tail) / (t * studentTPdf(t, df));
    if (!(next > low && next < high)) next = high === Infinity ? u + Math.max(1, u - low) : (low + high) / 2;
    const done = Math.abs(next - u) <= 1e-15 * Math.max(1, Math.abs(u));
    u = next;
    if (done) break;
  }
  return sign * Math.exp(u);
}

/** P(X > x) for X ~ χ²(k): Q(k/2, x/2). */
export function chiSquareSf(x: number, df: number): number {
  checkDegrees(df, 'chiSquareSf');
  if (Number.isNaN(x)) return NaN;
  return regularizedGammaQ(df / 2, x / 2);
}
