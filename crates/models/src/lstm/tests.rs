//! The native char-LSTM: its gradient against finite differences, a
//! hand-computed loss, chunked passes against single ones, the two paths
//! (training and evaluation) against each other, and bad batches.

use super::*;
use crate::gradcheck::max_rel_error;
use crate::testutil::assert_rel;
use fedcluster_core::{Purpose, stream};
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

/// `n` windows of random symbols and labels.
fn windows(model: &CharLstm, n: usize, seed: u64) -> (Vec<f32>, Vec<u32>) {
    let mut rng = stream(seed, Purpose::ClientData, 0, 0);
    let v = model.vocab as u32;
    let x = (0..n * model.seq_len)
        .map(|_| rng.random_range(0..v) as f32)
        .collect();
    let y = (0..n).map(|_| rng.random_range(0..v)).collect();
    (x, y)
}

fn params(model: &CharLstm, seed: u64) -> Vec<f32> {
    let mut p = vec![0.0; model.num_params()];
    model.init(&mut stream(seed, Purpose::Init, 0, 0), &mut p);
    p
}

#[test]
fn gradient_matches_finite_differences() {
    for (layers, n, seed) in [(1, 3, 1), (2, 5, 2), (3, 2, 3)] {
        let model = small(layers);
        let (x, y) = windows(&model, n, seed);
        let batch = Batch::new(&x, Targets::Class(&y), model.seq_len).unwrap();
        let p = params(&model, seed);
        // f32 losses: central differences good to about 1e-4 of the largest
        // component; a sign or factor-2 error shows as 0.5 or more.
        let err = max_rel_error(&model, &p, batch, 1e-2);
        assert!(err < 2e-2, "{layers} layers: relative gradient error {err}");
    }
}

#[test]
fn layout_matches_leafs_network() {
    let leaf = CharLstm::new(CharLstm {
        vocab: 80,
        seq_len: 80,
        embedding: 8,
        hidden: 256,
        layers: 2,
    })
    .unwrap();
    // LEAF's Shakespeare model in PyTorch: 819,920 parameters.
    assert_eq!(leaf.num_params(), 819_920);
    let total: usize = leaf
        .tensors()
        .iter()
        .map(|t| t.shape.iter().product::<usize>())
        .sum();
    assert_eq!(total, leaf.num_params());
    assert_eq!(leaf.head_start(), leaf.num_params() - 80 * 256 - 80);
    assert_eq!(leaf.tensors()[1].name, "lstm.weight_ih_l0");
    assert_eq!(leaf.tensors()[5].shape, vec![1024, 256]);
}

#[test]
fn zero_weights_give_the_softmax_of_the_dense_bias() {
    // Zero pre-activations: i = f = o = 1/2, g = 0, so c = h = 0 and the
    // logits are the dense layer's bias.
    let model = small(2);
    let mut p = vec![0.0; model.num_params()];
    let bias = [0.5f32, -1.0, 2.0, 0.0, 1.0];
    let at = model.num_params() - 5;
    p[at..].copy_from_slice(&bias);
    let (x, y) = windows(&model, 7, 4);
    let batch = Batch::new(&x, Targets::Class(&y), model.seq_len).unwrap();
    let lse = bias.iter().map(|b| f64::from(*b).exp()).sum::<f64>().ln();
    let expected = y
        .iter()
        .map(|&c| lse - f64::from(bias[c as usize]))
        .sum::<f64>()
        / 7.0;
    let mut ws = Workspace::default();
    assert_rel(model.loss(&p, batch, &mut ws), expected, 1e-6, "loss");
    let mut grad = vec![0.0; p.len()];
    let l = model.loss_grad(&p, batch, &mut grad, &mut ws);
    assert_rel(l, expected, 1e-6, "loss_grad");
    let hits = y.iter().filter(|&&c| c == 2).count();
    assert_eq!(model.count_correct(&p, batch, &mut ws), Some(hits));
}

#[test]
fn chunked_passes_equal_one_pass_and_the_paths_agree() {
    // More windows than a training pass and an evaluation pass hold.
    let model = CharLstm::new(CharLstm {
        vocab: 6,
        seq_len: 3,
        embedding: 2,
        hidden: 3,
        layers: 2,
    })
    .unwrap();
    let n = EVAL_CHUNK + TRAIN_CHUNK + 5;
    let (x, y) = windows(&model, n, 5);
    let p = params(&model, 5);
    let mut ws = Workspace::default();
    let all = Batch::new(&x, Targets::Class(&y), model.seq_len).unwrap();
    let mut grad = vec![0.0; p.len()];
    let train_loss = model.loss_grad(&p, all, &mut grad, &mut ws);
    let eval_loss = model.loss(&p, all, &mut ws);
    assert_rel(
        train_loss,
        eval_loss,
        1e-5,
        "training against evaluation loss",
    );
    // The gradient of the whole batch is the size-weighted mean of the
    // gradients of two parts.
    let cut = TRAIN_CHUNK / 2;
    let mut sum = vec![0.0f64; p.len()];
    let mut part = vec![0.0; p.len()];
    for (lo, hi) in [(0, cut), (cut, n)] {
        model.loss_grad(&p, all.rows(lo, hi), &mut part, &mut ws);
        for (s, g) in sum.iter_mut().zip(&part) {
            *s += f64::from(*g) * (hi - lo) as f64 / n as f64;
        }
    }
    let scale = sum.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let err = sum
        .iter()
        .zip(&grad)
        .map(|(s, g)| (s - f64::from(*g)).abs())
        .fold(0.0, f64::max);
    assert!(
        err < 1e-5 * scale,
        "chunked gradient off by {err} (scale {scale})"
    );
}

#[test]
fn training_lowers_the_loss() {
    // The label is the window's first symbol: the LSTM must carry it.
    let model = small(2);
    let (x, _) = windows(&model, 40, 6);
    let y: Vec<u32> = x.chunks_exact(model.seq_len).map(|w| w[0] as u32).collect();
    let batch = Batch::new(&x, Targets::Class(&y), model.seq_len).unwrap();
    let mut ws = Workspace::default();
    let mut p = params(&model, 6);
    let start = model.loss(&p, batch, &mut ws);
    model.train(&mut p, batch, 0.3, 1000, &mut ws);
    let end = model.loss(&p, batch, &mut ws);
    assert!(end < start / 4.0, "loss {start} -> {end}");
    let correct = model.count_correct(&p, batch, &mut ws).unwrap();
    assert!(correct >= 32, "{correct}/40 correct (chance: 8)");
}

#[test]
fn bad_batches_give_nan_not_panics() {
    let model = small(1);
    let p = params(&model, 7);
    let mut grad = vec![0.0; p.len()];
    let mut ws = Workspace::default();
    let y = [1u32];
    for x in [
        [0.0f32, 1.0, 2.5, 3.0],
        [0.0, 1.0, 5.0, 3.0],
        [0.0, -1.0, 2.0, 3.0],
    ] {
        let batch = Batch::new(&x, Targets::Class(&y), 4).unwrap();
        assert!(model.loss(&p, batch, &mut ws).is_nan());
        assert!(model.loss_grad(&p, batch, &mut grad, &mut ws).is_nan());
        assert!(grad.iter().all(|g| g.is_nan()));
        assert_eq!(model.count_correct(&p, batch, &mut ws), None);
        assert!(matches!(
            model.check_batch(batch),
            Err(ModelError::Invalid { .. })
        ));
    }
    let x = [0.0f32, 1.0, 2.0, 3.0];
    let out_of_range = [5u32];
    let batch = Batch::new(&x, Targets::Class(&out_of_range), 4).unwrap();
    assert!(model.loss(&p, batch, &mut ws).is_nan());
    assert!(model.check_batch(batch).is_err());
    let empty = Batch::new(&[], Targets::Class(&[]), 4).unwrap();
    assert_eq!(model.loss_grad(&p, empty, &mut grad, &mut ws), 0.0);
    assert!(grad.iter().all(|&g| g == 0.0));
    assert!(CharLstm::new(CharLstm { layers: 0, ..model }).is_err());
    assert!(CharLstm::new(CharLstm { vocab: 1, ..model }).is_err());
}

/// The recurrent products from the skewed copies of `W_hh` (what the
/// training pass runs: the transpose for the forward product, the rows
/// for the backward one, rows a cache line longer than their values) have
/// the bits of the products from `W_hh` itself, at LEAF's sizes and SR-FCA's
/// batch of 10.
#[test]
fn recurrent_products_from_skewed_copies_keep_the_bits() {
    use fedcluster_core::linalg::{MatMut, MatRef, matmul};
    let (b, h) = (10, 256);
    let mut rng = stream(3, Purpose::Init, 0, 0);
    let mut values =
        |n: usize| -> Vec<f32> { (0..n).map(|_| rng.random_range(-1.0..1.0)).collect() };
    let (w_hh, prev, next) = (values(4 * h * h), values(b * h), values(b * 4 * h));
    let (start_g, start_dh) = (values(b * 4 * h), values(b * h));
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let w = MatRef::row_major(&w_hh, 4 * h, h);

    // Forward: G += h_prev · W_hhᵀ.
    let stride = train::skewed(4 * h);
    let mut w_hh_t = vec![f32::NAN; h * stride];
    train::transpose(&w_hh, 4 * h, h, &mut w_hh_t, stride);
    assert_eq!(w_hh_t[3 * stride + 7], w_hh[7 * h + 3]);
    let (mut view, mut copy) = (start_g.clone(), start_g);
    let prev = MatRef::row_major(&prev, b, h);
    matmul(
        MatMut::row_major(&mut view, b, 4 * h),
        prev,
        w.t(),
        true,
        1.0,
    );
    let skewed = MatRef::row_major_strided(&w_hh_t, h, 4 * h, stride);
    matmul(
        MatMut::row_major(&mut copy, b, 4 * h),
        prev,
        skewed,
        true,
        1.0,
    );
    assert_eq!(bits(&view), bits(&copy), "forward");

    // Backward: dh += dG_next · W_hh.
    let stride = train::skewed(h);
    let mut rows = vec![f32::NAN; 4 * h * stride];
    train::copy_rows(&w_hh, h, &mut rows, stride);
    let (mut view, mut copy) = (start_dh.clone(), start_dh);
    let next = MatRef::row_major(&next, b, 4 * h);
    matmul(MatMut::row_major(&mut view, b, h), next, w, true, 1.0);
    let skewed = MatRef::row_major_strided(&rows, 4 * h, h, stride);
    matmul(MatMut::row_major(&mut copy, b, h), next, skewed, true, 1.0);
    assert_eq!(bits(&view), bits(&copy), "backward");
}
