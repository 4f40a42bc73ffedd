//! Stores of a vector's first lanes without a masked store: AMD's Zen runs
//! `vmaskmovps` to memory as a slow sequence, and a load of the stored values
//! soon after waits for it. Plain 16-, 8- and 4-byte stores write the same
//! values.

use std::arch::x86_64::*;

/// Stores the first `count < 4` lanes of `v` at `at`.
///
/// # Safety
/// The CPU has AVX; `at` is valid for `count` writes.
#[target_feature(enable = "avx")]
pub(crate) unsafe fn store_first4(at: *mut f32, count: usize, v: __m128) {
    let (mut at, mut v) = (at, v);
    // SAFETY: each store writes lanes below `count` only.
    unsafe {
        if count >= 2 {
            _mm_store_sd(at.cast(), _mm_castps_pd(v));
            v = _mm_movehl_ps(v, v);
            at = at.add(2);
        }
        if count % 2 == 1 {
            _mm_store_ss(at, v);
        }
    }
}

/// Stores the first `count < 8` lanes of `v` at `at`.
///
/// # Safety
/// The CPU has AVX; `at` is valid for `count` writes.
#[target_feature(enable = "avx")]
pub(crate) unsafe fn store_first8(at: *mut f32, count: usize, v: __m256) {
    let low = _mm256_castps256_ps128(v);
    // SAFETY: the caller's contract; the stores write lanes below `count`.
    unsafe {
        if count >= 4 {
            _mm_storeu_ps(at, low);
            store_first4(at.add(4), count - 4, _mm256_extractf128_ps::<1>(v));
        } else {
            store_first4(at, count, low);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_exactly_the_first_lanes() {
        if !is_x86_feature_detected!("avx") {
            fedcluster_testkit::skip(
                "kernels::tail::tests::stores_exactly_the_first_lanes",
                "needs a CPU with AVX",
            );
            return;
        }
        let lanes: [f32; 8] = std::array::from_fn(|l| l as f32 + 1.0);
        for count in 0..8 {
            let mut out = [-1.0f32; 9];
            // SAFETY: AVX is present; `out` holds 9 values.
            unsafe {
                let v = _mm256_loadu_ps(lanes.as_ptr());
                store_first8(out.as_mut_ptr(), count, v);
            }
            for (l, &o) in out.iter().enumerate() {
                assert_eq!(
                    o,
                    if l < count { lanes[l] } else { -1.0 },
                    "count {count} lane {l}"
                );
            }
            if count < 4 {
                let mut out = [-1.0f32; 5];
                // SAFETY: as above.
                unsafe { store_first4(out.as_mut_ptr(), count, _mm_loadu_ps(lanes.as_ptr())) };
                for (l, &o) in out.iter().enumerate() {
                    assert_eq!(
                        o,
                        if l < count { lanes[l] } else { -1.0 },
                        "count {count} lane {l}"
                    );
                }
            }
        }
    }
}
