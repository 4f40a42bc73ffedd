//! LEAF's Shakespeare character LSTM (Caldas et al. 2018; the SR-FCA paper's
//! Table 3 network), hand-written: an embedding of the symbols, `layers`
//! stacked LSTM layers of `hidden` units from zero states, and a dense layer
//! from the last step's hidden state to the next symbol, with a softmax
//! cross-entropy loss. Inputs are windows of `seq_len` symbol ids stored as
//! floats; the classes are the symbols.
//!
//! Parameters, back to back, exactly as `fedcluster_nn`'s burn `CharLstm`
//! (PyTorch's `nn.Embedding`, `nn.LSTM`, `nn.Linear`): `embedding.weight`
//! (`vocab x embedding`, `N(0, 1)`), then per layer `k` `weight_ih_l{k}`
//! (`4H x in`), `weight_hh_l{k}` (`4H x H`), `bias_ih_l{k}` and `bias_hh_l{k}`
//! (`4H`), gates `i, f, g, o`, then `fc.weight` (`vocab x H`) and `fc.bias`;
//! everything after the embedding `U(±1/√H)`. The two tiers are
//! interchangeable on the same flat vector (tested in `crates/nn`).
//!
//! Sequences are stored time-major (row `t·B + b` is window `b` at step `t`),
//! so that a layer's input projection for every step is one GEMM
//! (`T·B x in` by `in x 4H`) and each step adds one recurrent GEMM
//! (`B x H` by `H x 4H`) with the four gates fused; see [`train`] for the
//! backward pass through time and [`eval`] for the evaluation path, which
//! runs the layers step by step over large chunks of windows.
//!
//! [`CarriedLstm`] is the same network with the SR-FCA public code's LSTM
//! state carried from one minibatch to the next and from one evaluation
//! batch to the next (`[model] state = "carried"`; see [`carried`]).

use rand_distr::{Distribution, StandardNormal};

use fedcluster_core::{Batch, Model, Rng, Targets, TensorSpec, Workspace};

use crate::init::uniform_fan_in;
use crate::{ModelError, Result, TargetKind, fits, inv_len};
use carried::StateRows;

pub mod carried;
mod cell;
mod dense;
mod eval;
#[cfg(test)]
mod tests;
mod train;

pub use carried::{CarriedLstm, LstmState};

/// Windows per training pass: a larger batch's gradient is the sum over
/// passes of this many windows, so memory is bounded by it (about 80 MB at
/// LEAF's sizes).
pub const TRAIN_CHUNK: usize = 64;

/// Windows per evaluation pass (memory about 14 MB at LEAF's sizes).
pub const EVAL_CHUNK: usize = 1024;

/// The network's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CharLstm {
    /// Symbols: the input alphabet and the output classes.
    pub vocab: usize,
    /// Symbols per input window.
    pub seq_len: usize,
    /// Embedding dimension (LEAF: 8).
    pub embedding: usize,
    /// Hidden units per layer (LEAF: 256).
    pub hidden: usize,
    /// Stacked layers (LEAF: 2).
    pub layers: usize,
}

/// Where one LSTM layer's tensors start in the flat vector, and its input
/// width.
#[derive(Clone, Copy, Debug)]
struct LayerAt {
    w_ih: usize,
    w_hh: usize,
    b_ih: usize,
    b_hh: usize,
    input: usize,
}

impl CharLstm {
    /// Checks a shape: every size at least 1, at least 2 symbols.
    pub fn new(shape: CharLstm) -> Result<Self> {
        let s = shape;
        let why = if [s.seq_len, s.embedding, s.hidden, s.layers].contains(&0) {
            "every size must be at least 1"
        } else if s.vocab < 2 {
            "the vocabulary must have at least 2 symbols"
        } else {
            return Ok(shape);
        };
        Err(ModelError::Invalid {
            model: "char-lstm",
            why: why.into(),
        })
    }

    /// The LSTM trains on symbol ids below `vocab`.
    pub fn target_kind(&self) -> TargetKind {
        TargetKind::Class {
            classes: self.vocab,
        }
    }

    /// Checks that `batch` fits this model (see [`crate::check_batch`]) and
    /// that every feature is a symbol id.
    pub fn check_batch(&self, batch: Batch<'_>) -> Result<()> {
        crate::check_batch(self.name(), self.seq_len, self.target_kind(), batch)?;
        match batch.x.iter().position(|&v| !self.is_symbol(v)) {
            Some(index) => Err(ModelError::Invalid {
                model: "char-lstm",
                why: format!(
                    "feature {index} is {}, not a symbol id below {}",
                    batch.x[index], self.vocab
                ),
            }),
            None => Ok(()),
        }
    }

    fn is_symbol(&self, v: f32) -> bool {
        v >= 0.0 && v < self.vocab as f32 && v.fract() == 0.0
    }

    /// The targets of a batch that fits, symbol ids included.
    fn targets<'a>(&self, batch: Batch<'a>) -> Option<&'a [u32]> {
        match batch.y {
            Targets::Class(y)
                if fits(batch, self.seq_len)
                    && y.iter().all(|&c| (c as usize) < self.vocab)
                    && batch.x.iter().all(|&v| self.is_symbol(v)) =>
            {
                Some(y)
            }
            _ => None,
        }
    }

    /// Length of the embedding table.
    fn embedding_len(&self) -> usize {
        self.vocab * self.embedding
    }

    /// Layer `k`'s offsets.
    fn layer(&self, k: usize) -> LayerAt {
        let (e, h, h4) = (self.embedding, self.hidden, 4 * self.hidden);
        let first = h4 * e + h4 * h + 2 * h4;
        let later = h4 * h + h4 * h + 2 * h4;
        let w_ih = self.embedding_len() + if k == 0 { 0 } else { first + (k - 1) * later };
        let input = if k == 0 { e } else { h };
        let w_hh = w_ih + h4 * input;
        let b_ih = w_hh + h4 * h;
        LayerAt {
            w_ih,
            w_hh,
            b_ih,
            b_hh: b_ih + h4,
            input,
        }
    }

    /// Where the dense layer's weight starts.
    fn fc(&self) -> usize {
        let last = self.layer(self.layers - 1);
        last.b_hh + 4 * self.hidden
    }
}

impl CharLstm {
    /// The mean loss of the windows `x` (labels `y`, which fit), its gradient
    /// written into `grad`, in passes of [`TRAIN_CHUNK`] windows; from zero
    /// states, or from the states in `carry` ([`CharLstm::state_len`] of
    /// them), which the windows' last states then replace.
    fn batch_loss_grad(
        &self,
        params: &[f32],
        x: &[f32],
        y: &[u32],
        grad: &mut [f32],
        ws: &mut Workspace,
        mut carry: Option<&mut [f32]>,
    ) -> f64 {
        grad.fill(0.0);
        let scale = inv_len(y.len()) as f32;
        let n = y.len();
        let mut loss = 0.0;
        for start in (0..n).step_by(TRAIN_CHUNK) {
            let end = (start + TRAIN_CHUNK).min(n);
            let x = &x[start * self.seq_len..end * self.seq_len];
            let chunk = (carry.as_deref_mut()).map(|s| StateRows::new(self, s, n, start..end));
            loss += self.chunk_loss_grad(params, x, &y[start..end], scale, grad, ws, chunk);
        }
        loss * inv_len(y.len())
    }
}

/// `out <- b_ih + b_hh` of layer `at`.
fn add_biases(params: &[f32], at: LayerAt, out: &mut [f32]) {
    let h4 = out.len();
    let (bi, bh) = (
        &params[at.b_ih..at.b_ih + h4],
        &params[at.b_hh..at.b_hh + h4],
    );
    for ((o, a), b) in out.iter_mut().zip(bi).zip(bh) {
        *o = a + b;
    }
}

impl Model for CharLstm {
    fn name(&self) -> &'static str {
        "char-lstm"
    }

    fn num_params(&self) -> usize {
        self.fc() + self.vocab * self.hidden + self.vocab
    }

    /// PyTorch's names and shapes (`embedding`, `lstm`, `fc` modules).
    fn tensors(&self) -> Vec<TensorSpec> {
        let (h, h4, v) = (self.hidden, 4 * self.hidden, self.vocab);
        let mut out = vec![TensorSpec::new("embedding.weight", &[v, self.embedding])];
        for k in 0..self.layers {
            let input = self.layer(k).input;
            out.push(TensorSpec::new(
                &format!("lstm.weight_ih_l{k}"),
                &[h4, input],
            ));
            out.push(TensorSpec::new(&format!("lstm.weight_hh_l{k}"), &[h4, h]));
            out.push(TensorSpec::new(&format!("lstm.bias_ih_l{k}"), &[h4]));
            out.push(TensorSpec::new(&format!("lstm.bias_hh_l{k}"), &[h4]));
        }
        out.push(TensorSpec::new("fc.weight", &[v, h]));
        out.push(TensorSpec::new("fc.bias", &[v]));
        out
    }

    fn input_dim(&self) -> usize {
        self.seq_len
    }

    /// `N(0, 1)` for the embedding (`nn.Embedding`), `U(±1/√H)` for the rest
    /// (`nn.LSTM`; the dense layer's fan-in is `H` too), drawn in layout order.
    fn init(&self, rng: &mut Rng, out: &mut [f32]) {
        let (emb, rest) = out.split_at_mut(self.embedding_len());
        for v in emb {
            *v = StandardNormal.sample(rng);
        }
        uniform_fan_in(rng, self.hidden, rest);
    }

    /// NaN if the batch does not fit; 0 if it is empty. Evaluated in chunks of
    /// [`EVAL_CHUNK`] windows.
    fn loss(&self, params: &[f32], batch: Batch<'_>, ws: &mut Workspace) -> f64 {
        assert_eq!(
            params.len(),
            self.num_params(),
            "char-lstm: parameter length"
        );
        let Some(y) = self.targets(batch) else {
            return f64::NAN;
        };
        self.evaluate(params, batch.x, y, ws, None).0 * inv_len(y.len())
    }

    /// NaN loss and gradient if the batch does not fit; 0 and 0 if it is
    /// empty. Computed in passes of [`TRAIN_CHUNK`] windows.
    fn loss_grad(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        grad: &mut [f32],
        ws: &mut Workspace,
    ) -> f64 {
        assert_eq!(
            params.len(),
            self.num_params(),
            "char-lstm: parameter length"
        );
        assert_eq!(grad.len(), self.num_params(), "char-lstm: gradient length");
        let Some(y) = self.targets(batch) else {
            grad.fill(f32::NAN);
            return f64::NAN;
        };
        self.batch_loss_grad(params, batch.x, y, grad, ws, None)
    }

    fn count_correct(&self, params: &[f32], batch: Batch<'_>, ws: &mut Workspace) -> Option<usize> {
        let y = self.targets(batch)?;
        Some(self.evaluate(params, batch.x, y, ws, None).1)
    }

    /// One forward pass for both numbers (what `loss` and `count_correct`
    /// each compute).
    fn loss_and_correct(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        ws: &mut Workspace,
    ) -> (f64, Option<usize>) {
        match self.targets(batch) {
            Some(y) if params.len() == self.num_params() => {
                let (sum, correct) = self.evaluate(params, batch.x, y, ws, None);
                (sum * inv_len(y.len()), Some(correct))
            }
            _ => (
                self.loss(params, batch, ws),
                self.count_correct(params, batch, ws),
            ),
        }
    }

    /// The dense layer is the head; the embedding and the LSTM are shared.
    fn head_start(&self) -> usize {
        self.fc()
    }

    fn forward_flops_per_sample(&self) -> u64 {
        let (h, e) = (self.hidden as u64, self.embedding as u64);
        let per_step: u64 = (0..self.layers)
            .map(|k| 2 * 4 * h * (if k == 0 { e } else { h } + h))
            .sum();
        self.seq_len as u64 * per_step + 2 * h * self.vocab as u64
    }
}
