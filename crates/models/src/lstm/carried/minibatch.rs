//! One local training of [`CarriedLstm`]: the minibatches, augmentation-free
//! draws and update formulas of `fedcluster_core::train::minibatch::flat_steps`,
//! each minibatch's windows starting from the last states of the previous
//! minibatch's (zeros at the first and after a change of size; detached).

use fedcluster_core::params::all_finite;
use fedcluster_core::train::minibatch::{gather_features, next_rows, update_coordinates};
use fedcluster_core::train::{MinibatchSpec, OptimizerState, Pull};
use fedcluster_core::{Batch, MinibatchScratch, Model, Rng, Workspace};

use super::{CarriedLstm, with_carry};

/// `steps` minibatch steps of `spec` from `params`, continuing `state`;
/// returns the first minibatch's mean loss, non-finite (with `params` at the
/// last finite iterate) if training diverged, NaN if the batch does not fit.
#[allow(clippy::too_many_arguments)]
pub(super) fn steps(
    model: &CarriedLstm,
    params: &mut [f32],
    batch: Batch<'_>,
    spec: &MinibatchSpec<'_>,
    steps: usize,
    state: &mut OptimizerState,
    rng: &mut Rng,
    ws: &mut Workspace,
) -> f64 {
    let p = params.len();
    state.ready(spec.optimizer, p);
    let net = model.net();
    let Some(y) = net.targets(batch) else {
        return f64::NAN;
    };
    let n = y.len();
    if n == 0 || steps == 0 {
        return model.loss(params, batch, ws);
    }
    let size = spec.batch_size.clamp(1, n);
    let mut scratch = std::mem::take(&mut ws.minibatch);
    let MinibatchScratch {
        order, x, y_class, ..
    } = &mut scratch;
    order.clear();
    order.extend(0..n);
    let mut cursor = n; // start with a fresh shuffle
    let mut grad = std::mem::take(&mut ws.grad);
    grad.resize(p, 0.0);
    let first = with_carry(ws, net.state_len(1), |carry, ws| {
        let mut first = f64::NAN;
        for step in 0..steps {
            let rows = next_rows(order, &mut cursor, size, rng);
            x.clear();
            gather_features(batch, rows, None, rng, x);
            y_class.clear();
            y_class.extend(rows.iter().map(|&r| y[r]));
            let start = carry.for_batch(rows.len());
            let loss = net.batch_loss_grad(params, x, y_class, &mut grad, ws, Some(start));
            if step == 0 {
                first = loss;
            }
            if !loss.is_finite() || !all_finite(&grad) {
                return f64::NAN;
            }
            if let Some(Pull { mu, centre }) = spec.pull {
                for ((g, w), c) in grad.iter_mut().zip(params.iter()).zip(centre) {
                    *g += mu * (w - c);
                }
            }
            state.t += 1;
            update_coordinates(spec, state, 0..p, params, &grad);
        }
        first
    });
    ws.grad = grad;
    ws.minibatch = scratch;
    if all_finite(params) { first } else { f64::NAN }
}
