//! Local training on the device, the device implementation of
//! [`fedcluster_core::train`]: the parameters (and the optimizer's state) are
//! uploaded once per call, stay on the device for every step, and are read
//! back once at the end. Minibatches are drawn exactly as the flat loop draws
//! them ([`fedcluster_core::train::minibatch`]: the same shuffles and
//! augmentation draws from the client's stream, in the same order) and the
//! updates follow the same formulas, so the two loops agree up to rounding.

use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{ElementConversion, Int, Tensor};

use fedcluster_core::params::all_finite;
use fedcluster_core::train::minibatch::{gather_features, next_rows};
use fedcluster_core::train::{
    ADAM_BETA1, ADAM_BETA2, ADAM_EPS, Augmentation, MinibatchOptimizer, MinibatchSpec,
    OptimizerState,
};
use fedcluster_core::{Batch, Rng, Workspace};

use crate::flat::{ParamSpec, Params};
use crate::layers::{Norm, cross_entropy, running_update};
use crate::net::{Architecture, NetModel};

/// A trainable tensor's update: `(index, value, gradient) -> new value`, on the
/// backend without autodiff.
type Update<'a, B> = dyn FnMut(usize, Inner<B>, Inner<B>) -> Inner<B> + 'a;

/// A 1-D tensor of `B`'s inner backend.
type Inner<B> = Tensor<<B as AutodiffBackend>::InnerBackend, 1>;

/// One forward and backward pass in training mode: the loss, the gradients
/// and the new parameters after `update` (running statistics refreshed).
fn step<A: Architecture, B: AutodiffBackend>(
    model: &NetModel<A, B>,
    p: Params<B::InnerBackend>,
    x: Tensor<B, 2>,
    t: Tensor<B, 1, Int>,
    update: &mut Update<'_, B>,
) -> (f64, Params<B::InnerBackend>) {
    let leaves = Params::<B>::leaves(&model.layout, p);
    let mut stats = Vec::new();
    let logits = model
        .arch
        .forward(&leaves.tensors, x, &mut Norm::Batch(&mut stats));
    let loss = cross_entropy(logits, t);
    let value: f64 = loss.clone().into_scalar().elem();
    if !value.is_finite() {
        return (value, leaves.inner());
    }
    let grads = leaves.grads(&loss.backward());
    let mut next: Vec<_> = leaves
        .inner()
        .tensors
        .into_iter()
        .zip(grads.tensors)
        .enumerate()
        .map(|(i, (w, g))| {
            if model.layout[i].trainable {
                update(i, w, g)
            } else {
                w
            }
        })
        .collect();
    for (at, mean, var) in stats {
        next[at] = running_update(next[at].clone(), mean.inner());
        next[at + 1] = running_update(next[at + 1].clone(), var.inner());
    }
    (value, Params { tensors: next })
}

/// `steps` full-batch gradient steps of size `lr` (the data uploaded once);
/// returns the loss at the start, non-finite (and `params` at the last finite
/// iterate) if training diverged.
pub fn full_batch<A: Architecture, B: AutodiffBackend>(
    model: &NetModel<A, B>,
    params: &mut [f32],
    batch: Batch<'_>,
    lr: f32,
    steps: usize,
) -> f64 {
    let Some(y) = model.targets(batch).filter(|y| !y.is_empty()) else {
        return f64::NAN;
    };
    let (x, t) = model.tensors::<B>(batch.x, y, &model.device);
    let mut p = Params::<B::InnerBackend>::load(&model.layout, params, &model.device);
    let mut first = f64::NAN;
    for s in 0..steps {
        let (loss, next) = step(
            model,
            p.clone_params(),
            x.clone(),
            t.clone(),
            &mut |_, w, g| w - g * lr,
        );
        if s == 0 {
            first = loss;
        }
        if !loss.is_finite() {
            first = f64::NAN;
            break;
        }
        p = next;
    }
    finish(p, params, first)
}

/// Writes the trained parameters back; a non-finite result reports NaN and
/// leaves `params` as they were.
fn finish<B: Backend>(p: Params<B>, params: &mut [f32], first: f64) -> f64 {
    let mut out = vec![0.0f32; params.len()];
    p.write(&mut out);
    if !all_finite(&out) {
        return f64::NAN;
    }
    params.copy_from_slice(&out);
    first
}

/// The layer decay's weight on each tensor of `layout` (0 where the spec
/// decays none of its coordinates; a decayed range is a whole tensor).
fn tensor_decay(layout: &[ParamSpec], spec: &MinibatchSpec<'_>) -> Vec<f32> {
    let mut at = 0;
    layout
        .iter()
        .map(|t| {
            let range = at..at + t.len();
            at = range.end;
            match spec.decay {
                Some(d) if d.ranges.contains(&range) => d.weight,
                _ => 0.0,
            }
        })
        .collect()
}

/// The optimizer's state tensors, laid out like the parameters.
fn state_tensors<B: Backend>(
    layout: &[ParamSpec],
    v: &[f32],
    device: &B::Device,
) -> Option<Params<B>> {
    (!v.is_empty()).then(|| Params::load(layout, v, device))
}

/// `steps` minibatch steps of `spec` (see [`fedcluster_core::Model::train_minibatch`]).
#[allow(clippy::too_many_arguments)]
pub fn minibatch<A: Architecture, B: AutodiffBackend>(
    model: &NetModel<A, B>,
    params: &mut [f32],
    batch: Batch<'_>,
    spec: &MinibatchSpec<'_>,
    steps: usize,
    state: &mut OptimizerState,
    rng: &mut Rng,
    ws: &mut Workspace,
) -> f64 {
    let Some(y) = model.targets(batch).filter(|y| !y.is_empty()) else {
        return f64::NAN;
    };
    let (n, d, dev) = (y.len(), batch.dim, &model.device);
    state.ready(spec.optimizer, params.len());
    if steps == 0 {
        return fedcluster_core::Model::loss(model, params, batch, ws);
    }
    let layout = &model.layout;
    let mut p = Params::<B::InnerBackend>::load(layout, params, dev);
    let mut first_moment = state_tensors::<B::InnerBackend>(layout, &state.first, dev);
    let mut second_moment = state_tensors::<B::InnerBackend>(layout, &state.second, dev);
    let centre = spec
        .pull
        .map(|pull| Params::<B::InnerBackend>::load(layout, pull.centre, dev));
    let augmentation = model.augmentation_of();
    let decay_of = tensor_decay(layout, spec);
    let size = spec.batch_size.clamp(1, n);
    let mut order: Vec<usize> = (0..n).collect();
    let (mut cursor, mut first) = (n, f64::NAN);
    let (mut xs, mut ys) = (Vec::with_capacity(size * d), Vec::with_capacity(size));
    for s in 0..steps {
        let rows = next_rows(&mut order, &mut cursor, size, rng);
        xs.clear();
        gather_features(batch, rows, augmentation.as_ref(), rng, &mut xs);
        ys.clear();
        ys.extend(rows.iter().map(|&r| y[r]));
        let (x, t) = model.tensors::<B>(&xs, &ys, dev);
        state.t += 1;
        let tstep = state.t as i32;
        let lr = spec.lr_at_step(state.t);
        let (m1, m2, c) = (&mut first_moment, &mut second_moment, &centre);
        let (loss, next) = step(model, p.clone_params(), x, t, &mut |i, w, mut g| {
            if let (Some(pull), Some(c)) = (spec.pull, c) {
                g = g + (w.clone() - c.tensors[i].clone()) * pull.mu;
            }
            if decay_of[i] != 0.0 {
                g = g + w.clone() * decay_of[i];
            }
            match spec.optimizer {
                MinibatchOptimizer::Adam => {
                    let (m, v) = (m1.as_mut().expect("sized"), m2.as_mut().expect("sized"));
                    let c1 = 1.0 - ADAM_BETA1.powi(tstep);
                    let c2 = 1.0 - ADAM_BETA2.powi(tstep);
                    m.tensors[i] =
                        m.tensors[i].clone() * ADAM_BETA1 + g.clone() * (1.0 - ADAM_BETA1);
                    // (1 − β₂) g · g, in the flat loop's order of operations.
                    v.tensors[i] =
                        v.tensors[i].clone() * ADAM_BETA2 + g.clone() * (1.0 - ADAM_BETA2) * g;
                    let m_hat = m.tensors[i].clone() / c1;
                    let v_hat = v.tensors[i].clone() / c2;
                    w - m_hat * lr / (v_hat.sqrt() + ADAM_EPS)
                }
                MinibatchOptimizer::Sgd {
                    momentum,
                    weight_decay,
                } => {
                    let u = m1.as_mut().expect("sized");
                    let g = g + w.clone() * weight_decay;
                    u.tensors[i] = u.tensors[i].clone() * momentum + g;
                    w - u.tensors[i].clone() * lr
                }
            }
        });
        if s == 0 {
            first = loss;
        }
        if !loss.is_finite() {
            first = f64::NAN;
            break;
        }
        p = next;
    }
    if let Some(m) = &first_moment {
        m.write(&mut state.first);
    }
    if let Some(v) = &second_moment {
        v.write(&mut state.second);
    }
    finish(p, params, first)
}

impl<B: Backend> Params<B> {
    /// A cheap copy (tensors share their storage).
    pub(crate) fn clone_params(&self) -> Self {
        Params {
            tensors: self.tensors.clone(),
        }
    }
}

impl<A: Architecture, B: AutodiffBackend> NetModel<A, B> {
    /// The augmentation of local training.
    fn augmentation_of(&self) -> Option<Augmentation> {
        fedcluster_core::Model::augmentation(self)
    }
}
