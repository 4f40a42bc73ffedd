//! 2x2 max-pooling (stride 2, odd edges dropped) of channels-last maps and its
//! backward passes, for [`super::Cnn`] and [`crate::resnet9::ResNet9`]. The
//! loops run along the channels, which lie next to each other in memory, so
//! they vectorise.

/// 2x2 max-pooling of `n` maps `h x w x c`; writes the maxima into `out` and,
/// for the backward pass, the flat index in `a` of each maximum into `idx`
/// (as `f32`, exact below 2^24). The first of equal maxima wins, and a NaN
/// never does (a window of NaNs gives `-inf` at the window's first value).
pub(crate) fn pool_forward(
    h: usize,
    w: usize,
    c: usize,
    n: usize,
    a: &[f32],
    out: &mut [f32],
    idx: &mut [f32],
) {
    let (ph, pw) = (h / 2, w / 2);
    let mut outs = out.chunks_exact_mut(c).zip(idx.chunks_exact_mut(c));
    for i in 0..n {
        let base = i * h * w * c;
        for py in 0..ph {
            for px in 0..pw {
                let (o, ix) = outs.next().expect("out sized for every window");
                let at = |dy: usize, dx: usize| base + ((2 * py + dy) * w + 2 * px + dx) * c;
                let starts = [at(0, 0), at(0, 1), at(1, 0), at(1, 1)];
                let rows = starts.map(|s| &a[s..s + c]);
                let first = starts[0] as f32;
                // Offsets of the other three corners from the first, exact in f32.
                let off = starts.map(|s| (s - starts[0]) as f32);
                for ch in 0..c {
                    let mut best = f32::NEG_INFINITY;
                    let mut at = 0.0f32;
                    for q in 0..4 {
                        let v = rows[q][ch];
                        if v > best {
                            best = v;
                            at = off[q];
                        }
                    }
                    o[ch] = best;
                    ix[ch] = first + at + ch as f32;
                }
            }
        }
    }
}

/// Routes pooled gradients `dout` to the maxima recorded by [`pool_forward`]
/// (`da` overwritten): the plain version of [`pool_relu_backward`], which the
/// networks use.
#[cfg(test)]
pub(crate) fn pool_backward(dout: &[f32], idx: &[f32], da: &mut [f32]) {
    da.fill(0.0);
    for (g, at) in dout.iter().zip(idx) {
        da[*at as usize] += g;
    }
}

/// [`pool_backward`] then the backward pass of the ReLU before the pooling,
/// in one pass: a maximum `pooled` that is not positive passes no gradient.
/// The same bits as the two passes one after the other (for finite values).
pub(crate) fn pool_relu_backward(dout: &[f32], idx: &[f32], pooled: &[f32], da: &mut [f32]) {
    da.fill(0.0);
    for ((g, at), p) in dout.iter().zip(idx).zip(pooled) {
        if *p > 0.0 {
            da[*at as usize] += g;
        }
    }
}
