//! The flat minibatch training loop: SGD (momentum, weight decay) and Adam
//! (Kingma, Ba, ICLR 2015, Algorithm 1; the local trainer of the SR-FCA public
//! code) over [`Model::loss_grad`], with optional image augmentation.
//!
//! Each epoch visits the client's points in an order drawn from the client's
//! stream, in minibatches of `batch_size` (the last one may be smaller); the
//! minibatch rows are gathered into scratch buffers so that the model sees an
//! ordinary contiguous [`Batch`]. With an [`Augmentation`], each gathered image
//! then gets a crop offset and a flip, and its jitter (brightness, contrast,
//! Cutout) when configured, drawn from the same stream, in row order.
//! The loop itself is [`run_steps`] (in `run`): [`flat_steps`] runs it over
//! [`Model::loss_grad`], and the models with their own CPU loop
//! ([`Model::train_minibatch`]: the TF CIFAR network's staged images, the
//! native ResNet9's running statistics, the carried-state LSTM's state) run
//! it with their own [`MinibatchPass`]. A model that trains on its own device
//! follows the same order and draws. Every step goes through
//! [`update_coordinates`], which applies the spec's step-size schedule and
//! its decay of chosen tensors ([`MinibatchSpec::schedule`],
//! [`MinibatchSpec::decay`]).

use rand::Rng as _;
use rand::seq::SliceRandom;

use super::{
    ADAM_BETA1, ADAM_BETA2, ADAM_EPS, Augmentation, LayerDecay, MinibatchOptimizer, MinibatchSpec,
    OptimizerState,
};
use crate::model::{Batch, Model, Targets, Workspace};
use crate::rng::Rng;

mod run;
pub use run::{Gather, MinibatchPass, add_pull, run_steps};

/// `steps` minibatch steps of `spec` on `batch` from `params`, continuing
/// `state`: the model's own ([`Model::train_minibatch`]) where it has one,
/// else [`flat_steps`].
#[allow(clippy::too_many_arguments)]
pub fn steps(
    model: &dyn Model,
    params: &mut [f32],
    batch: Batch<'_>,
    spec: &MinibatchSpec<'_>,
    steps: usize,
    state: &mut OptimizerState,
    rng: &mut Rng,
    ws: &mut Workspace,
) -> f64 {
    match model.train_minibatch(params, batch, spec, steps, state, rng, ws) {
        Some(loss) => loss,
        None => flat_steps(model, params, batch, spec, steps, state, rng, ws),
    }
}

/// The minibatch order of one epoch: `order` shuffled by `rng` (the loop
/// reshuffles whenever an epoch ends).
pub fn shuffle(order: &mut [usize], rng: &mut Rng) {
    order.shuffle(rng);
}

/// The next minibatch's rows: the `size` rows of `order` after `cursor`, the
/// order reshuffled by `rng` whenever an epoch ends (start with `cursor` at the
/// end, so the first call shuffles).
pub fn next_rows<'o>(
    order: &'o mut [usize],
    cursor: &mut usize,
    size: usize,
    rng: &mut Rng,
) -> &'o [usize] {
    let n = order.len();
    if *cursor >= n {
        shuffle(order, rng);
        *cursor = 0;
    }
    let start = *cursor;
    *cursor = (start + size).min(n);
    &order[start..*cursor]
}

/// Appends the features of `rows` of `batch` to `x`, each image augmented with
/// its own draws from `rng` (in row order) when there is an augmentation: its
/// crop offset and flip ([`augmentation_draw`]), then its jitter
/// ([`Augmentation::jitter_draw`]) when the augmentation has any.
pub fn gather_features(
    batch: Batch<'_>,
    rows: &[usize],
    augmentation: Option<&Augmentation>,
    rng: &mut Rng,
    x: &mut Vec<f32>,
) {
    let d = batch.dim;
    for &r in rows {
        let src = &batch.x[r * d..(r + 1) * d];
        match augmentation {
            None => x.extend_from_slice(src),
            Some(aug) => {
                let (dy, dx, flip) = augmentation_draw(aug, rng);
                let at = x.len();
                x.resize(at + d, 0.0);
                aug.apply(src, &mut x[at..], dy, dx, flip);
                if aug.jitters() {
                    let draw = aug.jitter_draw(rng);
                    aug.jitter_in_place(&mut x[at..], draw);
                }
            }
        }
    }
}

/// One augmentation draw for one image: the crop offset `(dy, dx)` and the flip.
pub fn augmentation_draw(aug: &Augmentation, rng: &mut Rng) -> (isize, isize, bool) {
    let p = aug.crop_padding as i64;
    let (dy, dx) = if p > 0 {
        (
            rng.random_range(-p..=p) as isize,
            rng.random_range(-p..=p) as isize,
        )
    } else {
        (0, 0)
    };
    let flip = aug.flip && rng.random::<bool>();
    (dy, dx, flip)
}

/// `steps` steps of `spec` through [`Model::loss_grad`] on gathered
/// minibatches ([`run_steps`] over [`FlatPass`]). Returns the mean loss (the
/// model's alone) of the first minibatch, non-finite (and `params` left at
/// the last finite iterate) if training diverged.
#[allow(clippy::too_many_arguments)]
pub fn flat_steps(
    model: &dyn Model,
    params: &mut [f32],
    batch: Batch<'_>,
    spec: &MinibatchSpec<'_>,
    steps: usize,
    state: &mut OptimizerState,
    rng: &mut Rng,
    ws: &mut Workspace,
) -> f64 {
    let mut pass = FlatPass {
        model,
        batch,
        augmentation: model.augmentation(),
    };
    run_steps(&mut pass, params, spec, steps, state, rng, ws)
}

/// The flat loop's step: the rows gathered as they are (each image
/// augmented when the model has an augmentation), through
/// [`Model::loss_grad`].
struct FlatPass<'m, 'b> {
    model: &'m dyn Model,
    batch: Batch<'b>,
    augmentation: Option<Augmentation>,
}

impl MinibatchPass for FlatPass<'_, '_> {
    fn source(&self) -> (&dyn Model, Batch<'_>) {
        (self.model, self.batch)
    }

    fn loss_grad(
        &mut self,
        params: &[f32],
        mini: Gather<'_>,
        rng: &mut Rng,
        grad: &mut [f32],
        ws: &mut Workspace,
    ) -> f64 {
        let Gather {
            rows,
            x,
            y_real,
            y_class,
        } = mini;
        gather_features(self.batch, rows, self.augmentation.as_ref(), rng, x);
        let y = gather_targets(self.batch.y, rows, y_real, y_class);
        let mini = Batch {
            x,
            y,
            dim: self.batch.dim,
        };
        self.model.loss_grad(params, mini, grad, ws)
    }
}

/// The targets of `rows` of `y`, gathered into `y_real` or `y_class`.
pub(super) fn gather_targets<'s>(
    y: Targets<'_>,
    rows: &[usize],
    y_real: &'s mut Vec<f32>,
    y_class: &'s mut Vec<u32>,
) -> Targets<'s> {
    match y {
        Targets::Real(y) => {
            y_real.clear();
            y_real.extend(rows.iter().map(|&r| y[r]));
            Targets::Real(y_real)
        }
        Targets::Class(y) => {
            gather_classes(y, rows, y_class);
            Targets::Class(y_class)
        }
    }
}

/// The class labels of `rows` of `y`, into `out` (cleared first).
pub fn gather_classes(y: &[u32], rows: &[usize], out: &mut Vec<u32>) {
    out.clear();
    out.extend(rows.iter().map(|&r| y[r]));
}

/// One optimizer step along `grad` (the proximal pull already in it).
pub(super) fn update(
    spec: &MinibatchSpec<'_>,
    params: &mut [f32],
    grad: &[f32],
    state: &mut OptimizerState,
) {
    state.t += 1;
    update_coordinates(spec, state, 0..params.len(), params, grad);
}

/// The optimizer's step on the coordinates `range` only, at step `state.t`
/// (which the caller has advanced): a model whose vector holds more than
/// trainable tensors (batch norm's running statistics) steps each trainable
/// range with it. `grad` already holds the proximal pull.
pub fn update_coordinates(
    spec: &MinibatchSpec<'_>,
    state: &mut OptimizerState,
    range: std::ops::Range<usize>,
    params: &mut [f32],
    grad: &[f32],
) {
    let decayed;
    let grad = match spec.decay {
        None => &grad[range.clone()],
        Some(decay) => {
            decayed = with_layer_decay(decay, range.clone(), params, grad);
            &decayed[..]
        }
    };
    let lr = spec.lr_at_step(state.t);
    let params = &mut params[range.clone()];
    match spec.optimizer {
        MinibatchOptimizer::Adam => {
            let t = state.t as i32;
            let (b1, b2) = (ADAM_BETA1, ADAM_BETA2);
            let c1 = 1.0 - b1.powi(t);
            let c2 = 1.0 - b2.powi(t);
            let (first, second) = (&mut state.first[range.clone()], &mut state.second[range]);
            for (((w, g), m), v) in params.iter_mut().zip(grad).zip(first).zip(second) {
                *m = b1 * *m + (1.0 - b1) * g;
                *v = b2 * *v + (1.0 - b2) * g * g;
                let m_hat = *m / c1;
                let v_hat = *v / c2;
                *w -= lr * m_hat / (v_hat.sqrt() + ADAM_EPS);
            }
        }
        MinibatchOptimizer::Sgd {
            momentum,
            weight_decay,
        } => {
            for ((w, g), u) in params.iter_mut().zip(grad).zip(&mut state.first[range]) {
                let g = g + weight_decay * *w;
                *u = momentum * *u + g;
                *w -= lr * *u;
            }
        }
    }
}

/// `grad` on `range`, with `decay`'s `weight · w` added where its ranges
/// overlap `range` (the coordinates this update steps).
fn with_layer_decay(
    decay: LayerDecay<'_>,
    range: std::ops::Range<usize>,
    params: &[f32],
    grad: &[f32],
) -> Vec<f32> {
    let mut out = grad[range.clone()].to_vec();
    for r in decay.ranges {
        let (lo, hi) = (r.start.max(range.start), r.end.min(range.end));
        for i in lo..hi.max(lo) {
            out[i - range.start] += decay.weight * params[i];
        }
    }
    out
}

#[cfg(test)]
mod tests;
