//! The character LSTM of LEAF's Shakespeare task (Caldas et al. 2018; the
//! SR-FCA paper's Table 3 network): an embedding of the 80-symbol alphabet,
//! stacked LSTM layers, and a dense layer from the last step's hidden state to
//! the next character, in PyTorch's layout (`nn.Embedding`, `nn.LSTM` with
//! `weight_ih_l{k}`, `weight_hh_l{k}`, `bias_ih_l{k}`, `bias_hh_l{k}` and gates
//! `i, f, g, o`, `nn.Linear`). Inputs are token ids stored as floats.

use burn::tensor::Tensor;
use burn::tensor::backend::Backend;
use serde::{Deserialize, Serialize};

use fedcluster_core::{Input, Model};
use fedcluster_models::lstm::{CarriedLstm, LstmState};

use crate::config::{self, ModelBackend};
use crate::flat::{Init, ParamSpec};
use crate::layers::{Norm, dense, embedding, lstm};
use crate::net::Architecture;
use crate::{Net, NnError};

/// `[model] kind = "char-lstm"`: LEAF's Shakespeare network, an embedding,
/// stacked LSTM layers and a dense layer to the next character (vocabulary
/// and window length from the data); native by default
/// ([`fedcluster_models::CharLstm`], the same flat vector), or on burn.
/// `state = "carried"` emulates the SR-FCA public code's LSTM state, carried
/// across minibatches and evaluation batches (native only:
/// [`fedcluster_models::lstm::carried`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CharLstmConfig {
    /// Embedding dimension.
    #[serde(default = "config::eight")]
    pub embedding: usize,
    /// Hidden units per layer.
    #[serde(default = "config::c256")]
    pub hidden: usize,
    /// Stacked layers.
    #[serde(default = "config::two")]
    pub layers: usize,
    /// Where it runs (default: native).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<ModelBackend>,
    /// What each window starts from: `"zero"` (the default) or `"carried"`
    /// (the SR-FCA public code: the last minibatch's or evaluation batch's
    /// states).
    #[serde(default, skip_serializing_if = "LstmState::is_zero")]
    pub state: LstmState,
    /// Windows per evaluation batch, the state carried from one to the next
    /// (`state = "carried"` only; default 512, the code's `batch.test`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_batch: Option<usize>,
}

impl CharLstmConfig {
    /// The LSTM for `input`: windows of `dim` token ids whose classes are the
    /// vocabulary.
    pub fn build(&self, input: &Input) -> Result<Box<dyn Model>, NnError> {
        let vocab = config::classes(input.task, "char-lstm")?;
        let net = CharLstm {
            vocab,
            seq_len: input.dim,
            embedding: self.embedding,
            hidden: self.hidden,
            layers: self.layers,
        };
        // The burn network's checks name the keys for both backends.
        Net::CharLstm(net).check()?;
        self.check_state()?;
        if !config::native(self.backend) {
            return config::on_burn(Net::CharLstm(net), self.backend, None);
        }
        let native = fedcluster_models::CharLstm {
            vocab,
            seq_len: input.dim,
            embedding: self.embedding,
            hidden: self.hidden,
            layers: self.layers,
        };
        let native = fedcluster_models::CharLstm::new(native).map_err(NnError::NativeShape)?;
        Ok(match self.state {
            LstmState::Zero => Box::new(native),
            LstmState::Carried => {
                let eval_batch = self.eval_batch.unwrap_or(CarriedLstm::EVAL_BATCH);
                Box::new(CarriedLstm::new(native, eval_batch).map_err(NnError::NativeShape)?)
            }
        })
    }

    /// Why `state` and `eval_batch` cannot work, naming the key.
    fn check_state(&self) -> Result<(), NnError> {
        match (self.state, self.eval_batch) {
            (LstmState::Zero, Some(_)) => Err(config::invalid(
                "eval_batch",
                "only `state = \"carried\"` evaluates in batches",
            )),
            (LstmState::Carried, Some(0)) => {
                Err(config::invalid("eval_batch", "must be at least 1, got 0"))
            }
            (LstmState::Carried, _) if !config::native(self.backend) => Err(config::invalid(
                "state",
                "only the native char-LSTM (`backend = \"native\"`) carries its state",
            )),
            _ => Ok(()),
        }
    }
}

/// The LSTM's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CharLstm {
    /// Symbols (inputs and outputs).
    pub vocab: usize,
    /// Characters per input window.
    pub seq_len: usize,
    /// Embedding dimension (LEAF: 8).
    pub embedding: usize,
    /// Hidden units per layer (LEAF: 256).
    pub hidden: usize,
    /// Stacked layers (LEAF: 2).
    pub layers: usize,
}

impl CharLstm {
    /// Why this shape cannot be built, naming the `[model]` key.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if self.seq_len == 0 || self.vocab == 0 {
            return Err(("kind", "needs token windows (a text data set)".into()));
        }
        for (field, v) in [
            ("embedding", self.embedding),
            ("hidden", self.hidden),
            ("layers", self.layers),
        ] {
            if v == 0 {
                return Err((field, "must be at least 1, got 0".into()));
            }
        }
        Ok(())
    }
}

impl Architecture for CharLstm {
    fn name(&self) -> &'static str {
        "char-lstm"
    }

    fn layout(&self) -> Vec<ParamSpec> {
        let (h, h4) = (self.hidden, 4 * self.hidden);
        let mut layout = vec![ParamSpec::new(
            "embedding.weight",
            &[self.vocab, self.embedding],
            Init::Normal,
        )];
        for k in 0..self.layers {
            let input = if k == 0 { self.embedding } else { h };
            layout.push(ParamSpec::new(
                format!("lstm.weight_ih_l{k}"),
                &[h4, input],
                Init::FanIn(h),
            ));
            layout.push(ParamSpec::new(
                format!("lstm.weight_hh_l{k}"),
                &[h4, h],
                Init::FanIn(h),
            ));
            layout.push(ParamSpec::new(
                format!("lstm.bias_ih_l{k}"),
                &[h4],
                Init::FanIn(h),
            ));
            layout.push(ParamSpec::new(
                format!("lstm.bias_hh_l{k}"),
                &[h4],
                Init::FanIn(h),
            ));
        }
        layout.push(ParamSpec::new(
            "fc.weight",
            &[self.vocab, h],
            Init::FanIn(h),
        ));
        layout.push(ParamSpec::new("fc.bias", &[self.vocab], Init::FanIn(h)));
        layout
    }

    fn input_dim(&self) -> usize {
        self.seq_len
    }

    fn classes(&self) -> usize {
        self.vocab
    }

    fn flops_per_sample(&self) -> u64 {
        let (h, e) = (self.hidden as u64, self.embedding as u64);
        let per_step: u64 = (0..self.layers)
            .map(|k| 2 * 4 * h * (if k == 0 { e } else { h } + h))
            .sum();
        self.seq_len as u64 * per_step + 2 * h * self.vocab as u64
    }

    fn head_start(&self) -> usize {
        let layout = self.layout();
        layout[..layout.len() - 2].iter().map(ParamSpec::len).sum()
    }

    fn vocab(&self) -> Option<usize> {
        Some(self.vocab)
    }

    fn forward<B: Backend>(
        &self,
        p: &[Tensor<B, 1>],
        x: Tensor<B, 2>,
        _norm: &mut Norm<'_, B>,
    ) -> Tensor<B, 2> {
        let [n, t] = x.dims();
        let mut h = embedding(x.int(), &p[0], self.embedding);
        for k in 0..self.layers {
            h = lstm(h, &p[1 + 4 * k..5 + 4 * k], self.hidden);
        }
        let last = h
            .slice([0..n, t - 1..t, 0..self.hidden])
            .reshape([n, self.hidden]);
        let at = 1 + 4 * self.layers;
        dense(last, &p[at], Some(&p[at + 1]))
    }
}
