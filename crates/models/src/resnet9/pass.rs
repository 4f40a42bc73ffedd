//! The whole network's forward and backward passes over `n` images, in
//! buffers carved from the workspace: the activations of every block in
//! forward order ([`Plan`]), so that a block's input always lies before its
//! outputs, then the backward pass's scratch. Block `i` reads block `i − 1`'s
//! output (the images for block 0); a block's output is its pooled values,
//! else its ReLU's, plus, at the end of a residual pair, the output of the
//! block two before. Page's network (the SR-FCA code's differs in its
//! shapes and in that block 7 is plain and its residual sum is `p4 + a6`):
//!
//! ```text
//! block 0 (x)        -> a0
//! block 1 (a0)       -> a1, pooled p1
//! block 2 (p1)       -> a2
//! block 3 (a2)       -> a3;   h3 = p1 + a3
//! block 4 (h3)       -> a4, pooled p4
//! block 5 (p4)       -> a5, pooled p5
//! block 6 (p5)       -> a6
//! block 7 (a6)       -> a7;   h7 = p5 + a7
//! head    (h7)       -> g = global max, z = scale · g Wᵀ
//! ```

use std::ops::Range;

use super::block::{self, Block, Mode, Saved};
use crate::cnn::layers::{dense, input_grad, weight_grad};

/// Ranges of one pass's activations in one buffer, in forward order.
pub(super) struct Plan {
    /// Per block: normalised values, ReLU output, pooled output, pooling
    /// indices, batch mean, batch variance.
    blocks: Vec<[Range<usize>; 6]>,
    /// Per block: its residual sum (empty unless it ends a residual pair).
    sums: Vec<Range<usize>>,
    g: Range<usize>,
    gidx: Range<usize>,
    /// The logits.
    pub z: Range<usize>,
    /// Length of the buffer.
    pub len: usize,
    /// Length of the largest block input or output (the gradient buffers).
    pub widest: usize,
    /// Scratch of the convolutions (`Block::scratch_len`).
    pub cols: usize,
    /// Length of the largest convolution output.
    pub conv: usize,
}

impl Plan {
    /// The plan of `blocks` over `n` images, `classes` logits each.
    pub fn new(blocks: &[Block], n: usize, classes: usize) -> Self {
        let mut at = 0;
        let mut take = |len: usize| {
            at += len;
            at - len..at
        };
        let mut ranges = Vec::with_capacity(blocks.len());
        let mut sums = Vec::with_capacity(blocks.len());
        for b in blocks {
            let pooled = if b.pool { n * b.out_len() } else { 0 };
            ranges.push([
                take(n * b.conv_len()),
                take(n * b.conv_len()),
                take(pooled),
                take(pooled),
                take(b.cout),
                take(b.cout),
            ]);
            sums.push(if b.residual {
                take(n * b.out_len())
            } else {
                0..0
            });
        }
        let last = blocks.last().map_or(0, |b| b.cout);
        let (g, gidx, z) = (take(n * last), take(n * last), take(n * classes));
        let widest = blocks
            .iter()
            .map(|b| {
                let conv = &b.conv;
                (conv.in_h * conv.in_w * conv.in_c).max(b.out_len())
            })
            .max()
            .unwrap_or(0);
        Plan {
            blocks: ranges,
            sums,
            g,
            gidx,
            z,
            len: at,
            widest: n * widest,
            cols: blocks.iter().map(|b| b.scratch_len(n)).max().unwrap_or(0),
            conv: n * blocks.iter().map(Block::conv_len).max().unwrap_or(0),
        }
    }

    /// The batch mean and variance of block `i`.
    pub fn stats<'a>(&self, acts: &'a [f32], i: usize) -> (&'a [f32], &'a [f32]) {
        let r = &self.blocks[i];
        (&acts[r[4].clone()], &acts[r[5].clone()])
    }

    /// Block `i`'s output range: its residual sum, else its pooled values,
    /// else its ReLU's.
    fn output(&self, i: usize) -> Range<usize> {
        let r = &self.blocks[i];
        if !self.sums[i].is_empty() {
            self.sums[i].clone()
        } else if !r[2].is_empty() {
            r[2].clone()
        } else {
            r[1].clone()
        }
    }

    /// Block `i`'s input range (`None`: the images).
    fn input(&self, i: usize) -> Option<Range<usize>> {
        i.checked_sub(1).map(|j| self.output(j))
    }

    /// Block `i`'s input and its saved buffers in `acts`.
    fn split<'a>(&self, acts: &'a mut [f32], x: &'a [f32], i: usize) -> (&'a [f32], Saved<'a>) {
        let r = &self.blocks[i];
        let (before, after) = acts.split_at_mut(r[0].start);
        let input = match self.input(i) {
            None => x,
            Some(range) => &before[range],
        };
        let mut rest = &mut after[..r[5].end - r[0].start];
        let mut next = |range: &Range<usize>| {
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(range.len());
            rest = tail;
            head
        };
        let saved = Saved {
            xhat: next(&r[0]),
            a: next(&r[1]),
            pooled: next(&r[2]),
            idx: next(&r[3]),
            mean: next(&r[4]),
            var: next(&r[5]),
        };
        (input, saved)
    }
}

/// `out = p + a` (the residual connection), `out` after both in `acts`.
fn residual(acts: &mut [f32], p: Range<usize>, a: Range<usize>, out: Range<usize>) {
    let (before, after) = acts.split_at_mut(out.start);
    for ((o, u), v) in after[..out.len()]
        .iter_mut()
        .zip(&before[p])
        .zip(&before[a])
    {
        *o = u + v;
    }
}

/// The forward pass over `n` images `x`: every block's activations into
/// `acts` and the logits, `scale · g Wᵀ`, into `acts[plan.z]`.
#[allow(clippy::too_many_arguments)]
pub(super) fn forward(
    blocks: &[Block],
    plan: &Plan,
    params: &[f32],
    head: &[f32],
    x: &[f32],
    n: usize,
    acts: &mut [f32],
    cols: &mut [f32],
    mode: Mode,
    scale: f32,
) {
    for (i, b) in blocks.iter().enumerate() {
        let (input, mut saved) = plan.split(acts, x, i);
        block::forward(b, params, input, n, cols, &mut saved, mode);
        if b.residual {
            let a = plan.blocks[i][1].clone();
            residual(acts, plan.output(i - 2), a, plan.sums[i].clone());
        }
    }
    let last = blocks.len() - 1;
    let c = blocks[last].cout;
    let (before, after) = acts.split_at_mut(plan.g.start);
    let h7 = &before[plan.output(last)];
    let (g, rest) = after.split_at_mut(plan.g.len());
    let (gidx, rest) = rest.split_at_mut(plan.gidx.len());
    let per_image = h7.len() / n.max(1);
    for (i, image) in h7.chunks_exact(per_image.max(1)).enumerate().take(n) {
        for ch in 0..c {
            let mut best = (f32::NEG_INFINITY, 0usize);
            for (p, v) in image.iter().skip(ch).step_by(c).enumerate() {
                if *v > best.0 {
                    best = (*v, p);
                }
            }
            g[i * c + ch] = best.0;
            gidx[i * c + ch] = (i * per_image + best.1 * c + ch) as f32;
        }
    }
    let z = &mut rest[..plan.z.len()];
    dense(z, g, head, c, scale);
}

/// Gradient buffers of the backward pass.
pub(super) struct Scratch<'a> {
    pub cols: &'a mut [f32],
    pub dz: &'a mut [f32],
    pub r: &'a mut [f32],
    pub p: &'a mut [f32],
    pub q: &'a mut [f32],
}

/// The backward pass after [`forward`] in training mode (logits scaled by
/// `scale`), from the logits' gradient `dlogits` (already divided by the
/// batch size): every trainable tensor's gradient into `grad` (`head_at` is
/// where the linear layer's starts), zeros for the running statistics.
#[allow(clippy::too_many_arguments)]
pub(super) fn backward(
    blocks: &[Block],
    plan: &Plan,
    params: &[f32],
    head_at: usize,
    x: &[f32],
    n: usize,
    acts: &mut [f32],
    dlogits: &[f32],
    grad: &mut [f32],
    s: Scratch<'_>,
    scale: f32,
) {
    let last = blocks.len() - 1;
    let c = blocks[last].cout;
    let head = &params[head_at..];
    weight_grad(
        &mut grad[head_at..],
        dlogits,
        &acts[plan.g.clone()],
        n,
        scale,
    );
    // dg into dz's front, then scattered to the maxima of the last output in r.
    let dg = &mut s.dz[..n * c];
    input_grad(dg, dlogits, head, n, scale);
    let r = &mut s.r[..plan.output(last).len()];
    r.fill(0.0);
    for (d, at) in dg.iter().zip(&acts[plan.gidx.clone()]) {
        r[*at as usize] += d;
    }
    for b in blocks {
        grad[b.vector(2).start..b.end()].fill(0.0);
    }
    // Block by block, backwards: block i's input gradient (len(i) values) is
    // block i − 1's output gradient. Three buffers take turns: the current
    // output gradient, the next, and, from the end of a residual pair until
    // the gradient at the pair's input is known, the gradient at the pair's
    // output, which the residual connection adds back there.
    let len = |i: usize| n * blocks[i].conv.in_h * blocks[i].conv.in_w * blocks[i].conv.in_c;
    let mut bufs = [s.p, s.q, s.r];
    let (mut cur, mut pending) = (2, None);
    for i in (0..blocks.len()).rev() {
        if blocks[i].residual {
            pending = Some((cur, i - 2));
        }
        let next = (0..3)
            .find(|&b| b != cur && pending.is_none_or(|(p, _)| p != b))
            .expect("three buffers");
        let out_len = n * blocks[i].out_len();
        let (dout, dx) = pair(&mut bufs, cur, next);
        let dx = if i > 0 { Some(&mut dx[..len(i)]) } else { None };
        let (input, saved) = plan.split(acts, x, i);
        block::backward(
            &blocks[i],
            params,
            input,
            n,
            &saved,
            &dout[..out_len],
            grad,
            s.cols,
            s.dz,
            dx,
        );
        if let Some((p, target)) = pending
            && i > 0
            && target == i - 1
        {
            let (sum, d) = pair(&mut bufs, p, next);
            add(&mut d[..len(i)], &sum[..len(i)]);
            pending = None;
        }
        cur = next;
    }
}

/// Buffer `read` to read and buffer `write` to write, of three.
fn pair<'a>(
    bufs: &'a mut [&mut [f32]; 3],
    read: usize,
    write: usize,
) -> (&'a [f32], &'a mut [f32]) {
    let [a, b, c] = bufs;
    match (read, write) {
        (0, 1) => (a, b),
        (0, 2) => (a, c),
        (1, 0) => (b, a),
        (1, 2) => (b, c),
        (2, 0) => (c, a),
        (2, 1) => (c, b),
        _ => unreachable!("two different buffers of three"),
    }
}

/// `d += e`.
fn add(d: &mut [f32], e: &[f32]) {
    for (u, v) in d.iter_mut().zip(e) {
        *u += v;
    }
}
