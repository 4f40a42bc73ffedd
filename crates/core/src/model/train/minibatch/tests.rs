//! The recipe options of [`MinibatchSpec`] as the flat loop applies them: the
//! step-size schedule and the decay of chosen tensors.

use super::*;
use crate::model::TensorSpec;
use crate::rng::{Purpose, stream};
use crate::train::Triangular;
use crate::train::decay::tensor_ranges;

/// A model whose loss is `slope · Σ w` on any batch, so each coordinate's
/// gradient is `slope`: a plain step moves it by exactly `−lr · slope`.
struct Slope {
    params: usize,
    slope: f32,
}

impl Model for Slope {
    fn name(&self) -> &'static str {
        "slope"
    }
    fn input_dim(&self) -> usize {
        1
    }
    fn num_params(&self) -> usize {
        self.params
    }
    fn tensors(&self) -> Vec<TensorSpec> {
        let half = self.params / 2;
        vec![
            TensorSpec::new("a", &[half]),
            TensorSpec::new("b", &[self.params - half]),
        ]
    }
    fn init(&self, _rng: &mut Rng, out: &mut [f32]) {
        out.fill(0.0);
    }
    fn loss(&self, params: &[f32], _batch: Batch<'_>, _ws: &mut Workspace) -> f64 {
        f64::from(self.slope) * params.iter().map(|&w| f64::from(w)).sum::<f64>()
    }
    fn loss_grad(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        grad: &mut [f32],
        ws: &mut Workspace,
    ) -> f64 {
        grad.fill(self.slope);
        self.loss(params, batch, ws)
    }
    fn forward_flops_per_sample(&self) -> u64 {
        1
    }
}

const X: [f32; 4] = [0.0; 4];
const Y: [f32; 4] = [0.0; 4];

fn sgd(lr: f32) -> MinibatchSpec<'static> {
    MinibatchSpec {
        optimizer: MinibatchOptimizer::Sgd {
            momentum: 0.0,
            weight_decay: 0.0,
        },
        lr,
        batch_size: 2,
        pull: None,
        schedule: None,
        decay: None,
    }
}

#[test]
fn the_trainer_steps_by_the_scheduled_step_size() {
    let model = Slope {
        params: 1,
        slope: 1.0,
    };
    let batch = Batch::new(&X, Targets::Real(&Y), 1).unwrap();
    let schedule = Triangular {
        warmup: 3,
        total: 8,
    };
    let spec = MinibatchSpec {
        schedule: Some(schedule),
        ..sgd(0.5)
    };
    let (mut state, mut ws) = (OptimizerState::default(), Workspace::default());
    let mut rng = stream(1, Purpose::Client, 0, 0);
    let mut w = [0.0f32];
    let mut seen = Vec::new();
    for _ in 0..10 {
        let before = w[0];
        steps(
            &model, &mut w, batch, &spec, 1, &mut state, &mut rng, &mut ws,
        );
        seen.push(before - w[0]);
    }
    for (s, got) in seen.iter().enumerate() {
        let want = 0.5 * schedule.factor(s);
        assert!(
            (got - want).abs() < 1e-6,
            "step {s}: {got} vs lr · factor = {want}"
        );
    }
    assert_eq!(seen[0], 0.0, "the first step's factor is 0");
    assert!((seen[3] - 0.5).abs() < 1e-6 && (seen[4] - 0.4).abs() < 1e-6);
    assert_eq!(&seen[8..], [0.0, 0.0], "no step at or after `total`");
}

#[test]
fn layer_decay_moves_only_the_chosen_tensor() {
    let model = Slope {
        params: 4,
        slope: 0.0,
    };
    let batch = Batch::new(&X, Targets::Real(&Y), 1).unwrap();
    let ranges = tensor_ranges(&model.tensors(), &["b"]).unwrap();
    let spec = MinibatchSpec {
        decay: Some(LayerDecay {
            ranges: &ranges,
            weight: 0.25,
        }),
        ..sgd(0.5)
    };
    let (mut state, mut ws) = (OptimizerState::default(), Workspace::default());
    let mut rng = stream(1, Purpose::Client, 0, 0);
    let mut w = [1.0f32, 2.0, 3.0, 4.0];
    steps(
        &model, &mut w, batch, &spec, 1, &mut state, &mut rng, &mut ws,
    );
    assert_eq!(w, [1.0, 2.0, 3.0 * (1.0 - 0.125), 4.0 * (1.0 - 0.125)]);
    // A caller stepping a sub-range decays only its overlap with the tensor.
    let mut w = [1.0f32, 2.0, 3.0, 4.0];
    state.t += 1;
    update_coordinates(&spec, &mut state, 0..3, &mut w, &[0.0; 4]);
    assert_eq!(w, [1.0, 2.0, 3.0 * (1.0 - 0.125), 4.0]);
}
