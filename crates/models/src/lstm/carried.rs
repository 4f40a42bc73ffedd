//! The char-LSTM with the SR-FCA public code's LSTM state
//! (`[model] state = "carried"`): [`CarriedLstm`].
//!
//! What the code (github.com/harshv834/sr-fca, commit a1b418f) does with the
//! state of its `StackedLSTM` (`src/models/lstm.py`: `nn.LSTM(...,
//! batch_first=True)`, `forward(x, hidden)` returning the logits of the last
//! step and the last step's `(h_n, c_n)` of every layer, `zero_state(batch)`
//! zeros of `(n_layers, batch, n_hidden)`):
//!
//! - Training, `src/trainers.py`, `ClientTrainer.train`: `batch_size, hidden
//!   = None, None` at the start of every call, that is of one client's local
//!   training in one round (`ClusterTrainer.train` calls it for each sampled
//!   client every round). Each of the `local_iter` iterations takes the next
//!   minibatch of the client's shuffled training `DataLoader` (`batch.train`
//!   = 10 in `configs/experiment/shakespeare.yaml`; an epoch's last batch is
//!   smaller), sets `hidden = self.model.zero_state(batch_size)` when it is
//!   the first or its size differs from the last one's, runs `out, hidden =
//!   self.model(X, hidden)` and keeps `hidden = (hidden[0].detach(),
//!   hidden[1].detach())`. So window `b` of a minibatch starts from the last
//!   states of window `b` of the previous minibatch (an unrelated window),
//!   no gradient flows into that state, and the state is a local variable of
//!   one local training: not kept by the model object, nor per client from
//!   one round to the next.
//! - Evaluation, `src/utils.py`, `compute_metric`: the same rule from `None`
//!   at every call, over the batches of the client's test `DataLoader` (512
//!   windows, `shuffle=False`: the stored order) or training `DataLoader`
//!   (10, shuffled), under `torch.no_grad()`. `BaseTrainer.compute_metrics`
//!   calls it once per metric and split, each from zeros.
//!
//! Here: [`CarriedLstm::train_minibatch`] is one local training (what
//! `LocalTrainer` runs through `core::train::minibatch::steps`), with the
//! flat loop's minibatches (the same draws) and the code's rule: zeros at the
//! first minibatch and whenever a minibatch's size differs from the last
//! one's, otherwise each window row starting from the last states of the
//! same row, detached. Evaluation ([`Model::loss`], `count_correct`,
//! `loss_and_correct`, so `losses` too) goes through the windows in stored
//! order in batches of `eval_batch` (default [`CarriedLstm::EVAL_BATCH`], the
//! code's `batch.test`) by the same rule. The state lives inside one call, as
//! in the code, so nothing is checkpointed and nothing depends on the thread
//! count. Where it differs from the code:
//!
//! - the code's training loader continues its epoch from one round to the
//!   next (`Client.sample_batch` keeps its iterator); here each local
//!   training starts a fresh shuffle (as for every model), so the smaller
//!   end-of-epoch minibatch, and the zeros around it, fall elsewhere;
//! - the code evaluates the training split in shuffled batches of 10; here
//!   every evaluation uses `eval_batch` in stored order (a model does not
//!   know which split it scores; runs report test metrics and the training
//!   minibatches' loss);
//! - gradients outside the minibatch loop ([`Model::loss_grad`] itself,
//!   full-batch `gd`, FedEM's weighted minibatches, IFCA's frozen trunk) start
//!   from zeros: the code has no such path for Shakespeare;
//! - the code's loss metric divides the sum of its batches' means by the
//!   number of windows, and runs under mixed precision (`autocast`); neither
//!   is emulated.
//!
//! Scratch: [`CharLstm`]'s, and `Workspace` buffer 1 for the carried state.

use serde::{Deserialize, Serialize};

use fedcluster_core::train::minibatch::run_steps;
use fedcluster_core::train::{MinibatchSpec, OptimizerState};
use fedcluster_core::{Batch, Model, Rng, TensorSpec, Workspace};

use super::CharLstm;
use crate::{ModelError, Result, inv_len};

mod minibatch;
mod state;
#[cfg(test)]
mod tests;

pub(super) use state::StateRows;
use state::with_carry;

/// What an LSTM window starts from (`[model] state`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LstmState {
    /// Zeros, every window (the default).
    #[default]
    Zero,
    /// The SR-FCA public code's state, carried from one minibatch to the
    /// next and from one evaluation batch to the next ([`CarriedLstm`]).
    Carried,
}

impl LstmState {
    /// Whether this is the default.
    pub fn is_zero(&self) -> bool {
        *self == LstmState::Zero
    }
}

impl CharLstm {
    /// Floats of state `windows` windows carry: per layer `h` then `c`, each
    /// `windows x hidden`.
    pub fn state_len(&self, windows: usize) -> usize {
        windows * 2 * self.layers * self.hidden
    }
}

/// [`CharLstm`] with the SR-FCA public code's carried state (see the module
/// doc): the same parameters, the same gradient of one batch, training and
/// evaluation batches that continue the previous batch's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CarriedLstm {
    net: CharLstm,
    eval_batch: usize,
}

impl CarriedLstm {
    /// The code's evaluation batch (`batch.test`).
    pub const EVAL_BATCH: usize = 512;

    /// `net` with its state carried across evaluation batches of
    /// `eval_batch` windows (at least 1).
    pub fn new(net: CharLstm, eval_batch: usize) -> Result<Self> {
        if eval_batch == 0 {
            return Err(ModelError::Invalid {
                model: "char-lstm",
                why: "the evaluation batch must be at least 1 window".into(),
            });
        }
        Ok(Self { net, eval_batch })
    }

    /// The network.
    pub fn net(&self) -> &CharLstm {
        &self.net
    }

    /// Windows per evaluation batch.
    pub fn eval_batch(&self) -> usize {
        self.eval_batch
    }

    /// The summed loss and the number correct of the windows `x` (labels
    /// `y`, which fit), in batches of `eval_batch`, the state carried.
    fn evaluate(&self, params: &[f32], x: &[f32], y: &[u32], ws: &mut Workspace) -> (f64, usize) {
        let seq_len = self.net.seq_len;
        with_carry(ws, self.net.state_len(1), |carry, ws| {
            let (mut loss, mut hits) = (0.0, 0);
            for start in (0..y.len()).step_by(self.eval_batch) {
                let end = (start + self.eval_batch).min(y.len());
                let x = &x[start * seq_len..end * seq_len];
                let state = carry.for_batch(end - start);
                let (l, c) = self
                    .net
                    .evaluate(params, x, &y[start..end], ws, Some(state));
                loss += l;
                hits += c;
            }
            (loss, hits)
        })
    }
}

impl Model for CarriedLstm {
    fn name(&self) -> &'static str {
        self.net.name()
    }

    fn num_params(&self) -> usize {
        self.net.num_params()
    }

    fn input_dim(&self) -> usize {
        self.net.input_dim()
    }

    fn tensors(&self) -> Vec<TensorSpec> {
        self.net.tensors()
    }

    fn init(&self, rng: &mut Rng, out: &mut [f32]) {
        self.net.init(rng, out)
    }

    /// NaN if the batch does not fit; 0 if it is empty. In batches of
    /// `eval_batch` windows, the state carried.
    fn loss(&self, params: &[f32], batch: Batch<'_>, ws: &mut Workspace) -> f64 {
        assert_eq!(
            params.len(),
            self.num_params(),
            "char-lstm: parameter length"
        );
        match self.net.targets(batch) {
            Some(y) => self.evaluate(params, batch.x, y, ws).0 * inv_len(y.len()),
            None => f64::NAN,
        }
    }

    /// One batch's gradient from zero states, as [`CharLstm`]'s: the state
    /// carries only from one minibatch of [`Model::train_minibatch`] to the
    /// next.
    fn loss_grad(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        grad: &mut [f32],
        ws: &mut Workspace,
    ) -> f64 {
        self.net.loss_grad(params, batch, grad, ws)
    }

    fn count_correct(&self, params: &[f32], batch: Batch<'_>, ws: &mut Workspace) -> Option<usize> {
        let y = self.net.targets(batch)?;
        Some(self.evaluate(params, batch.x, y, ws).1)
    }

    fn loss_and_correct(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        ws: &mut Workspace,
    ) -> (f64, Option<usize>) {
        match self.net.targets(batch) {
            Some(y) if params.len() == self.num_params() => {
                let (sum, correct) = self.evaluate(params, batch.x, y, ws);
                (sum * inv_len(y.len()), Some(correct))
            }
            _ => (
                self.loss(params, batch, ws),
                self.count_correct(params, batch, ws),
            ),
        }
    }

    fn forward_flops_per_sample(&self) -> u64 {
        self.net.forward_flops_per_sample()
    }

    fn head_start(&self) -> usize {
        self.net.head_start()
    }

    /// The flat loop's minibatches, each continuing the last one's state
    /// (see the module doc).
    fn train_minibatch(
        &self,
        params: &mut [f32],
        batch: Batch<'_>,
        spec: &MinibatchSpec<'_>,
        steps: usize,
        state: &mut OptimizerState,
        rng: &mut Rng,
        ws: &mut Workspace,
    ) -> Option<f64> {
        let Some(y) = self.net.targets(batch) else {
            return Some(f64::NAN);
        };
        Some(with_carry(ws, self.net.state_len(1), |carry, ws| {
            let mut pass = minibatch::CarriedPass::new(self, batch, y, carry);
            run_steps(&mut pass, params, spec, steps, state, rng, ws)
        }))
    }
}
