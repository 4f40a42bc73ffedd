//! The element-wise loops that run over every reply of every round
//! ([`all_finite`], [`axpy`], [`add_scaled_f64`]) and over a client's features
//! ([`all_abs_below`]), each compiled for AVX-512 and AVX2 (without FMA, so they
//! multiply then add as the portable body does: the same bits) and chosen at run
//! time; and [`prefetch`] and [`prefetch_item`], cache hints.

/// `fn $name(args)`, running `$body` compiled for AVX-512 where the CPU has
/// it, else for AVX2, else as it is: the loops below, each written once.
macro_rules! dispatched {
    ($(#[$attr:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)? => $body:ident) => {
        $(#[$attr])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                fn avx512($($arg: $ty),*) $(-> $ret)? {
                    $body($($arg),*)
                }
                #[target_feature(enable = "avx2")]
                fn avx2($($arg: $ty),*) $(-> $ret)? {
                    $body($($arg),*)
                }
                if std::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU supports the feature the function is compiled for.
                    return unsafe { avx512($($arg),*) };
                }
                if std::is_x86_feature_detected!("avx2") {
                    // SAFETY: as above.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $body($($arg),*)
        }
    };
}

dispatched! {
    /// Whether every entry is finite. With the sign cleared, a finite `f32`'s bits
    /// are below `0x7f80_0000`, so adding `0x0080_0000` sets bit 31 exactly for
    /// infinities and NaNs; one OR per block of 256 collects it, branch-free.
    pub fn all_finite(x: &[f32]) -> bool => all_finite_body
}

#[inline(always)]
fn all_finite_body(x: &[f32]) -> bool {
    x.chunks(256).all(|block| {
        let flags = block.iter().fold(0u32, |acc, v| {
            acc | (v.to_bits() & 0x7fff_ffff).wrapping_add(0x0080_0000)
        });
        flags & 0x8000_0000 == 0
    })
}

/// Whether every entry's magnitude is below `bound` (a positive finite
/// number; NaN never is): one compare of the sign-cleared bits per entry,
/// ORed together, branch-free as [`all_finite`].
pub fn all_abs_below(x: &[f32], bound: f32) -> bool {
    assert!(bound > 0.0 && bound.is_finite(), "all_abs_below bound");
    all_bits_below(x, bound.to_bits())
}

dispatched! {
    fn all_bits_below(x: &[f32], bound: u32) -> bool => all_abs_below_body
}

/// For non-negative floats the order of the bits is the order of the values,
/// and NaNs' bits lie above every finite bound's. With both below `2^31`,
/// `bound - 1 - bits` sets bit 31 exactly when `bits >= bound`.
#[inline(always)]
fn all_abs_below_body(x: &[f32], bound: u32) -> bool {
    let last = bound - 1;
    x.chunks(256).all(|block| {
        let flags = block.iter().fold(0u32, |acc, v| {
            acc | last.wrapping_sub(v.to_bits() & 0x7fff_ffff)
        });
        flags & 0x8000_0000 == 0
    })
}

dispatched! {
    /// `y <- y + a * x`, rounded after the product and after the sum on every path.
    pub fn axpy(a: f32, x: &[f32], y: &mut [f32]) => axpy_body
}

#[inline(always)]
fn axpy_body(a: f32, x: &[f32], y: &mut [f32]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += a * xi;
    }
}

/// `sums <- sums + w * f64(x)`, the `f64` accumulation of a weighted sum of
/// models: a product then a sum per entry on every path, so the same bits.
pub fn add_scaled_f64(w: f64, x: &[f32], sums: &mut [f64]) {
    assert_eq!(x.len(), sums.len(), "add_scaled_f64 lengths");
    add_scaled_f64_unchecked(w, x, sums);
}

dispatched! {
    fn add_scaled_f64_unchecked(w: f64, x: &[f32], sums: &mut [f64]) => add_scaled_f64_body
}

#[inline(always)]
fn add_scaled_f64_body(w: f64, x: &[f32], sums: &mut [f64]) {
    for (s, v) in sums.iter_mut().zip(x) {
        *s += w * f64::from(*v);
    }
}

/// Asks the CPU to fetch `data` into its caches ahead of use: one prefetch
/// hint per 64-byte line it touches. A hint only: no result depends on it.
pub fn prefetch<T>(data: &[T]) {
    prefetch_bytes(data.as_ptr().cast(), std::mem::size_of_val(data));
}

/// [`prefetch`] for the `T` at `item`, which need not be valid (it is never
/// read): the address of a value a `&mut` borrow holds, say.
pub fn prefetch_item<T>(item: *const T) {
    prefetch_bytes(item.cast(), std::mem::size_of::<T>());
}

fn prefetch_bytes(start: *const u8, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    if bytes > 0 {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        const LINE: usize = 64;
        let first = start as usize & !(LINE - 1);
        let last = (start as usize).wrapping_add(bytes - 1) & !(LINE - 1);
        for line in (first..=last).step_by(LINE) {
            let at = start.wrapping_add(line.wrapping_sub(start as usize));
            // SAFETY: SSE is part of x86-64; a prefetch never faults and
            // reads nothing the program sees, whatever the address.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(at.cast()) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (start, bytes);
}

#[cfg(test)]
mod tests {
    use super::super::tests::data;
    use super::*;

    #[test]
    fn axpy_all_finite_and_add_scaled_agree_with_their_portable_bodies() {
        for len in [0, 1, 7, 255, 256, 1001] {
            let x = data(len, 0.5);
            let (mut fast, mut portable) = (data(len, 2.0), data(len, 2.0));
            axpy(-0.37, &x, &mut fast);
            axpy_body(-0.37, &x, &mut portable);
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&fast), bits(&portable), "len {len}");
            let want: Vec<f32> = data(len, 2.0)
                .iter()
                .zip(&x)
                .map(|(y, x)| y + -0.37 * x)
                .collect();
            assert_eq!(bits(&fast), bits(&want), "len {len}");
            assert_eq!(all_finite(&fast), all_finite_body(&fast));
            let largest = fast.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            for bound in [largest * 0.5, largest, largest * 1.01, 1e30] {
                if bound > 0.0 {
                    let want = fast.iter().all(|v| v.abs() < bound);
                    assert_eq!(all_abs_below(&fast, bound), want, "len {len} {bound}");
                    assert_eq!(all_abs_below_body(&fast, bound.to_bits()), want);
                }
            }
            let mut sums = data(len, 3.0)
                .iter()
                .map(|v| f64::from(*v) * 1e3)
                .collect::<Vec<_>>();
            let mut portable_sums = sums.clone();
            let want: Vec<u64> = sums
                .iter()
                .zip(&x)
                .map(|(s, v)| (s + 0.3 * f64::from(*v)).to_bits())
                .collect();
            add_scaled_f64(0.3, &x, &mut sums);
            add_scaled_f64_body(0.3, &x, &mut portable_sums);
            let bits64 = |v: &[f64]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits64(&sums), bits64(&portable_sums), "len {len}");
            assert_eq!(bits64(&sums), want, "len {len}");
            if len > 0 {
                fast[len / 2] = f32::NAN;
                assert!(!all_finite(&fast) && !all_finite_body(&fast));
                assert!(!all_abs_below(&fast, 1e30));
            }
        }
    }
}
