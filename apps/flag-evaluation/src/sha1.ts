/**
 * SHA-1 in JavaScript for the bucketing of `index.ts`: the same digest as `node:crypto` (tested
 * against it for every length across several blocks, and against test/vectors/flag-bucketing.json),
 * about twice as fast for the short ASCII strings bucketing hashes ("<flag_key>.<id>[.variant]"),
 * because a call into `node:crypto` and its hex string cost more than the 80 rounds themselves.
 * Only the first 52 bits are returned, as the bucket: bits / 2^52 in [0, 1).
 *
 * Only ASCII is hashed here (one byte per UTF-16 unit below 0x80, so the UTF-8 encoding is the
 * units themselves): the message's big-endian words are put together straight from the strings'
 * units. Other strings, and messages over MAX_LENGTH bytes, answer -1: the caller hashes them with
 * node:crypto.
 */

export const MAX_LENGTH = 4096;

/** The padded message as big-endian 32-bit words (room for MAX_LENGTH bytes and the padding). */
const w = new Int32Array(((MAX_LENGTH + 72) >>> 6) << 4);

/**
 * SHA-1 of the ASCII string s1 + s2 + s3 + s4 as its first 13 hex digits / 2^52 (the 32 bits of h0,
 * then the top 20 bits of h1), or -1 when the string is not ASCII or longer than MAX_LENGTH.
 */
export function asciiBucket(s1: string, s2: string, s3: string, s4: string): number {
  const length = s1.length + s2.length + s3.length + s4.length;
  if (length > MAX_LENGTH) return -1;
  let units = 0;
  let word = 0;
  let j = 0;
  for (let i = 0; i < s1.length; i++) {
    const u = s1.charCodeAt(i);
    units |= u;
    word = (word << 8) | u;
    if ((++j & 3) === 0) w[(j >>> 2) - 1] = word;
  }
  for (let i = 0; i < s2.length; i++) {
    const u = s2.charCodeAt(i);
    units |= u;
    word = (word << 8) | u;
    if ((++j & 3) === 0) w[(j >>> 2) - 1] = word;
  }
  for (let i = 0; i < s3.length; i++) {
    const u = s3.charCodeAt(i);
    units |= u;
    word = (word << 8) | u;
    if ((++j & 3) === 0) w[(j >>> 2) - 1] = word;
  }
  for (let i = 0; i < s4.length; i++) {
    const u = s4.charCodeAt(i);
    units |= u;
    word = (word << 8) | u;
    if ((++j & 3) === 0) w[(j >>> 2) - 1] = word;
  }
  if (units >= 0x80) return -1;
  // padding: the byte 0x80, zeros to the last 8 bytes of a 64-byte block, the length in bits
  word = (word << 8) | 0x80;
  j++;
  while ((j & 3) !== 0) {
    word <<= 8;
    j++;
  }
  w[(j >>> 2) - 1] = word;
  const total = (((length + 8) >>> 6) + 1) << 4;
  for (let k = j >>> 2; k < total - 2; k++) w[k] = 0;
  w[total - 2] = 0; // the top 32 bits of the 64-bit length: 0 below 512 MB
  w[total - 1] = length * 8;
  let h0 = 0x67452301;
  let h1 = 0xefcdab89 | 0;
  let h2 = 0x98badcfe | 0;
  let h3 = 0x10325476;
  let h4 = 0xc3d2e1f0 | 0;
  for (let o = 0; o < total; o += 16) {
    let w0 = w[o + 0];
    let w1 = w[o + 1];
    let w2 = w[o + 2];
    let w3 = w[o + 3];
    let w4 = w[o + 4];
    let w5 = w[o + 5];
    let w6 = w[o + 6];
    let w7 = w[o + 7];
    let w8 = w[o + 8];
    let w9 = w[o + 9];
    let w10 = w[o + 10];
    let w11 = w[o + 11];
    let w12 = w[o + 12];
    let w13 = w[o + 13];
    let w14 = w[o + 14];
    let w15 = w[o + 15];
    let a = h0;
    let b = h1;
    let c = h2;
    let d = h3;
    let e = h4;
    // 80 rounds unrolled; the five working variables rotate roles instead of being moved
    e = (e + ((a << 5) | (a >>> 27)) + ((b & c) | (~b & d)) + w0 + 0x5a827999) | 0; b = (b << 30) | (b >>> 2);
    d = (d + ((e << 5) | (e >>> 27)) + ((a & b) | (~a & c)) + w1 + 0x5a827999) | 0; a = (a << 30) | (a >>> 2);
    c = (c + ((d << 5) | (d >>> 27)) + ((e & a) | (~e & b)) + w2 + 0x5a827999) | 0; e = (e << 30) | (e >>> 2);
    b = (b + ((c << 5) | (c >>> 27)) + ((d & e) | (~d & a)) + w3 + 0x5a827999) | 0; d = (d << 30) | (d >>> 2);
    a = (a + ((b << 5) | (b >>> 27)) + ((c & d) | (~c & e)) + w4 + 0x5a827999) | 0; c = (c << 30) | (c >>> 2);
    e = (e + ((a << 5) | (a >>> 27)) + ((b & c) | (~b & d)) + w5 + 0x5a827999) | 0; b = (b << 30) | (b >>> 2);
    d = (d + ((e << 5) | (e >>> 27)) + ((a & b) | (~a & c)) + w6 + 0x5a827999) | 0; a = (a << 30) | (a >>> 2);
    c = (c + ((d << 5) | (d >>> 27)) + ((e & a) | (~e & b)) + w7 + 0x5a827999) | 0; e = (e << 30) | (e >>> 2);
    b = (b + ((c << 5) | (c >>> 27)) + ((d & e) | (~d & a)) + w8 + 0x5a827999) | 0; d = (d << 30) | (d >>> 2);
    a = (a + ((b << 5) | (b >>> 27)) + ((c & d) | (~c & e)) + w9 + 0x5a827999) | 0; c = (c << 30) | (c >>> 2);
    e = (e + ((a << 5) | (a >>> 27)) + ((b & c) | (~b & d)) + w10 + 0x5a827999) | 0; b = (b << 30) | (b >>> 2);
    d = (d + ((e << 5) | (e >>> 27)) + ((a & b) | (~a & c)) + w11 + 0x5a827999) | 0; a = (a << 30) | (a >>> 2);
    c = (c + ((d << 5) | (d >>> 27)) + ((e & a) | (~e & b)) + w12 + 0x5a827999) | 0; e = (e << 30) | (e >>> 2);
    b = (b + ((c << 5) | (c >>> 27)) + ((d & e) | (~d & a)) + w13 + 0x5a827999) | 0; d = (d << 30) | (d >>> 2);
    a = (a + ((b << 5) | (b >>> 27)) + ((c & d) | (~c & e)) + w14 + 0x5a827999) | 0; c = (c << 30) | (c >>> 2);
    e = (e + ((a << 5) | (a >>> 27)) + ((b & c) | (~b & d)) + w15 + 0x5a827999) | 0; b = (b << 30) | (b >>> 2);
    w0 = w13 ^ w8 ^ w2 ^ w0; w0 = (w0 << 1) | (w0 >>> 31);
    d = (d + ((e << 5) | (e >>> 27)) + ((a & b) | (~a & c)) + w0 + 0x5a827999) | 0; a = (a << 30) | (a >>> 2);
    w1 = w14 ^ w9 ^ w3 ^ w1; w1 = (w1 << 1) | (w1 >>> 31);
    c = (c + ((d << 5) | (d >>> 27)) + ((e & a) | (~e & b)) + w1 + 0x5a827999) | 0; e = (e << 30) | (e >>> 2);
    w2 = w15 ^ w10 ^ w4 ^ w2; w2 = (w2 << 1) | (w2 >>> 31);
    b = (b + ((c << 5) | (c >>> 27)) + ((d & e) | (~d & a)) + w2 + 0x5a827999) | 0; d = (d << 30) | (d >>> 2);
    w3 = w0 ^ w11 ^ w5 ^ w3; w3 = (w3 << 1) | (w3 >>> 31);
    a = (a + ((b << 5) | (b >>> 27)) + ((c & d) | (~c & e)) + w3 + 0x5a827999) | 0; c = (c << 30) | (c >>> 2);
    w4 = w1 ^ w12 ^ w6 ^ w4; w4 = (w4 << 1) | (w4 >>> 31);
    e = (e + ((a << 5) | (a >>> 27)) + (b ^ c ^ d) + w4 + 0x6ed9eba1) | 0; b = (b << 30) | (b >>> 2);
    w5 = w2 ^ w13 ^ w7 ^ w5; w5 = (w5 << 1) | (w5 >>> 31);
    d = (d + ((e << 5) | (e >>> 27)) + (a ^ b ^ c) + w5 + 0x6ed9eba1) | 0; a = (a << 30) | (a >>> 2);
    w6 = w3 ^ w14 ^ w8 ^ w6; w6 = (w6 << 1) | (w6 >>> 31);
    c = (c + ((d << 5) | (d >>> 27)) + (e ^ a ^ b) + w6 + 0x6ed9eba1) | 0; e = (e << 30) | (e >>> 2);
    w7 = w4 ^ w15 ^ w9 ^ w7; w7 = (w7 << 1) | (w7 >>> 31);
    b = (b + ((c << 5) | (c >>> 27)) + (d ^ e ^ a) + w7 + 0x6ed9eba1) | 0; d = (d << 30) | (d >>> 2);
    w8 = w5 ^ w0 ^ w10 ^ w8; w8 = (w8 << 1) | (w8 >>> 31);
    a = (a + ((b << 5) | (b >>> 27)) + (c ^ d ^ e) + w8 + 0x6ed9eba1) | 0; c = (c << 30) | (c >>> 2);
    w9 = w6 ^ w1 ^ w11 ^ w9; w9 = (w9 << 1) | (w9 >>> 31);
    e = (e + ((a << 5) | (a >>> 27)) + (b ^ c ^ d) + w9 + 0x6ed9eba1) | 0; b = (b << 30) | (b >>> 2);
    w10 = w7 ^ w2 ^ w12 ^ w10; w10 = (w10 << 1) | (w10 >>> 31);
    d = (d + ((e << 5) | (e >>> 27)) + (a ^ b ^ c) + w10 + 0x6ed9eba1) | 0; a = (a << 30) | (a >>> 2);
    w11 = w8 ^ w3 ^ w13 ^ w11; w11 = (w11 << 1) | (w11 >>> 31);
    c = (c + ((d << 5) | (d >>> 27)) + (e ^ a ^ b) + w11 + 0x6ed9eba1) | 0; e = (e << 30) | (e >>> 2);
    w12 = w9 ^ w4 ^ w14 ^ w12; w12 = (w12 << 1) | (w12 >>> 31);
    b = (b + ((c << 5) | (c >>> 27)) + (d ^ e ^ a) + w12 + 0x6ed9eba1) | 0; d = (d << 30) | (d >>> 2);
    w13 = w10 ^ w5 ^ w15 ^ w13; w13 = (w13 << 1) | (w13 >>> 31);
    a = (a + ((b << 5) | (b >>> 27)) + (c ^ d ^ e) + w13 + 0x6ed9eba1) | 0; c = (c << 30) | (c >>> 2);
    w14 = w11 ^ w6 ^ w0 ^ w14; w14 = (w14 << 1) | (w14 >>> 31);
    e = (e + ((a << 5) | (a >>> 27)) + (b ^ c ^ d) + w14 + 0x6ed9eba1) | 0; b = (b << 30) | (b >>> 2);
    w15 = w12 ^ w7 ^ w1 ^ w15; w15 = (w15 << 1) | (w15 >>> 31);
    d = (d + ((e << 5) | (e >>> 27)) + (a ^ b ^ c) + w15 + 0x6ed9eba1) | 0; a = (a << 30) | (a >>> 2);
    w0 = w13 ^ w8 ^ w2 ^ w0; w0 = (w0 << 1) | (w0 >>> 31);
    c = (c + ((d << 5) | (d >>> 27)) + (e ^ a ^ b) + w0 + 0x6ed9eba1) | 0; e = (e << 30) | (e >>> 2);
    w1 = w14 ^ w9 ^ w3 ^ w1; w1 = (w1 << 1) | (w1 >>> 31);
    b = (b + ((c << 5) | (c >>> 27)) + (d ^ e ^ a) + w1 + 0x6ed9eba1) | 0; d = (d << 30) | (d >>> 2);
    w2 = w15 ^ w10 ^ w4 ^ w2; w2 = (w2 << 1) | (w2 >>> 31);
    a = (a + ((b << 5) | (b >>> 27)) + (c ^ d ^ e) + w2 + 0x6ed9eba1) | 0; c = (c << 30) | (c >>> 2);
    w3 = w0 ^ w11 ^ w5 ^ w3; w3 = (w3 << 1) | (w3 >>> 31);
    e = (e + ((a << 5) | (a >>> 27)) + (b ^ c ^ d) + w3 + 0x6ed9eba1) | 0; b = (b << 30) | (b >>> 2);
    w4 = w1 ^ w12 ^ w6 ^ w4; w4 = (w4 << 1) | (w4 >>> 31);
    d = (d + ((e << 5) | (e >>> 27)) + (a ^ b ^ c) + w4 + 0x6ed9eba1) | 0; a = (a << 30) | (a >>> 2);
    w5 = w2 ^ w13 ^ w7 ^ w5; w5 = (w5 << 1) | (w5 >>> 31);
    c = (c + ((d << 5) | (d >>> 27)) + (e ^ a ^ b) + w5 + 0x6ed9eba1) | 0; e = (e << 30) | (e >>> 2);
    w6 = w3 ^ w14 ^ w8 ^ w6; w6 = (w6 << 1) | (w6 >>> 31);
    b = (b + ((c << 5) | (c >>> 27)) + (d ^ e ^ a) + w6 + 0x6ed9eba1) | 0; d = (d << 30) | (d >>> 2);
    w7 = w4 ^ w15 ^ w9 ^ w7; w7 = (w7 << 1) | (w7 >>> 31);
    a = (a + ((b << 5) | (b >>> 27)) + (c ^ d ^ e) + w7 + 0x6ed9eba1) | 0; c = (c << 30) | (c >>> 2);
    w8 = w5 ^ w0 ^ w10 ^ w8; w8 = (w8 << 1) | (w8 >>> 31);
    e = (e + ((a << 5) | (a >>> 27)) + ((b & c) | (b & d) | (c & d)) + w8 + -0x70e44324) | 0; b = (b << 30) | (b >>> 2);
    w9 = w6 ^ w1 ^ w11 ^ w9; w9 = (w9 << 1) | (w9 >>> 31);
    d = (d + ((e << 5) | (e >>> 27)) + ((a & b) | (a & c) | (b & c)) + w9 + -0x70e44324) | 0; a = (a << 30) | (a >>> 2);
    w10 = w7 ^ w2 ^ w12 ^ w10; w10 = (w10 << 1) | (w10 >>> 31);
    c = (c + ((d << 5) | (d >>> 27)) + ((e & a) | (e & b) | (a & b)) + w10 + -0x70e44324) | 0; e = (e << 30) | (e >>> 2);
    w11 = w8 ^ w3 ^ w13 ^ w11; w11 = (w11 << 1) | (w11 >>> 31);
    b = (b + ((c << 5) | (c >>> 27)) + ((d & e) | (d & a) | (e & a)) + w11 + -0x70e44324) | 0; d = (d << 30) | (d >>> 2);
    w12 = w9 ^ w4 ^ w14 ^ w12; w12 = (w12 << 1) | (w12 >>> 31);
    a = (a + ((b << 5) | (b >>> 27)) + ((c & d) | (c & e) | (d & e)) + w12 + -0x70e44324) | 0; c = (c << 30) | (c >>> 2);
    w13 = w10 ^ w5 ^ w15 ^ w13; w13 = (w13 << 1) | (w13 >>> 31);
    e = (e + ((a << 5) | (a >>> 27)) + ((b & c) | (b & d) | (c & d)) + w13 + -0x70e44324) | 0; b = (b << 30) | (b >>> 2);
    w14 = w11 ^ w6 ^ w0 ^ w14; w14 = (w14 << 1) | (w14 >>> 31);
    d = (d + ((e << 5) | (e >>> 27)) + ((a & b) | (a & c) | (b & c)) + w14 + -0x70e44324) | 0; a = (a << 30) | (a >>> 2);
    w15 = w12 ^ w7 ^ w1 ^ w15; w15 = (w15 << 1) | (w15 >>> 31);
    c = (c + ((d << 5) | (d >>> 27)) + ((e & a) | (e & b) | (a & b)) + w15 + -0x70e44324) | 0; e = (e << 30) | (e >>> 2);
    w0 = w13 ^ w8 ^ w2 ^ w0; w0 = (w0 << 1) | (w0 >>> 31);
    b = (b + ((c << 5) | (c >>> 27)) + ((d & e) | (d & a) | (e & a)) + w0 + -0x70e44324) | 0; d = (d << 30) | (d >>> 2);
    w1 = w14 ^ w9 ^ w3 ^ w1; w1 = (w1 << 1) | (w1 >>> 31);
    a = (a + ((b << 5) | (b >>> 27)) + ((c & d) | (c & e) | (d & e)) + w1 + -0x70e44324) | 0; c = (c << 30) | (c >>> 2);
    w2 = w15 ^ w10 ^ w4 ^ w2; w2 = (w2 << 1) | (w2 >>> 31);
    e = (e + ((a << 5) | (a >>> 27)) + ((b & c) | (b & d) | (c & d)) + w2 + -0x70e44324) | 0; b = (b << 30) | (b >>> 2);
    w3 = w0 ^ w11 ^ w5 ^ w3; w3 = (w3 << 1) | (w3 >>> 31);
    d = (d + ((e << 5) | (e >>> 27)) + ((a & b) | (a & c) | (b & c)) + w3 + -0x70e44324) | 0; a = (a << 30) | (a >>> 2);
    w4 = w1 ^ w12 ^ w6 ^ w4; w4 = (w4 << 1) | (w4 >>> 31);
    c = (c + ((d << 5) | (d >>> 27)) + ((e & a) | (e & b) | (a & b)) + w4 + -0x70e44324) | 0; e = (e << 30) | (e >>> 2);
    w5 = w2 ^ w13 ^ w7 ^ w5; w5 = (w5 << 1) | (w5 >>> 31);
    b = (b + ((c << 5) | (c >>> 27)) + ((d & e) | (d & a) | (e & a)) + w5 + -0x70e44324) | 0; d = (d << 30) | (d >>> 2);
    w6 = w3 ^ w14 ^ w8 ^ w6; w6 = (w6 << 1) | (w6 >>> 31);
    a = (a + ((b << 5) | (b >>> 27)) + ((c & d) | (c & e) | (d & e)) + w6 + -0x70e44324) | 0; c = (c << 30) | (c >>> 2);
    w7 = w4 ^ w15 ^ w9 ^ w7; w7 = (w7 << 1) | (w7 >>> 31);
    e = (e + ((a << 5) | (a >>> 27)) + ((b & c) | (b & d) | (c & d)) + w7 + -0x70e44324) | 0; b = (b << 30) | (b >>> 2);
    w8 = w5 ^ w0 ^ w10 ^ w8; w8 = (w8 << 1) | (w8 >>> 31);
    d = (d + ((e << 5) | (e >>> 27)) + ((a & b) | (a & c) | (b & c)) + w8 + -0x70e44324) | 0; a = (a << 30) | (a >>> 2);
    w9 = w6 ^ w1 ^ w11 ^ w9; w9 = (w9 << 1) | (w9 >>> 31);
    c = (c + ((d << 5) | (d >>> 27)) + ((e & a) | (e & b) | (a & b)) + w9 + -0x70e44324) | 0; e = (e << 30) | (e >>> 2);
    w10 = w7 ^ w2 ^ w12 ^ w10; w10 = (w10 << 1) | (w10 >>> 31);
    b = (b + ((c << 5) | (c >>> 27)) + ((d & e) | (d & a) | (e & a)) + w10 + -0x70e44324) | 0; d = (d << 30) | (d >>> 2);
    w11 = w8 ^ w3 ^ w13 ^ w11; w11 = (w11 << 1) | (w11 >>> 31);
    a = (a + ((b << 5) | (b >>> 27)) + ((c & d) | (c & e) | (d & e)) + w11 + -0x70e44324) | 0; c = (c << 30) | (c >>> 2);
    w12 = w9 ^ w4 ^ w14 ^ w12; w12 = (w12 << 1) | (w12 >>> 31);
    e = (e + ((a << 5) | (a >>> 27)) + (b ^ c ^ d) + w12 + -0x359d3e2a) | 0; b = (b << 30) | (b >>> 2);
    w13 = w10 ^ w5 ^ w15 ^ w13; w13 = (w13 << 1) | (w13 >>> 31);
    d = (d + ((e << 5) | (e >>> 27)) + (a ^ b ^ c) + w13 + -0x359d3e2a) | 0; a = (a << 30) | (a >>> 2);
    w14 = w11 ^ w6 ^ w0 ^ w14; w14 = (w14 << 1) | (w14 >>> 31);
    c = (c + ((d << 5) | (d >>> 27)) + (e ^ a ^ b) + w14 + -0x359d3e2a) | 0; e = (e << 30) | (e >>> 2);
    w15 = w12 ^ w7 ^ w1 ^ w15; w15 = (w15 << 1) | (w15 >>> 31);
    b = (b + ((c << 5) | (c >>> 27)) + (d ^ e ^ a) + w15 + -0x359d3e2a) | 0; d = (d << 30) | (d >>> 2);
    w0 = w13 ^ w8 ^ w2 ^ w0; w0 = (w0 << 1) | (w0 >>> 31);
    a = (a + ((b << 5) | (b >>> 27)) + (c ^ d ^ e) + w0 + -0x359d3e2a) | 0; c = (c << 30) | (c >>> 2);
    w1 = w14 ^ w9 ^ w3 ^ w1; w1 = (w1 << 1) | (w1 >>> 31);
    e = (e + ((a << 5) | (a >>> 27)) + (b ^ c ^ d) + w1 + -0x359d3e2a) | 0; b = (b << 30) | (b >>> 2);
    w2 = w15 ^ w10 ^ w4 ^ w2; w2 = (w2 << 1) | (w2 >>> 31);
    d = (d + ((e << 5) | (e >>> 27)) + (a ^ b ^ c) + w2 + -0x359d3e2a) | 0; a = (a << 30) | (a >>> 2);
    w3 = w0 ^ w11 ^ w5 ^ w3; w3 = (w3 << 1) | (w3 >>> 31);
    c = (c + ((d << 5) | (d >>> 27)) + (e ^ a ^ b) + w3 + -0x359d3e2a) | 0; e = (e << 30) | (e >>> 2);
    w4 = w1 ^ w12 ^ w6 ^ w4; w4 = (w4 << 1) | (w4 >>> 31);
    b = (b + ((c << 5) | (c >>> 27)) + (d ^ e ^ a) + w4 + -0x359d3e2a) | 0; d = (d << 30) | (d >>> 2);
    w5 = w2 ^ w13 ^ w7 ^ w5; w5 = (w5 << 1) | (w5 >>> 31);
    a = (a + ((b << 5) | (b >>> 27)) + (c ^ d ^ e) + w5 + -0x359d3e2a) | 0; c = (c << 30) | (c >>> 2);
    w6 = w3 ^ w14 ^ w8 ^ w6; w6 = (w6 << 1) | (w6 >>> 31);
    e = (e + ((a << 5) | (a >>> 27)) + (b ^ c ^ d) + w6 + -0x359d3e2a) | 0; b = (b << 30) | (b >>> 2);
    w7 = w4 ^ w15 ^ w9 ^ w7; w7 = (w7 << 1) | (w7 >>> 31);
    d = (d + ((e << 5) | (e >>> 27)) + (a ^ b ^ c) + w7 + -0x359d3e2a) | 0; a = (a << 30) | (a >>> 2);
    w8 = w5 ^ w0 ^ w10 ^ w8; w8 = (w8 << 1) | (w8 >>> 31);
    c = (c + ((d << 5) | (d >>> 27)) + (e ^ a ^ b) + w8 + -0x359d3e2a) | 0; e = (e << 30) | (e >>> 2);
    w9 = w6 ^ w1 ^ w11 ^ w9; w9 = (w9 << 1) | (w9 >>> 31);
    b = (b + ((c << 5) | (c >>> 27)) + (d ^ e ^ a) + w9 + -0x359d3e2a) | 0; d = (d << 30) | (d >>> 2);
    w10 = w7 ^ w2 ^ w12 ^ w10; w10 = (w10 << 1) | (w10 >>> 31);
    a = (a + ((b << 5) | (b >>> 27)) + (c ^ d ^ e) + w10 + -0x359d3e2a) | 0; c = (c << 30) | (c >>> 2);
    w11 = w8 ^ w3 ^ w13 ^ w11; w11 = (w11 << 1) | (w11 >>> 31);
    e = (e + ((a << 5) | (a >>> 27)) + (b ^ c ^ d) + w11 + -0x359d3e2a) | 0; b = (b << 30) | (b >>> 2);
    w12 = w9 ^ w4 ^ w14 ^ w12; w12 = (w12 << 1) | (w12 >>> 31);
    d = (d + ((e << 5) | (e >>> 27)) + (a ^ b ^ c) + w12 + -0x359d3e2a) | 0; a = (a << 30) | (a >>> 2);
    w13 = w10 ^ w5 ^ w15 ^ w13; w13 = (w13 << 1) | (w13 >>> 31);
    c = (c + ((d << 5) | (d >>> 27)) + (e ^ a ^ b) + w13 + -0x359d3e2a) | 0; e = (e << 30) | (e >>> 2);
    w14 = w11 ^ w6 ^ w0 ^ w14; w14 = (w14 << 1) | (w14 >>> 31);
    b = (b + ((c << 5) | (c >>> 27)) + (d ^ e ^ a) + w14 + -0x359d3e2a) | 0; d = (d << 30) | (d >>> 2);
    w15 = w12 ^ w7 ^ w1 ^ w15; w15 = (w15 << 1) | (w15 >>> 31);
    a = (a + ((b << 5) | (b >>> 27)) + (c ^ d ^ e) + w15 + -0x359d3e2a) | 0; c = (c << 30) | (c >>> 2);
    h0 = (h0 + a) | 0;
    h1 = (h1 + b) | 0;
    h2 = (h2 + c) | 0;
    h3 = (h3 + d) | 0;
    h4 = (h4 + e) | 0;
  }
  return ((h0 >>> 0) * 1048576 + (h1 >>> 12)) / 4503599627370496;
}
