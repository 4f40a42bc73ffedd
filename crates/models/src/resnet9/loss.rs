//! ResNet9's losses over the workspace's buffers: training mode (the
//! batch's statistics) with its gradient, the running statistics' update
//! after a training step, and evaluation (the running statistics) in chunks
//! of [`EVAL_CHUNK`] images. Both normalise the images first when the
//! network's `normalize` is on, and smooth the labels when its
//! `label_smoothing` is.

use fedcluster_core::train::augment;
use fedcluster_core::train::smoothing::smoothed_cross_entropy;
use fedcluster_core::{Batch, Workspace};

use super::block::{self, Mode};
use super::pass::{self, Plan, Scratch};
use super::{EVAL_CHUNK, ResNet9};
use crate::logistic::{count_argmax_matches, loss_and_softmax_minus_onehot, sample_loss};

impl ResNet9 {
    /// The mean loss over `x`, `y` with the batch's statistics (training
    /// mode, the loss [`Model::loss_grad`] differentiates), and its gradient
    /// into `grad` when given. The batch's statistics stay in `ws` for
    /// [`ResNet9::update_running`].
    pub(super) fn batch_pass(
        &self,
        params: &[f32],
        x: &[f32],
        y: &[u32],
        grad: Option<&mut [f32]>,
        ws: &mut Workspace,
    ) -> f64 {
        let (blocks, n, k) = (self.blocks(), y.len(), self.classes);
        let plan = Plan::new(&blocks, n, k);
        let backward = grad.is_some();
        let scratch = |len: usize| if backward { len } else { 0 };
        let [acts, cols, dz, r, p, q, normed] = ws.slices([
            plan.len,
            plan.cols,
            scratch(plan.conv),
            scratch(plan.widest),
            scratch(plan.widest),
            scratch(plan.widest),
            self.normalized_len(x),
        ]);
        let x = self.normalized(x, normed);
        let head_at = self.head_at();
        let head = &params[head_at..];
        let scale = self.variant.logit_scale();
        pass::forward(
            &blocks,
            &plan,
            params,
            head,
            x,
            n,
            acts,
            cols,
            Mode::Batch,
            scale,
        );
        let mut loss = 0.0;
        let Some(grad) = grad else {
            let mut g = vec![0.0; k];
            for (zi, &yi) in acts[plan.z.clone()].chunks_exact(k).zip(y) {
                loss += self.sample_loss(zi, yi, &mut g);
            }
            return loss / n as f64;
        };
        let mut dlogits = acts[plan.z.clone()].to_vec();
        if self.label_smoothing > 0.0 {
            let z = &acts[plan.z.clone()];
            loss = n as f64 * smoothed_cross_entropy(z, y, k, self.label_smoothing, &mut dlogits);
        } else {
            let inv = 1.0 / n as f32;
            for (zi, &yi) in dlogits.chunks_exact_mut(k).zip(y) {
                loss += loss_and_softmax_minus_onehot(zi, yi);
                zi.iter_mut().for_each(|v| *v *= inv);
            }
        }
        let s = Scratch { cols, dz, r, p, q };
        pass::backward(
            &blocks, &plan, params, head_at, x, n, acts, &dlogits, grad, s, scale,
        );
        loss / n as f64
    }

    /// Moves the running statistics towards those of the last
    /// [`ResNet9::batch_pass`] over `n` images in `ws`.
    pub(super) fn update_running(&self, params: &mut [f32], n: usize, ws: &Workspace) {
        let blocks = self.blocks();
        let plan = Plan::new(&blocks, n, self.classes);
        let acts = &ws.bufs[0][..plan.len];
        for (i, b) in blocks.iter().enumerate() {
            let (mean, var) = plan.stats(acts, i);
            block::running_update(b, params, mean, var, n * b.conv.positions());
        }
    }

    /// The summed loss and the number correct over `batch`, with the running
    /// statistics, in chunks of [`EVAL_CHUNK`].
    pub(super) fn evaluate(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        y: &[u32],
        ws: &mut Workspace,
    ) -> (f64, usize) {
        let (blocks, d, k) = (self.blocks(), batch.dim, self.classes);
        let head_at = self.head_at();
        let (mut loss, mut hits) = (0.0, 0);
        for start in (0..y.len()).step_by(EVAL_CHUNK) {
            let end = (start + EVAL_CHUNK).min(y.len());
            let n = end - start;
            let plan = Plan::new(&blocks, n, k);
            let x = &batch.x[start * d..end * d];
            let [acts, cols, normed] = ws.slices([plan.len, plan.cols, self.normalized_len(x)]);
            let x = self.normalized(x, normed);
            let head = &params[head_at..];
            pass::forward(
                &blocks,
                &plan,
                params,
                head,
                x,
                n,
                acts,
                cols,
                Mode::Running,
                self.variant.logit_scale(),
            );
            let z = &acts[plan.z.clone()];
            let mut g = vec![0.0; k];
            loss += z
                .chunks_exact(k)
                .zip(&y[start..end])
                .map(|(zi, &yi)| self.sample_loss(zi, yi, &mut g))
                .sum::<f64>();
            hits += count_argmax_matches(z, k, &y[start..end]);
        }
        (loss, hits)
    }
}

impl ResNet9 {
    /// Values the normalised copy of `x` needs (0 when `normalize` is off).
    fn normalized_len(&self, x: &[f32]) -> usize {
        if self.normalize.is_some() { x.len() } else { 0 }
    }

    /// `x` as the first convolution sees it: normalised into `buf` when
    /// `normalize` is on, else `x` itself.
    fn normalized<'a>(&self, x: &'a [f32], buf: &'a mut [f32]) -> &'a [f32] {
        let Some(n) = self.normalize else {
            return x;
        };
        buf.copy_from_slice(x);
        augment::normalize(buf, &n.mean[..n.channels], &n.std[..n.channels]);
        buf
    }

    /// One sample's loss from its logits `z`: the cross-entropy, against the
    /// smoothed target when `label_smoothing` is on (`g`: `classes` values of
    /// scratch).
    fn sample_loss(&self, z: &[f32], y: u32, g: &mut [f32]) -> f64 {
        if self.label_smoothing > 0.0 {
            smoothed_cross_entropy(z, &[y], self.classes, self.label_smoothing, g)
        } else {
            sample_loss(z, y)
        }
    }
}
