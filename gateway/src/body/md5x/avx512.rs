//! The MD5 compression function over 16 independent messages at once, one
//! per 32-bit lane of AVX-512 registers (the multi-buffer technique of
//! Intel's ISA-L and MinIO's `md5-simd`). Each lane is a separate MD5
//! state; the rounds are RFC 1321's, written once for all 16.

use std::arch::x86_64::*;

/// Lanes per call.
pub const LANES: usize = 16;

/// MD5 states of 16 messages, word-major: `a[lane]` is lane's A.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct States {
    pub a: [u32; LANES],
    pub b: [u32; LANES],
    pub c: [u32; LANES],
    pub d: [u32; LANES],
}

impl States {
    pub fn set(&mut self, lane: usize, state: [u32; 4]) {
        [self.a[lane], self.b[lane], self.c[lane], self.d[lane]] = state;
    }

    pub fn get(&self, lane: usize) -> [u32; 4] {
        [self.a[lane], self.b[lane], self.c[lane], self.d[lane]]
    }
}

/// Whether this CPU runs [`compress`].
pub fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
}

/// Compresses `blocks` 64-byte blocks of each lane whose bit is set in
/// `active`, starting at that lane's `ptrs` entry; inactive lanes keep
/// their state and their pointer is not read.
///
/// # Safety
/// The CPU has AVX-512F ([`available`]), and for every active lane
/// `ptrs[lane]` points to `blocks * 64` readable bytes.
#[target_feature(enable = "avx512f")]
pub unsafe fn compress(states: &mut States, ptrs: &[*const u8; LANES], active: u16, blocks: usize) {
    static ZERO: [u8; 64] = [0; 64];
    let mut ptrs = *ptrs;
    for (lane, p) in ptrs.iter_mut().enumerate() {
        if active & (1 << lane) == 0 {
            *p = ZERO.as_ptr();
        }
    }
    let mut a = _mm512_load_si512(states.a.as_ptr().cast());
    let mut b = _mm512_load_si512(states.b.as_ptr().cast());
    let mut c = _mm512_load_si512(states.c.as_ptr().cast());
    let mut d = _mm512_load_si512(states.d.as_ptr().cast());
    for block in 0..blocks {
        let mut rows = [_mm512_setzero_si512(); LANES];
        for (lane, row) in rows.iter_mut().enumerate() {
            // Inactive lanes read ZERO again and again; theirs is discarded.
            let offset = if active & (1 << lane) == 0 {
                0
            } else {
                block * 64
            };
            *row = _mm512_loadu_si512(ptrs[lane].add(offset).cast());
        }
        let m = transpose(rows);
        let [ra, rb, rc, rd] = rounds([a, b, c, d], &m);
        a = _mm512_mask_add_epi32(a, active, a, ra);
        b = _mm512_mask_add_epi32(b, active, b, rb);
        c = _mm512_mask_add_epi32(c, active, c, rc);
        d = _mm512_mask_add_epi32(d, active, d, rd);
    }
    _mm512_store_si512(states.a.as_mut_ptr().cast(), a);
    _mm512_store_si512(states.b.as_mut_ptr().cast(), b);
    _mm512_store_si512(states.c.as_mut_ptr().cast(), c);
    _mm512_store_si512(states.d.as_mut_ptr().cast(), d);
}

/// `rows[lane]` holds the 16 little-endian words of one lane's block;
/// the result's `[w]` holds word `w` of every lane.
#[target_feature(enable = "avx512f")]
fn transpose(r: [__m512i; LANES]) -> [__m512i; LANES] {
    // Within each 128-bit quarter: pairs of rows, then groups of four.
    // After this, x[4g + k] holds, in quarter q, word 4q + k of rows
    // 4g..4g+4.
    let mut x = [_mm512_setzero_si512(); LANES];
    for g in 0..4 {
        let (r0, r1, r2, r3) = (r[4 * g], r[4 * g + 1], r[4 * g + 2], r[4 * g + 3]);
        let lo01 = _mm512_unpacklo_epi32(r0, r1);
        let hi01 = _mm512_unpackhi_epi32(r0, r1);
        let lo23 = _mm512_unpacklo_epi32(r2, r3);
        let hi23 = _mm512_unpackhi_epi32(r2, r3);
        x[4 * g] = _mm512_unpacklo_epi64(lo01, lo23);
        x[4 * g + 1] = _mm512_unpackhi_epi64(lo01, lo23);
        x[4 * g + 2] = _mm512_unpacklo_epi64(hi01, hi23);
        x[4 * g + 3] = _mm512_unpackhi_epi64(hi01, hi23);
    }
    // Then a 4x4 transpose of quarters across the four groups: word
    // 4q + k of all rows is quarter q of x[k], x[4 + k], x[8 + k], x[12 + k].
    let mut out = [_mm512_setzero_si512(); LANES];
    for k in 0..4 {
        let (x0, x1, x2, x3) = (x[k], x[4 + k], x[8 + k], x[12 + k]);
        let y0 = _mm512_shuffle_i32x4::<0x44>(x0, x1);
        let y1 = _mm512_shuffle_i32x4::<0xEE>(x0, x1);
        let y2 = _mm512_shuffle_i32x4::<0x44>(x2, x3);
        let y3 = _mm512_shuffle_i32x4::<0xEE>(x2, x3);
        out[k] = _mm512_shuffle_i32x4::<0x88>(y0, y2);
        out[4 + k] = _mm512_shuffle_i32x4::<0xDD>(y0, y2);
        out[8 + k] = _mm512_shuffle_i32x4::<0x88>(y1, y3);
        out[12 + k] = _mm512_shuffle_i32x4::<0xDD>(y1, y3);
    }
    out
}

// Boolean functions as `vpternlogd` truth tables over (x, y, z):
// F = x ? y : z, G = z ? x : y (as F of (z, x, y)), H = x ^ y ^ z,
// I = y ^ (x | !z).
const SELECT: i32 = 0xCA;
const XOR3: i32 = 0x96;
const I_FN: i32 = 0x39;

macro_rules! step {
    ($imm:expr, $x:expr, $y:expr, $z:expr, $a:ident, $b:ident, $m:expr, $k:expr, $s:expr) => {
        let f = _mm512_ternarylogic_epi32::<$imm>($x, $y, $z);
        let t = _mm512_add_epi32(_mm512_add_epi32($a, $m), _mm512_set1_epi32($k as i32));
        $a = _mm512_add_epi32($b, _mm512_rol_epi32::<$s>(_mm512_add_epi32(t, f)));
    };
}

macro_rules! ff {
    ($a:ident, $b:ident, $c:ident, $d:ident, $m:expr, $k:expr, $s:expr) => {
        step!(SELECT, $b, $c, $d, $a, $b, $m, $k, $s);
    };
}
macro_rules! gg {
    ($a:ident, $b:ident, $c:ident, $d:ident, $m:expr, $k:expr, $s:expr) => {
        step!(SELECT, $d, $b, $c, $a, $b, $m, $k, $s);
    };
}
macro_rules! hh {
    ($a:ident, $b:ident, $c:ident, $d:ident, $m:expr, $k:expr, $s:expr) => {
        step!(XOR3, $b, $c, $d, $a, $b, $m, $k, $s);
    };
}
macro_rules! ii {
    ($a:ident, $b:ident, $c:ident, $d:ident, $m:expr, $k:expr, $s:expr) => {
        step!(I_FN, $b, $c, $d, $a, $b, $m, $k, $s);
    };
}

/// RFC 1321's 64 steps on the working variables.
#[target_feature(enable = "avx512f")]
fn rounds(state: [__m512i; 4], m: &[__m512i; LANES]) -> [__m512i; 4] {
    let [mut a, mut b, mut c, mut d] = state;
    // Round 1.
    ff!(a, b, c, d, m[0], 0xd76aa478u32, 7);
    ff!(d, a, b, c, m[1], 0xe8c7b756u32, 12);
    ff!(c, d, a, b, m[2], 0x242070dbu32, 17);
    ff!(b, c, d, a, m[3], 0xc1bdceeeu32, 22);
    ff!(a, b, c, d, m[4], 0xf57c0fafu32, 7);
    ff!(d, a, b, c, m[5], 0x4787c62au32, 12);
    ff!(c, d, a, b, m[6], 0xa8304613u32, 17);
    ff!(b, c, d, a, m[7], 0xfd469501u32, 22);
    ff!(a, b, c, d, m[8], 0x698098d8u32, 7);
    ff!(d, a, b, c, m[9], 0x8b44f7afu32, 12);
    ff!(c, d, a, b, m[10], 0xffff5bb1u32, 17);
    ff!(b, c, d, a, m[11], 0x895cd7beu32, 22);
    ff!(a, b, c, d, m[12], 0x6b901122u32, 7);
    ff!(d, a, b, c, m[13], 0xfd987193u32, 12);
    ff!(c, d, a, b, m[14], 0xa679438eu32, 17);
    ff!(b, c, d, a, m[15], 0x49b40821u32, 22);
    // Round 2.
    gg!(a, b, c, d, m[1], 0xf61e2562u32, 5);
    gg!(d, a, b, c, m[6], 0xc040b340u32, 9);
    gg!(c, d, a, b, m[11], 0x265e5a51u32, 14);
    gg!(b, c, d, a, m[0], 0xe9b6c7aau32, 20);
    gg!(a, b, c, d, m[5], 0xd62f105du32, 5);
    gg!(d, a, b, c, m[10], 0x02441453u32, 9);
    gg!(c, d, a, b, m[15], 0xd8a1e681u32, 14);
    gg!(b, c, d, a, m[4], 0xe7d3fbc8u32, 20);
    gg!(a, b, c, d, m[9], 0x21e1cde6u32, 5);
    gg!(d, a, b, c, m[14], 0xc33707d6u32, 9);
    gg!(c, d, a, b, m[3], 0xf4d50d87u32, 14);
    gg!(b, c, d, a, m[8], 0x455a14edu32, 20);
    gg!(a, b, c, d, m[13], 0xa9e3e905u32, 5);
    gg!(d, a, b, c, m[2], 0xfcefa3f8u32, 9);
    gg!(c, d, a, b, m[7], 0x676f02d9u32, 14);
    gg!(b, c, d, a, m[12], 0x8d2a4c8au32, 20);
    // Round 3.
    hh!(a, b, c, d, m[5], 0xfffa3942u32, 4);
    hh!(d, a, b, c, m[8], 0x8771f681u32, 11);
    hh!(c, d, a, b, m[11], 0x6d9d6122u32, 16);
    hh!(b, c, d, a, m[14], 0xfde5380cu32, 23);
    hh!(a, b, c, d, m[1], 0xa4beea44u32, 4);
    hh!(d, a, b, c, m[4], 0x4bdecfa9u32, 11);
    hh!(c, d, a, b, m[7], 0xf6bb4b60u32, 16);
    hh!(b, c, d, a, m[10], 0xbebfbc70u32, 23);
    hh!(a, b, c, d, m[13], 0x289b7ec6u32, 4);
    hh!(d, a, b, c, m[0], 0xeaa127fau32, 11);
    hh!(c, d, a, b, m[3], 0xd4ef3085u32, 16);
    hh!(b, c, d, a, m[6], 0x04881d05u32, 23);
    hh!(a, b, c, d, m[9], 0xd9d4d039u32, 4);
    hh!(d, a, b, c, m[12], 0xe6db99e5u32, 11);
    hh!(c, d, a, b, m[15], 0x1fa27cf8u32, 16);
    hh!(b, c, d, a, m[2], 0xc4ac5665u32, 23);
    // Round 4.
    ii!(a, b, c, d, m[0], 0xf4292244u32, 6);
    ii!(d, a, b, c, m[7], 0x432aff97u32, 10);
    ii!(c, d, a, b, m[14], 0xab9423a7u32, 15);
    ii!(b, c, d, a, m[5], 0xfc93a039u32, 21);
    ii!(a, b, c, d, m[12], 0x655b59c3u32, 6);
    ii!(d, a, b, c, m[3], 0x8f0ccc92u32, 10);
    ii!(c, d, a, b, m[10], 0xffeff47du32, 15);
    ii!(b, c, d, a, m[1], 0x85845dd1u32, 21);
    ii!(a, b, c, d, m[8], 0x6fa87e4fu32, 6);
    ii!(d, a, b, c, m[15], 0xfe2ce6e0u32, 10);
    ii!(c, d, a, b, m[6], 0xa3014314u32, 15);
    ii!(b, c, d, a, m[13], 0x4e0811a1u32, 21);
    ii!(a, b, c, d, m[4], 0xf7537e82u32, 6);
    ii!(d, a, b, c, m[11], 0xbd3af235u32, 10);
    ii!(c, d, a, b, m[2], 0x2ad7d2bbu32, 15);
    ii!(b, c, d, a, m[9], 0xeb86d391u32, 21);
    [a, b, c, d]
}
