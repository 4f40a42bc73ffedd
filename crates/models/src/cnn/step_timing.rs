//! Times each stage of one training step of a [`Cnn`] (forward, backward,
//! the flat loop's finite check and SGD update with momentum) apart, on
//! made-up data, one thread: where a step's time goes, layer by layer, set
//! against each product's FLOPs. `cargo bench -p fedcluster-models --bench
//! cnn_stages` prints LEAF's FEMNIST CNN (docs/performance.md).

use fedcluster_core::Model;
use fedcluster_core::params::all_finite;

use super::Cnn;
use super::conv::{conv_backward, conv_forward};
use super::conv_timing::{best, values};
use super::layers::{bias_relu, dense, input_grad, relu_backward, weight_grad};
use super::pool::{pool_forward, pool_relu_backward};

/// One stage's best time.
#[derive(Clone, Debug)]
pub struct StageTime {
    /// What the stage computes.
    pub stage: &'static str,
    /// Best of the runs, in milliseconds.
    pub ms: f64,
    /// Floating-point operations of its products (0 for passes without).
    pub flops: f64,
}

/// `2 m k n`.
fn product(m: usize, k: usize, n: usize) -> f64 {
    2.0 * (m * k * n) as f64
}

/// The stages of one step of `model` on `n` images, in the order the step
/// runs them, each the best of `reps` runs.
pub fn time_stages(model: &Cnn, n: usize, reps: usize) -> Vec<StageTime> {
    let (c1, c2) = model.convs();
    let l = model.layout();
    let (flat, hidden, classes) = (model.flat(), model.hidden, model.classes);
    let lens = model.buffer_lens(n);
    let params = values(l.end, 1);
    let x = values(n * model.input_dim(), 2);
    let [
        mut scratch,
        mut a1,
        mut p1,
        mut idx1,
        mut a2,
        mut p2,
        mut idx2,
        mut h,
        mut z,
    ] = lens.map(|len| vec![0.0; len]);
    let (w1, w2) = (&params[..l.b1], &params[l.w2..l.b2]);
    let (w3, w4) = (&params[l.w3..l.b3], &params[l.w4..l.b4]);
    let (pos1, pos2) = (c1.positions(), c2.positions());
    let mut out = Vec::new();
    let mut time = |stage: &'static str, flops: f64, f: &mut dyn FnMut()| {
        let ms = best(reps, f);
        out.push(StageTime { stage, ms, flops });
    };
    let conv1_flops = product(n * pos1, c1.patch(), model.conv1);
    let conv2_flops = product(n * pos2, c2.patch(), model.conv2);
    time("conv1 forward", conv1_flops, &mut || {
        conv_forward(&c1, &x, w1, n, &mut scratch, &mut a1)
    });
    time("conv1 bias, ReLU, pool", 0.0, &mut || {
        bias_relu(&mut a1, &params[l.b1..l.w2]);
        pool_forward(c1.out_h, c1.out_w, model.conv1, n, &a1, &mut p1, &mut idx1);
    });
    time("conv2 forward", conv2_flops, &mut || {
        conv_forward(&c2, &p1, w2, n, &mut scratch, &mut a2)
    });
    time("conv2 bias, ReLU, pool", 0.0, &mut || {
        bias_relu(&mut a2, &params[l.b2..l.w3]);
        pool_forward(c2.out_h, c2.out_w, model.conv2, n, &a2, &mut p2, &mut idx2);
    });
    time("dense forward", product(n, flat, hidden), &mut || {
        dense(&mut h, &p2, w3, flat, 1.0)
    });
    time("output forward", product(n, hidden, classes), &mut || {
        dense(&mut z, &h, w4, hidden, 1.0)
    });
    let mut grad = vec![0.0; l.end];
    let mut dh = values(n * hidden, 3);
    time(
        "output backward",
        2.0 * product(n, hidden, classes),
        &mut || {
            weight_grad(&mut grad[l.w4..l.b4], &z, &h, n, 0.02);
            input_grad(&mut dh, &z, w4, n, 1.0);
            relu_backward(&mut dh, &h);
        },
    );
    let dh = values(n * hidden, 3);
    time(
        "dense weight gradient",
        product(n, flat, hidden),
        &mut || weight_grad(&mut grad[l.w3..l.b3], &dh, &p2, n, 0.02),
    );
    let mut dp2 = vec![0.0; n * flat];
    time(
        "dense input gradient",
        product(n, flat, hidden),
        &mut || input_grad(&mut dp2, &dh, w3, n, 1.0),
    );
    let (dp2, mut da2) = (values(n * flat, 4), vec![0.0; a2.len()]);
    time("conv2 unpool, ReLU", 0.0, &mut || {
        pool_relu_backward(&dp2, &idx2, &p2, &mut da2)
    });
    let (da2, mut dp1) = (values(a2.len(), 5), vec![0.0; p1.len()]);
    time(
        "conv2 backward (filters, input)",
        2.0 * conv2_flops,
        &mut || {
            let gw = &mut grad[l.w2..l.b2];
            conv_backward(
                &c2,
                &p1,
                &da2,
                w2,
                n,
                0.02,
                &mut scratch,
                gw,
                Some(&mut dp1),
            )
        },
    );
    let (dp1, mut da1) = (values(p1.len(), 6), vec![0.0; a1.len()]);
    time("conv1 unpool, ReLU", 0.0, &mut || {
        pool_relu_backward(&dp1, &idx1, &p1, &mut da1)
    });
    let da1 = values(a1.len(), 7);
    time("conv1 backward (filters)", conv1_flops, &mut || {
        let gw = &mut grad[..l.b1];
        conv_backward(&c1, &x, &da1, w1, n, 0.02, &mut scratch, gw, None)
    });
    let (grad, mut w, mut u) = (values(l.end, 8), params.clone(), values(l.end, 9));
    time("finite check of the gradient", 0.0, &mut || {
        assert!(all_finite(&grad), "made-up values are finite")
    });
    time("SGD update with momentum", 0.0, &mut || {
        for ((w, g), u) in w.iter_mut().zip(&grad).zip(&mut u) {
            *u = 0.9 * *u + g;
            *w -= 1e-3 * *u;
        }
    });
    out
}
