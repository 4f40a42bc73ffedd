//! What [`run_steps`] owns, seen through a pass that records its calls: the
//! epochs' rows, one step per finite minibatch, the first loss, the stop at
//! divergence and the whole-batch loss when there is no step to take.

use super::*;
use crate::model::Targets;
use crate::rng::{Purpose, stream};
use crate::train::MinibatchOptimizer;

/// A model whose only use here is its whole-batch loss, `WHOLE`.
struct Whole;

const WHOLE: f64 = 42.0;

impl Model for Whole {
    fn name(&self) -> &'static str {
        "whole"
    }
    fn input_dim(&self) -> usize {
        1
    }
    fn num_params(&self) -> usize {
        2
    }
    fn init(&self, _rng: &mut Rng, out: &mut [f32]) {
        out.fill(0.0);
    }
    fn loss(&self, _params: &[f32], _batch: Batch<'_>, _ws: &mut Workspace) -> f64 {
        WHOLE
    }
    fn loss_grad(&self, _: &[f32], _: Batch<'_>, _: &mut [f32], _: &mut Workspace) -> f64 {
        unreachable!("the recording pass computes its own")
    }
    fn forward_flops_per_sample(&self) -> u64 {
        1
    }
}

/// Returns `losses` in turn, records the rows it is given and the minibatch
/// sizes its own step is called with.
struct Recording<'b> {
    batch: Batch<'b>,
    losses: Vec<f64>,
    rows: Vec<Vec<usize>>,
    stepped: Vec<usize>,
}

impl MinibatchPass for Recording<'_> {
    fn source(&self) -> (&dyn Model, Batch<'_>) {
        (&Whole, self.batch)
    }

    fn loss_grad(
        &mut self,
        _params: &[f32],
        mini: Gather<'_>,
        _rng: &mut Rng,
        grad: &mut [f32],
        _ws: &mut Workspace,
    ) -> f64 {
        assert!(mini.x.is_empty(), "the loop hands over an empty `x`");
        grad.fill(1.0);
        self.rows.push(mini.rows.to_vec());
        self.losses[self.rows.len() - 1]
    }

    fn step(
        &mut self,
        _spec: &MinibatchSpec<'_>,
        _params: &mut [f32],
        _grad: &mut [f32],
        state: &mut OptimizerState,
        rows: usize,
        _ws: &mut Workspace,
    ) {
        state.t += 1;
        self.stepped.push(rows);
    }
}

/// `steps` steps in minibatches of 3 over 7 points, the pass returning
/// `losses`: the loop's result and the pass.
fn run(steps: usize, losses: Vec<f64>) -> (f64, Recording<'static>) {
    static X: [f32; 7] = [0.0; 7];
    let batch = Batch::new(&X, Targets::Real(&X), 1).unwrap();
    let mut pass = Recording {
        batch,
        losses,
        rows: Vec::new(),
        stepped: Vec::new(),
    };
    let spec = MinibatchSpec {
        optimizer: MinibatchOptimizer::Adam,
        lr: 0.1,
        batch_size: 3,
        pull: None,
        schedule: None,
        decay: None,
    };
    let (mut state, mut ws) = (OptimizerState::default(), Workspace::default());
    let mut rng = stream(3, Purpose::Client, 0, 0);
    let mut params = [0.0f32; 2];
    let first = run_steps(
        &mut pass,
        &mut params,
        &spec,
        steps,
        &mut state,
        &mut rng,
        &mut ws,
    );
    assert_eq!(state.t as usize, pass.stepped.len());
    (first, pass)
}

#[test]
fn each_epoch_visits_every_point_once_and_each_minibatch_takes_one_step() {
    let (first, pass) = run(5, vec![2.0, 1.0, 0.5, 0.25, 0.125]);
    assert_eq!(first, 2.0, "the first minibatch's loss");
    let sizes: Vec<usize> = pass.rows.iter().map(Vec::len).collect();
    assert_eq!(
        sizes,
        [3, 3, 1, 3, 3],
        "the epoch's last minibatch is smaller"
    );
    assert_eq!(pass.stepped, sizes, "one step per minibatch, told its size");
    let mut epoch: Vec<usize> = pass.rows[..3].concat();
    epoch.sort_unstable();
    assert_eq!(epoch, (0..7).collect::<Vec<_>>());
}

#[test]
fn a_non_finite_loss_stops_before_its_step_and_no_step_gives_the_whole_loss() {
    let (first, pass) = run(5, vec![2.0, 1.0, f64::INFINITY, 0.0, 0.0]);
    assert!(first.is_nan(), "divergence is reported as NaN, not {first}");
    assert_eq!((pass.rows.len(), pass.stepped.len()), (3, 2));
    let (first, pass) = run(0, Vec::new());
    assert_eq!(first, WHOLE);
    assert!(pass.rows.is_empty() && pass.stepped.is_empty());
}
