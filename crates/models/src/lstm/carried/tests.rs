//! The carried state against a hand computation in `f64` (evaluation in
//! batches, two training steps), the gradient from a given state against
//! finite differences, the training and evaluation paths against each other
//! across their chunks, and the zero-after-a-change-of-size rule.

use super::*;
use crate::gradcheck::max_rel_error;
use crate::testutil::{assert_rel, assert_vec_rel};
use fedcluster_core::train::MinibatchOptimizer;
use fedcluster_core::train::minibatch::{flat_steps, next_rows};
use fedcluster_core::{Purpose, Targets, stream};
use rand::Rng as _;

fn small(layers: usize) -> CharLstm {
    CharLstm::new(CharLstm {
        vocab: 5,
        seq_len: 4,
        embedding: 3,
        hidden: 4,
        layers,
    })
    .unwrap()
}

/// `n` windows of random symbols and labels, and parameters, from `seed`.
fn problem(m: &CharLstm, n: usize, seed: u64) -> (Vec<f32>, Vec<u32>, Vec<f32>) {
    let mut rng = stream(seed, Purpose::ClientData, 0, 0);
    let v = m.vocab as u32;
    let x = (0..n * m.seq_len)
        .map(|_| rng.random_range(0..v) as f32)
        .collect();
    let y = (0..n).map(|_| rng.random_range(0..v)).collect();
    let mut p = vec![0.0; m.num_params()];
    m.init(&mut stream(seed, Purpose::Init, 0, 0), &mut p);
    (x, y, p)
}

/// Per layer `(h, c)` of one window, in `f64`.
type WindowState = Vec<(Vec<f64>, Vec<f64>)>;

fn sigmoid(v: f64) -> f64 {
    1.0 / (1.0 + (-v).exp())
}

/// One window through the network in `f64`, from `state`, which its last
/// states replace; returns its loss and whether its argmax is `label`.
fn reference(
    m: &CharLstm,
    p: &[f32],
    window: &[f32],
    label: u32,
    state: &mut WindowState,
) -> (f64, bool) {
    let (e, h) = (m.embedding, m.hidden);
    let w = |i: usize| f64::from(p[i]);
    for &token in window {
        let mut input: Vec<f64> = (0..e).map(|i| w(token as usize * e + i)).collect();
        for (k, (hk, ck)) in state.iter_mut().enumerate() {
            let at = m.layer(k);
            let gate = |j: usize| {
                let mut s = w(at.b_ih + j) + w(at.b_hh + j);
                s += (0..at.input)
                    .map(|i| w(at.w_ih + j * at.input + i) * input[i])
                    .sum::<f64>();
                s + (0..h).map(|i| w(at.w_hh + j * h + i) * hk[i]).sum::<f64>()
            };
            let g: Vec<f64> = (0..4 * h).map(gate).collect();
            for j in 0..h {
                let (i, f) = (sigmoid(g[j]), sigmoid(g[h + j]));
                let (gg, o) = (g[2 * h + j].tanh(), sigmoid(g[3 * h + j]));
                ck[j] = f * ck[j] + i * gg;
                hk[j] = o * ck[j].tanh();
            }
            input = hk.clone();
        }
    }
    let (fc, v, top) = (m.fc(), m.vocab, &state[m.layers - 1].0);
    let logits: Vec<f64> = (0..v)
        .map(|c| w(fc + v * h + c) + (0..h).map(|i| w(fc + c * h + i) * top[i]).sum::<f64>())
        .collect();
    let max = logits.iter().cloned().fold(f64::MIN, f64::max);
    let lse = max + logits.iter().map(|z| (z - max).exp()).sum::<f64>().ln();
    let best = (0..v).fold(0, |b, c| if logits[c] > logits[b] { c } else { b });
    (lse - logits[label as usize], best == label as usize)
}

fn zeros(m: &CharLstm) -> WindowState {
    vec![(vec![0.0; m.hidden], vec![0.0; m.hidden]); m.layers]
}

/// The states of windows `0..b` in the model's layout.
fn layout(m: &CharLstm, states: &[WindowState]) -> Vec<f32> {
    let (b, h) = (states.len(), m.hidden);
    let mut out = vec![0.0; m.state_len(b)];
    for k in 0..m.layers {
        for (w, s) in states.iter().enumerate() {
            for j in 0..h {
                out[2 * k * b * h + w * h + j] = s[k].0[j] as f32;
                out[(2 * k + 1) * b * h + w * h + j] = s[k].1[j] as f32;
            }
        }
    }
    out
}

#[test]
fn evaluation_carries_the_state_from_batch_to_batch_as_by_hand() {
    let m = small(2);
    let (x, y, p) = problem(&m, 5, 1);
    // Batches of 2: windows 2 and 3 continue windows 0 and 1; window 4, a
    // batch of another size, starts from zeros.
    let mut states = vec![zeros(&m); 2];
    let (mut carried, mut zero, mut hits) = (0.0, 0.0, 0);
    for (i, window) in x.chunks_exact(m.seq_len).enumerate() {
        let state = if i < 4 {
            &mut states[i % 2]
        } else {
            &mut zeros(&m)
        };
        let (loss, hit) = reference(&m, &p, window, y[i], state);
        carried += loss / 5.0;
        hits += usize::from(hit);
        zero += reference(&m, &p, window, y[i], &mut zeros(&m)).0 / 5.0;
    }
    assert!((carried - zero).abs() > 1e-3 * zero, "{carried} vs {zero}");
    let model = CarriedLstm::new(m, 2).unwrap();
    let batch = Batch::new(&x, Targets::Class(&y), m.seq_len).unwrap();
    let mut ws = Workspace::default();
    assert_rel(
        model.loss(&p, batch, &mut ws),
        carried,
        1e-5,
        "carried loss",
    );
    assert_rel(m.loss(&p, batch, &mut ws), zero, 1e-5, "zero-state loss");
    assert_eq!(model.count_correct(&p, batch, &mut ws), Some(hits));
    let both = model.loss_and_correct(&p, batch, &mut ws);
    assert_eq!(both, (model.loss(&p, batch, &mut ws), Some(hits)));
    // One batch holding every window is the zero-state network's pass.
    let whole = CarriedLstm::new(m, 5).unwrap();
    assert_rel(whole.loss(&p, batch, &mut ws), zero, 1e-6, "one batch");
    assert!(CarriedLstm::new(m, 0).is_err());
}

/// The network from a given state: what a carried minibatch computes.
struct FromState {
    net: CharLstm,
    state: Vec<f32>,
}

impl Model for FromState {
    fn name(&self) -> &'static str {
        "from-state"
    }
    fn num_params(&self) -> usize {
        self.net.num_params()
    }
    fn input_dim(&self) -> usize {
        self.net.seq_len
    }
    fn init(&self, rng: &mut Rng, out: &mut [f32]) {
        self.net.init(rng, out)
    }
    fn loss(&self, params: &[f32], batch: Batch<'_>, ws: &mut Workspace) -> f64 {
        let y = self.net.targets(batch).unwrap();
        let mut state = self.state.clone();
        let sum = self
            .net
            .evaluate(params, batch.x, y, ws, Some(&mut state))
            .0;
        sum / y.len() as f64
    }
    fn loss_grad(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        grad: &mut [f32],
        ws: &mut Workspace,
    ) -> f64 {
        let y = self.net.targets(batch).unwrap();
        let mut state = self.state.clone();
        self.net
            .batch_loss_grad(params, batch.x, y, grad, ws, Some(&mut state))
    }
    fn forward_flops_per_sample(&self) -> u64 {
        0
    }
}

fn random_state(m: &CharLstm, n: usize, seed: u64) -> Vec<f32> {
    let mut rng = stream(seed, Purpose::Client, 0, 0);
    (0..m.state_len(n))
        .map(|_| rng.random_range(-0.8..0.8))
        .collect()
}

#[test]
fn gradient_from_a_given_state_matches_finite_differences() {
    for (layers, n, seed) in [(1, 3, 2), (2, 4, 3)] {
        let net = small(layers);
        let (x, y, p) = problem(&net, n, seed);
        let batch = Batch::new(&x, Targets::Class(&y), net.seq_len).unwrap();
        let model = FromState {
            net,
            state: random_state(&net, n, seed),
        };
        let err = max_rel_error(&model, &p, batch, 1e-2);
        assert!(err < 2e-2, "{layers} layers: relative gradient error {err}");
        let mut ws = Workspace::default();
        let zero = net.loss(&p, batch, &mut ws);
        assert!((model.loss(&p, batch, &mut ws) - zero).abs() > 1e-3 * zero);
    }
}

#[test]
fn training_and_evaluation_passes_leave_the_same_state_across_chunks() {
    let net = CharLstm::new(CharLstm {
        vocab: 6,
        seq_len: 3,
        embedding: 2,
        hidden: 3,
        layers: 2,
    })
    .unwrap();
    let n = super::super::EVAL_CHUNK + super::super::TRAIN_CHUNK + 5;
    let (x, y, p) = problem(&net, n, 4);
    let start = random_state(&net, n, 4);
    let mut ws = Workspace::default();
    let (mut trained, mut evaluated) = (start.clone(), start.clone());
    let mut grad = vec![0.0; p.len()];
    let loss = net.batch_loss_grad(&p, &x, &y, &mut grad, &mut ws, Some(&mut trained));
    let (sum, _) = net.evaluate(&p, &x, &y, &mut ws, Some(&mut evaluated));
    assert_rel(loss, sum / n as f64, 1e-5, "loss");
    assert_vec_rel(&trained, &evaluated, 1e-5, "last states");
    // The first and the last window (first and last chunk) by hand, from
    // their rows of the start.
    for i in [0, n - 1] {
        let mut state = row(&net, &start, n, i);
        let window = &x[i * net.seq_len..(i + 1) * net.seq_len];
        reference(&net, &p, window, y[i], &mut state);
        for (ours, theirs) in row(&net, &trained, n, i).iter().zip(&state) {
            for (a, b) in ours
                .0
                .iter()
                .chain(&ours.1)
                .zip(theirs.0.iter().chain(&theirs.1))
            {
                assert!((a - b).abs() < 1e-5, "window {i}: {a} vs {b}");
            }
        }
    }
}

/// Window `i`'s state among the states of `windows` windows.
fn row(net: &CharLstm, state: &[f32], windows: usize, i: usize) -> WindowState {
    let at = i * net.hidden..(i + 1) * net.hidden;
    let wide = |v: &[f32]| v[at.clone()].iter().map(|&s| f64::from(s)).collect();
    let wh = windows * net.hidden;
    (0..net.layers)
        .map(|k| {
            let (h, c) = state[2 * k * wh..2 * (k + 1) * wh].split_at(wh);
            (wide(h), wide(c))
        })
        .collect()
}

#[test]
fn training_continues_the_last_minibatchs_state() {
    let net = small(2);
    let (x, y, p0) = problem(&net, 4, 5);
    let batch = Batch::new(&x, Targets::Class(&y), net.seq_len).unwrap();
    let spec = MinibatchSpec {
        optimizer: MinibatchOptimizer::Sgd {
            momentum: 0.0,
            weight_decay: 0.0,
        },
        lr: 0.5,
        batch_size: 2,
        pull: None,
        schedule: None,
        decay: None,
    };
    let rng = stream(5, Purpose::Client, 0, 0);
    let mut ws = Workspace::default();
    // By hand: the flat loop's two minibatches, the first from zeros, the
    // second from the first's last states (computed in f64 at p0).
    let (mut order, mut cursor) = ((0..4).collect::<Vec<_>>(), 4);
    let mut draws = rng.clone();
    let first = next_rows(&mut order, &mut cursor, 2, &mut draws).to_vec();
    let second = next_rows(&mut order, &mut cursor, 2, &mut draws).to_vec();
    let rows = |r: &[usize]| {
        let xs: Vec<f32> = r
            .iter()
            .flat_map(|&i| x[i * 4..(i + 1) * 4].to_vec())
            .collect();
        (xs, r.iter().map(|&i| y[i]).collect::<Vec<u32>>())
    };
    let ((x1, y1), (x2, y2)) = (rows(&first), rows(&second));
    let mut grad = vec![0.0; p0.len()];
    net.loss_grad(
        &p0,
        Batch::new(&x1, Targets::Class(&y1), 4).unwrap(),
        &mut grad,
        &mut ws,
    );
    let p1: Vec<f32> = p0.iter().zip(&grad).map(|(w, g)| w - 0.5 * g).collect();
    let mut states = vec![zeros(&net); 2];
    for (w, s) in states.iter_mut().enumerate() {
        reference(&net, &p0, &x1[w * 4..(w + 1) * 4], y1[w], s);
    }
    let from = FromState {
        net,
        state: layout(&net, &states),
    };
    from.loss_grad(
        &p1,
        Batch::new(&x2, Targets::Class(&y2), 4).unwrap(),
        &mut grad,
        &mut ws,
    );
    let by_hand: Vec<f32> = p1.iter().zip(&grad).map(|(w, g)| w - 0.5 * g).collect();
    let mut train = |model: &dyn Model| {
        let (mut p, mut state, mut r) = (p0.clone(), OptimizerState::default(), rng.clone());
        let loss = match model.train_minibatch(&mut p, batch, &spec, 2, &mut state, &mut r, &mut ws)
        {
            Some(loss) => loss,
            None => flat_steps(model, &mut p, batch, &spec, 2, &mut state, &mut r, &mut ws),
        };
        assert!(loss.is_finite());
        p
    };
    let carried = train(&CarriedLstm::new(net, 512).unwrap());
    let zero = train(&net);
    assert_vec_rel(&carried, &by_hand, 1e-5, "carried training");
    let moved: f64 = zero
        .iter()
        .zip(&carried)
        .map(|(a, b)| f64::from(a - b).abs())
        .sum();
    assert!(moved > 1e-3, "the carried state changed nothing ({moved})");
}

#[test]
fn a_batch_of_another_size_starts_from_zeros() {
    let mut ws = Workspace::default();
    with_carry(&mut ws, 3, |carry, _| {
        assert_eq!(carry.for_batch(2), &[0.0; 6]);
        carry.for_batch(2).fill(1.0);
        assert_eq!(carry.for_batch(2), &[1.0; 6], "same size: carried");
        carry.for_batch(2).fill(2.0);
        assert_eq!(carry.for_batch(1), &[0.0; 3], "smaller: zeros");
        carry.for_batch(1).fill(3.0);
        assert_eq!(carry.for_batch(2), &[0.0; 6], "larger again: zeros");
    });
    // A new call starts from zeros however the buffer was left.
    with_carry(&mut ws, 3, |carry, _| {
        assert_eq!(carry.for_batch(2), &[0.0; 6])
    });
}
