//! [`exp_minus`]: `(v - m).exp()` of every entry, `f32::exp`'s bits, four
//! at a time (a softmax's exponentials).
//!
//! Rust's `f32::exp` calls the C library's `expf`. glibc's (2.27 and later,
//! from Arm's optimized-routines) works in `f64`: `x · 32/ln 2 = k + r` with
//! `k` an integer, `2^(k/32)` from a 32-entry table with `k / 32` added to
//! the entry's exponent bits, and a cubic in `r`; on a CPU with AVX2 and FMA
//! glibc runs its FMA build, which fuses four of those operations. The AVX2
//! body here is that computation on four lanes (the same constants, table
//! and fused operations), so it gives glibc's bits; the inputs glibc treats
//! apart (`|x| >= 88`, NaN) go to `f32::exp` itself.
//!
//! Whether the platform's `expf` is that function is checked once per
//! process, against probes spread over every range of inputs: where it is
//! not (another C library, another build), every entry goes to `f32::exp`,
//! so the results are the platform's either way.

/// `v[i] <- (v[i] - m).exp()` for every entry, the bits of `f32::exp`.
pub fn exp_minus(v: &mut [f32], m: f32) {
    #[cfg(target_arch = "x86_64")]
    if avx2::matches_platform() {
        // SAFETY: `matches_platform` holds only where the CPU has AVX2 and FMA.
        unsafe { avx2::exp_minus(v, m) };
        return;
    }
    exp_each(v, m);
}

/// Whether [`exp_minus`] runs its vector body on this machine (for the
/// tests; nothing else needs to know).
#[cfg(test)]
fn exp_is_vectorised() -> bool {
    #[cfg(target_arch = "x86_64")]
    return avx2::matches_platform();
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// `(v[i] - m).exp()` entry by entry.
fn exp_each(v: &mut [f32], m: f32) {
    for x in v {
        *x = (*x - m).exp();
    }
}

/// Inputs that test every path of `expf`: a stride through all bit patterns
/// (every sign and exponent, so the special cases too), and a finer one
/// through `[-104, 89]`, where the table and the cubic do the work.
fn probes() -> Vec<f32> {
    let everywhere = (0..u32::MAX).step_by(65_537).map(f32::from_bits);
    let working = (0..20_000).map(|i| -104.0 + 193.0 * i as f32 / 20_000.0);
    let edges = [
        0.0,
        -0.0,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        88.0,
        -88.0,
        88.72283,
        88.72284,
        -103.27893,
        -103.97208,
        -103.972084,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ];
    everywhere.chain(working).chain(edges).collect()
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;
    use std::sync::OnceLock;

    /// `2^(i/32)`'s bits less `i << 47`, for `i` in `0..32` (glibc's
    /// `__exp2f_data.tab`).
    static TABLE: [u64; 32] = [
        0x3ff0000000000000,
        0x3fefd9b0d3158574,
        0x3fefb5586cf9890f,
        0x3fef9301d0125b51,
        0x3fef72b83c7d517b,
        0x3fef54873168b9aa,
        0x3fef387a6e756238,
        0x3fef1e9df51fdee1,
        0x3fef06fe0a31b715,
        0x3feef1a7373aa9cb,
        0x3feedea64c123422,
        0x3feece086061892d,
        0x3feebfdad5362a27,
        0x3feeb42b569d4f82,
        0x3feeab07dd485429,
        0x3feea47eb03a5585,
        0x3feea09e667f3bcd,
        0x3fee9f75e8ec5f74,
        0x3feea11473eb0187,
        0x3feea589994cce13,
        0x3feeace5422aa0db,
        0x3feeb737b0cdc5e5,
        0x3feec49182a3f090,
        0x3feed503b23e255d,
        0x3feee89f995ad3ad,
        0x3feeff76f2fb5e47,
        0x3fef199bdd85529c,
        0x3fef3720dcef9069,
        0x3fef5818dcfba487,
        0x3fef7c97337b9b5f,
        0x3fefa4afa2a490da,
        0x3fefd0765b6e4540,
    ];
    /// `32 / ln 2`.
    const INV_LN2_N: f64 = f64::from_bits(0x40471547652b82fe);
    /// `1.5 · 2^52`: adding it rounds to an integer, kept in the low bits.
    const SHIFT: f64 = f64::from_bits(0x4338000000000000);
    /// The cubic's coefficients, scaled by `32^-3`, `32^-2` and `32^-1`.
    const C0: f64 = f64::from_bits(0x3ebc6af84b912394);
    const C1: f64 = f64::from_bits(0x3f2ebfce50fac4f3);
    const C2: f64 = f64::from_bits(0x3f962e42ff0c52d6);
    /// glibc computes inputs whose sign-cleared top 12 bits exceed this
    /// (`|x| >= 88`, infinities, NaN) apart.
    const LAST_PLAIN_TOP: i32 = 0x42a;

    /// Whether the CPU has AVX2 and FMA and this module's body gives
    /// `f32::exp`'s bits on every probe (checked once).
    pub(super) fn matches_platform() -> bool {
        static MATCHES: OnceLock<bool> = OnceLock::new();
        *MATCHES.get_or_init(|| {
            if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")) {
                return false;
            }
            let mut probes = super::probes();
            let want: Vec<u32> = probes.iter().map(|x| x.exp().to_bits()).collect();
            // SAFETY: the CPU has AVX2 and FMA.
            unsafe { exp_minus(&mut probes, 0.0) };
            probes.iter().map(|x| x.to_bits()).eq(want)
        })
    }

    /// [`super::exp_minus`]'s vector body: four lanes at a time, the last
    /// one to three entries under a mask (vector loads straight from `v`:
    /// no copy whose stores a load would wait on).
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn exp_minus(v: &mut [f32], m: f32) {
        let m = _mm_set1_ps(m);
        let full = v.len() - v.len() % 4;
        let at = v.as_mut_ptr();
        for i in (0..full).step_by(4) {
            // SAFETY: `i + 4 <= v.len()`.
            unsafe {
                let x = _mm_sub_ps(_mm_loadu_ps(at.add(i)), m);
                _mm_storeu_ps(at.add(i), exp4(x));
            }
        }
        if full < v.len() {
            // SAFETY: the masked lanes are the last `v.len() - full` entries.
            unsafe {
                let mask = _mm_loadu_si128(TAIL_MASKS[v.len() - full].as_ptr().cast());
                // The lanes off the mask at 0, on glibc's plain path.
                let x = _mm_sub_ps(_mm_maskload_ps(at.add(full), mask), m);
                let x = _mm_and_ps(x, _mm_castsi128_ps(mask));
                super::super::tail::store_first4(at.add(full), v.len() - full, exp4(x));
            }
        }
    }

    /// Lane `l` of row `t` on for `l < t`.
    static TAIL_MASKS: [[i32; 4]; 4] =
        [[0, 0, 0, 0], [-1, 0, 0, 0], [-1, -1, 0, 0], [-1, -1, -1, 0]];

    /// Four exponentials: glibc's plain path on four lanes, or `f32::exp`
    /// lane by lane if one of them takes glibc's special path.
    #[target_feature(enable = "avx2,fma")]
    fn exp4(x: __m128) -> __m128 {
        let top = _mm_and_si128(
            _mm_srli_epi32::<20>(_mm_castps_si128(x)),
            _mm_set1_epi32(0x7ff),
        );
        if _mm_movemask_epi8(_mm_cmpgt_epi32(top, _mm_set1_epi32(LAST_PLAIN_TOP))) != 0 {
            let mut lanes = [0.0f32; 4];
            // SAFETY: `lanes` holds four floats.
            unsafe { _mm_storeu_ps(lanes.as_mut_ptr(), x) };
            let lanes = lanes.map(f32::exp);
            // SAFETY: as above.
            return unsafe { _mm_loadu_ps(lanes.as_ptr()) };
        }
        let xd = _mm256_cvtps_pd(x);
        let (inv_ln2_n, shift) = (_mm256_set1_pd(INV_LN2_N), _mm256_set1_pd(SHIFT));
        // `x · 32/ln 2 = k + r`, `k` rounded to nearest in the low bits of
        // `shifted`.
        let shifted = _mm256_fmadd_pd(inv_ln2_n, xd, shift);
        let k = _mm256_castpd_si256(shifted);
        let r = _mm256_fmsub_pd(inv_ln2_n, xd, _mm256_sub_pd(shifted, shift));
        // `s = 2^(k/32)`: the table entry of `k mod 32`, `k` shifted into
        // its exponent.
        // Four table loads rather than a gather (microcoded on AMD's Zen).
        let mut lanes = [0u64; 4];
        // SAFETY: `lanes` holds four 64-bit integers.
        unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), k) };
        let [e0, e1, e2, e3] = lanes.map(|k| TABLE[(k % 32) as usize] as i64);
        let entry = _mm256_setr_epi64x(e0, e1, e2, e3);
        let s = _mm256_castsi256_pd(_mm256_add_epi64(entry, _mm256_slli_epi64::<47>(k)));
        // `s · (C0 r^3 + C1 r^2 + C2 r + 1)` as glibc's FMA build groups it.
        let z = _mm256_fmadd_pd(r, _mm256_set1_pd(C0), _mm256_set1_pd(C1));
        let r2 = _mm256_mul_pd(r, r);
        let y = _mm256_fmadd_pd(r, _mm256_set1_pd(C2), _mm256_set1_pd(1.0));
        let y = _mm256_mul_pd(_mm256_fmadd_pd(z, r2, y), s);
        _mm256_cvtpd_ps(y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    #[test]
    fn every_entry_gets_the_bits_of_f32_exp() {
        // Every length up to 13 (full blocks and each tail), blocks that mix
        // glibc's special inputs with plain ones, and shifts that send the
        // tail's unused lanes far out.
        let mut inputs = probes();
        inputs.extend([-1.5, 89.0, 0.25, -200.0, f32::NAN, 3.0, -0.5, 1e-30]);
        for m in [0.0, 1.5, -300.0, 250.0, f32::NAN, f32::INFINITY] {
            for len in 0..14 {
                for start in (0..inputs.len() - len).step_by(997) {
                    let mut v = inputs[start..start + len].to_vec();
                    let want: Vec<f32> = v.iter().map(|x| (x - m).exp()).collect();
                    exp_minus(&mut v, m);
                    assert_eq!(bits(&v), bits(&want), "from {start}, length {len}, m {m}");
                }
            }
        }
    }

    #[test]
    fn a_finer_sweep_of_the_softmax_range_matches_too() {
        // The shifted logits of a softmax lie in [-104, 0]: every 61st
        // float there (about 18 million).
        let (from, to) = ((-104.0f32).to_bits(), (-0.0f32).to_bits());
        let mut v: Vec<f32> = (to..=from).step_by(61).map(f32::from_bits).collect();
        let want = bits(&v.iter().map(|x| x.exp()).collect::<Vec<_>>());
        exp_minus(&mut v, 0.0);
        assert_eq!(bits(&v), want);
    }

    #[test]
    fn the_vector_body_runs_where_glibc_and_the_cpu_allow() {
        #[cfg(all(target_arch = "x86_64", target_env = "gnu"))]
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            assert!(
                exp_is_vectorised(),
                "glibc's expf on an AVX2+FMA CPU should match the vector body"
            );
            return;
        }
        fedcluster_testkit::skip(
            "kernels::expf::tests::the_vector_body_runs_where_glibc_and_the_cpu_allow",
            "the vector expf check needs x86-64, glibc, AVX2 and FMA",
        );
    }
}
