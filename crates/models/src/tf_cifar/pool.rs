//! TF's `max_pool` with a 3x3 window, stride 2 and `SAME` padding on
//! channels-last maps: `ceil(h / 2) x ceil(w / 2)` outputs, the window of
//! output `o` covering rows `2o − top .. 2o − top + 3` (`top` = half of the
//! padding `max(2 (out − 1) + 3 − h, 0)`, rounded down) cut at the map's
//! edges (padding never wins), and its backward pass.

/// The window's side.
const WINDOW: usize = 3;

/// Output side and leading padding of a side of `len` values.
pub fn out_and_pad(len: usize) -> (usize, usize) {
    let out = len.div_ceil(2);
    let pad = (2 * out.saturating_sub(1) + WINDOW).saturating_sub(len);
    (out, pad / 2)
}

/// The input rows (or columns) of output `o` on a side of `len` values.
fn span(o: usize, len: usize, top: usize) -> std::ops::Range<usize> {
    let start = (2 * o).saturating_sub(top);
    let end = (2 * o + WINDOW).saturating_sub(top).min(len);
    start..end
}

/// Pools `n` maps `x` (`h x w x c`) into `y`, writing into `idx` the index
/// within its map of the input each output came from (the first largest).
#[allow(clippy::too_many_arguments)]
pub fn forward(h: usize, w: usize, c: usize, n: usize, x: &[f32], y: &mut [f32], idx: &mut [f32]) {
    let ((oh, top), (ow, left)) = (out_and_pad(h), out_and_pad(w));
    for i in 0..n {
        let map = &x[i * h * w * c..(i + 1) * h * w * c];
        let out = i * oh * ow * c;
        for oy in 0..oh {
            for ox in 0..ow {
                let at = out + (oy * ow + ox) * c;
                y[at..at + c].fill(f32::NEG_INFINITY);
                for iy in span(oy, h, top) {
                    for ix in span(ox, w, left) {
                        let from = (iy * w + ix) * c;
                        for ch in 0..c {
                            let v = map[from + ch];
                            if v > y[at + ch] {
                                y[at + ch] = v;
                                idx[at + ch] = (from + ch) as f32;
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The backward pass of [`forward`]: `dx` (the input maps' shape) gets each
/// output's gradient `dy` at the input it came from, zero elsewhere.
pub fn backward(h: usize, w: usize, c: usize, n: usize, dy: &[f32], idx: &[f32], dx: &mut [f32]) {
    dx.fill(0.0);
    let (per_in, per_out) = (h * w * c, dy.len() / n.max(1));
    for i in 0..n {
        let map = &mut dx[i * per_in..(i + 1) * per_in];
        let outs = i * per_out..(i + 1) * per_out;
        for (g, &at) in dy[outs.clone()].iter().zip(&idx[outs]) {
            map[at as usize] += g;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_padding_follows_tf() {
        assert_eq!(out_and_pad(24), (12, 0));
        assert_eq!(out_and_pad(12), (6, 0));
        assert_eq!(out_and_pad(5), (3, 1));
        assert_eq!(out_and_pad(1), (1, 1));
        // A 4x4 map of 1..=16: windows rows/cols {0,1,2} and {2,3}.
        let x: Vec<f32> = (1..=16).map(|v| v as f32).collect();
        let (mut y, mut idx) = ([0.0; 4], [0.0; 4]);
        forward(4, 4, 1, 1, &x, &mut y, &mut idx);
        assert_eq!(y, [11.0, 12.0, 15.0, 16.0]);
        assert_eq!(idx, [10.0, 11.0, 14.0, 15.0]);
        let mut dx = [9.0; 16];
        backward(4, 4, 1, 1, &[1.0, 2.0, 3.0, 4.0], &idx, &mut dx);
        let mut want = [0.0; 16];
        want[10..12].copy_from_slice(&[1.0, 2.0]);
        want[14..16].copy_from_slice(&[3.0, 4.0]);
        assert_eq!(dx, want);
        // An odd side: one padding row on top, so output 0 covers rows {0, 1}.
        let x: Vec<f32> = (1..=5).map(|v| v as f32).collect();
        let (mut y, mut idx) = ([0.0; 3], [0.0; 3]);
        forward(5, 1, 1, 1, &x, &mut y, &mut idx);
        assert_eq!(y, [2.0, 4.0, 5.0]);
    }
}
