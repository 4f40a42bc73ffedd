//! The whole network's forward and backward passes over `n` images, in
//! buffers carved from the workspace: the activations of every block in
//! forward order ([`Plan`]), so that a block's input always lies before its
//! outputs, then the backward pass's scratch.
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
//! head    (h7)       -> g = global max, z = 0.125 g Wᵀ
//! ```

use std::ops::Range;

use super::block::{self, Block, Mode, Saved};
use crate::cnn::layers::{dense, input_grad, weight_grad};

/// Scale of the logits (Page's `Mul(0.125)`).
pub(super) const LOGIT_SCALE: f32 = 0.125;

/// Ranges of one pass's activations in one buffer, in forward order.
pub(super) struct Plan {
    /// Per block: normalised values, ReLU output, pooled output, pooling
    /// indices, batch mean, batch variance.
    blocks: Vec<[Range<usize>; 6]>,
    h3: Range<usize>,
    h7: Range<usize>,
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
        let (mut h3, mut h7) = (0..0, 0..0);
        for (i, b) in blocks.iter().enumerate() {
            let pooled = if b.pool { n * b.out_len() } else { 0 };
            ranges.push([
                take(n * b.conv_len()),
                take(n * b.conv_len()),
                take(pooled),
                take(pooled),
                take(b.cout),
                take(b.cout),
            ]);
            match i {
                3 => h3 = take(n * b.out_len()),
                7 => h7 = take(n * b.out_len()),
                _ => {}
            }
        }
        let last = blocks[7].cout;
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
            h3,
            h7,
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

    /// Block `i`'s input range (`None`: the images).
    fn input(&self, i: usize) -> Option<Range<usize>> {
        let b = &self.blocks;
        match i {
            0 => None,
            1 => Some(b[0][1].clone()),
            2 => Some(b[1][2].clone()),
            3 => Some(b[2][1].clone()),
            4 => Some(self.h3.clone()),
            5 => Some(b[4][2].clone()),
            6 => Some(b[5][2].clone()),
            _ => Some(b[6][1].clone()),
        }
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
/// `acts` and the logits into `acts[plan.z]`.
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
) {
    for (i, b) in blocks.iter().enumerate() {
        let (input, mut saved) = plan.split(acts, x, i);
        block::forward(b, params, input, n, cols, &mut saved, mode);
        match i {
            3 => residual(
                acts,
                plan.blocks[1][2].clone(),
                plan.blocks[3][1].clone(),
                plan.h3.clone(),
            ),
            7 => residual(
                acts,
                plan.blocks[5][2].clone(),
                plan.blocks[7][1].clone(),
                plan.h7.clone(),
            ),
            _ => {}
        }
    }
    let c = blocks[7].cout;
    let (before, after) = acts.split_at_mut(plan.g.start);
    let h7 = &before[plan.h7.clone()];
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
    dense(z, g, head, c, LOGIT_SCALE);
}

/// Gradient buffers of the backward pass.
pub(super) struct Scratch<'a> {
    pub cols: &'a mut [f32],
    pub dz: &'a mut [f32],
    pub r: &'a mut [f32],
    pub p: &'a mut [f32],
    pub q: &'a mut [f32],
}

/// The backward pass after [`forward`] in training mode, from the logits'
/// gradient `dlogits` (already divided by the batch size): every trainable
/// tensor's gradient into `grad` (`head_at` is where the linear layer's
/// starts), zeros for the running statistics.
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
) {
    let c = blocks[7].cout;
    let head = &params[head_at..];
    weight_grad(
        &mut grad[head_at..],
        dlogits,
        &acts[plan.g.clone()],
        n,
        LOGIT_SCALE,
    );
    // dg into dz's front, then scattered to the maxima of h7 in r.
    let dg = &mut s.dz[..n * c];
    input_grad(dg, dlogits, head, n, LOGIT_SCALE);
    let r = &mut s.r[..plan.h7.len()];
    r.fill(0.0);
    for (d, at) in dg.iter().zip(&acts[plan.gidx.clone()]) {
        r[*at as usize] += d;
    }
    for b in blocks {
        grad[b.vector(2).start..b.end()].fill(0.0);
    }
    // Block by block, backwards: block i's input gradient (len(i) values) is
    // block i - 1's output gradient; p and q take turns, and r holds the
    // gradient at h7, then at h3, which the residual connections add back.
    let len = |i: usize| n * blocks[i].conv.in_h * blocks[i].conv.in_w * blocks[i].conv.in_c;
    let mut step = |i: usize, dout: &[f32], dx: Option<&mut [f32]>| {
        let (input, saved) = plan.split(acts, x, i);
        block::backward(
            &blocks[i], params, input, n, &saved, dout, grad, s.cols, s.dz, dx,
        );
    };
    step(7, &r[..], Some(&mut s.p[..len(7)]));
    step(6, &s.p[..len(7)], Some(&mut s.q[..len(6)]));
    add(&mut s.q[..len(6)], r);
    step(5, &s.q[..len(6)], Some(&mut s.p[..len(5)]));
    step(4, &s.p[..len(5)], Some(&mut s.r[..len(4)]));
    step(3, &s.r[..len(4)], Some(&mut s.p[..len(3)]));
    step(2, &s.p[..len(3)], Some(&mut s.q[..len(2)]));
    add(&mut s.q[..len(2)], &s.r[..len(4)]);
    step(1, &s.q[..len(2)], Some(&mut s.p[..len(1)]));
    step(0, &s.p[..len(1)], None);
}

/// `d += e`.
fn add(d: &mut [f32], e: &[f32]) {
    for (u, v) in d.iter_mut().zip(e) {
        *u += v;
    }
}
