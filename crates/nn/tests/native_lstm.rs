//! The native char-LSTM (`fedcluster_models::CharLstm`) against the burn
//! tier's (`nets::CharLstm` on the CPU backend, f32) on the same flat
//! parameters: the same initial vector, loss, gradient and predictions; the
//! `[model]` config's choice between them; and native local training on a
//! rayon pool of 1 and 2 threads, bit for bit.

use fedcluster_core::{Batch, Input, Model, Purpose, Targets, Task, Workspace, stream};
use fedcluster_models::lstm::LstmState;
use fedcluster_nn::nets::{self, CharLstmConfig};
use fedcluster_nn::{Backend, ModelBackend, Net};
use rand::Rng as _;
use rayon::prelude::*;

fn shape(vocab: usize, seq_len: usize, embedding: usize, hidden: usize) -> nets::CharLstm {
    nets::CharLstm {
        vocab,
        seq_len,
        embedding,
        hidden,
        layers: 2,
    }
}

fn native(s: nets::CharLstm) -> fedcluster_models::CharLstm {
    fedcluster_models::CharLstm::new(fedcluster_models::CharLstm {
        vocab: s.vocab,
        seq_len: s.seq_len,
        embedding: s.embedding,
        hidden: s.hidden,
        layers: s.layers,
    })
    .unwrap()
}

/// `n` windows of random symbols and labels.
fn windows(s: nets::CharLstm, n: usize, seed: u64) -> (Vec<f32>, Vec<u32>) {
    let mut rng = stream(seed, Purpose::TestData, 0, 0);
    let x = (0..n * s.seq_len)
        .map(|_| rng.random_range(0..s.vocab) as f32)
        .collect();
    let y = (0..n)
        .map(|_| rng.random_range(0..s.vocab as u32))
        .collect();
    (x, y)
}

/// `‖a − b‖ / max(‖a‖, ‖b‖)`.
fn rel(a: &[f32], b: &[f32]) -> f64 {
    let sq = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>();
    let diff: f64 = (a.iter().zip(b))
        .map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2))
        .sum();
    diff.sqrt() / sq(a).max(sq(b)).sqrt()
}

#[test]
fn native_and_burn_agree_on_the_same_parameters() {
    // A small shape, and LEAF's (vocabulary 80, windows of 80, 8, 256).
    for (s, n) in [(shape(12, 10, 4, 16), 9), (shape(80, 80, 8, 256), 3)] {
        let burn = fedcluster_nn::build(Net::CharLstm(s), Backend::Cpu, None).unwrap();
        let ours = native(s);
        assert_eq!(ours.num_params(), burn.num_params());
        assert_eq!(ours.tensors(), burn.tensors());
        assert_eq!(ours.head_start(), burn.head_start());
        assert_eq!(
            ours.forward_flops_per_sample(),
            burn.forward_flops_per_sample()
        );
        let mut p = vec![0.0; ours.num_params()];
        let mut q = vec![1.0; burn.num_params()];
        ours.init(&mut stream(3, Purpose::Init, 0, 0), &mut p);
        burn.init(&mut stream(3, Purpose::Init, 0, 0), &mut q);
        assert_eq!(p, q, "the same initial parameters");

        let (x, y) = windows(s, n, 4);
        let batch = Batch::new(&x, Targets::Class(&y), s.seq_len).unwrap();
        let mut ws = Workspace::default();
        let (mut g_ours, mut g_burn) = (vec![0.0; p.len()], vec![0.0; p.len()]);
        let l_ours = ours.loss_grad(&p, batch, &mut g_ours, &mut ws);
        let l_burn = burn.loss_grad(&p, batch, &mut g_burn, &mut ws);
        assert!(
            (l_ours - l_burn).abs() < 1e-5 * l_burn.abs(),
            "loss {l_ours} against {l_burn}"
        );
        let e = rel(&g_ours, &g_burn);
        assert!(e < 1e-4, "gradient: relative error {e}");
        let (e_ours, e_burn) = (ours.loss(&p, batch, &mut ws), burn.loss(&p, batch, &mut ws));
        assert!((e_ours - e_burn).abs() < 1e-5 * e_burn.abs());
        assert_eq!(
            ours.count_correct(&p, batch, &mut ws),
            burn.count_correct(&p, batch, &mut ws)
        );
    }
}

#[test]
fn the_config_runs_natively_by_default() {
    let input = Input::flat(10, Task::Classification { classes: 12 });
    let config = |backend| CharLstmConfig {
        embedding: 4,
        hidden: 16,
        layers: 2,
        backend,
        state: LstmState::Zero,
        eval_batch: None,
    };
    let default = config(None).build(&input).unwrap();
    let named = config(Some(ModelBackend::Native)).build(&input).unwrap();
    let burn = config(Some(ModelBackend::Ndarray)).build(&input).unwrap();
    let (x, y) = windows(shape(12, 10, 4, 16), 5, 5);
    let batch = Batch::new(&x, Targets::Class(&y), 10).unwrap();
    let mut p = vec![0.0; burn.num_params()];
    burn.init(&mut stream(1, Purpose::Init, 0, 0), &mut p);
    let mut ws = Workspace::default();
    let native = native(shape(12, 10, 4, 16)).loss(&p, batch, &mut ws);
    // The native model's bits, which burn's differ from in the last places.
    assert_eq!(default.loss(&p, batch, &mut ws), native);
    assert_eq!(named.loss(&p, batch, &mut ws), native);
    assert_ne!(burn.loss(&p, batch, &mut ws), native);
    let one_symbol = Input::flat(10, Task::Classification { classes: 1 });
    assert!(config(None).build(&one_symbol).is_err());
}

#[test]
fn the_carried_state_is_native_and_its_keys_are_checked() {
    let input = Input::flat(10, Task::Classification { classes: 12 });
    let config = |backend, state, eval_batch| CharLstmConfig {
        embedding: 4,
        hidden: 16,
        layers: 2,
        backend,
        state,
        eval_batch,
    };
    let (x, y) = windows(shape(12, 10, 4, 16), 5, 6);
    let batch = Batch::new(&x, Targets::Class(&y), 10).unwrap();
    let zero = config(None, LstmState::Zero, None).build(&input).unwrap();
    let mut p = vec![0.0; zero.num_params()];
    zero.init(&mut stream(2, Purpose::Init, 0, 0), &mut p);
    let mut ws = Workspace::default();
    let loss = |c: CharLstmConfig, ws: &mut Workspace| c.build(&input).unwrap().loss(&p, batch, ws);
    let zero_loss = zero.loss(&p, batch, &mut ws);
    // Evaluation batches of 512 (the default) hold the 5 windows: zero states.
    let whole = loss(config(None, LstmState::Carried, None), &mut ws);
    assert!((whole - zero_loss).abs() < 1e-6 * zero_loss);
    let carried = loss(config(None, LstmState::Carried, Some(2)), &mut ws);
    // Rounding moves it by about 1e-7, the carried states by about 1e-4.
    assert!(
        (carried - zero_loss).abs() > 1e-5 * zero_loss,
        "{carried} vs {zero_loss}"
    );
    let refused = |c: CharLstmConfig| c.build(&input).err().unwrap().to_string();
    let burn = config(Some(ModelBackend::Ndarray), LstmState::Carried, None);
    assert!(refused(burn).contains("`model.state`"), "{}", refused(burn));
    for bad in [
        config(None, LstmState::Zero, Some(4)),
        config(None, LstmState::Carried, Some(0)),
    ] {
        assert!(
            refused(bad).contains("`model.eval_batch`"),
            "{}",
            refused(bad)
        );
    }
}

/// Each client's parameters after full-batch training on a pool of
/// `threads` threads, one workspace per worker.
fn train_clients(threads: usize) -> Vec<Vec<f32>> {
    let s = shape(10, 6, 3, 8);
    let model = native(s);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    // Clients of different sizes, one over a training pass's 64 windows, so
    // a reused workspace holds another client's values.
    let sizes = [70usize, 5, 23, 11];
    pool.install(|| {
        sizes
            .par_iter()
            .enumerate()
            .map_init(Workspace::default, |ws, (c, &n)| {
                let (x, y) = windows(s, n, 10 + c as u64);
                let batch = Batch::new(&x, Targets::Class(&y), s.seq_len).unwrap();
                let mut p = vec![0.0; model.num_params()];
                model.init(&mut stream(7, Purpose::Init, 0, 0), &mut p);
                model.train(&mut p, batch, 0.5, 4, ws);
                p
            })
            .collect()
    })
}

#[test]
fn native_training_is_bit_identical_on_1_and_2_threads() {
    let one = train_clients(1);
    let two = train_clients(2);
    let bits = |v: &[Vec<f32>]| -> Vec<Vec<u32>> {
        v.iter()
            .map(|p| p.iter().map(|x| x.to_bits()).collect())
            .collect()
    };
    assert_eq!(bits(&one), bits(&two));
    assert!(one.iter().all(|p| p.iter().all(|v| v.is_finite())));
}

/// Evaluation asks for the loss and the number correct in one call
/// (`Model::loss_and_correct`): both tiers answer it with one forward pass,
/// which must give exactly what `loss` and `count_correct` give, on a batch
/// longer than one evaluation chunk and on an empty one.
#[test]
fn loss_and_correct_in_one_pass_equals_the_two_calls() {
    let s = shape(12, 10, 4, 16);
    let burn = fedcluster_nn::build(Net::CharLstm(s), Backend::Cpu, None).unwrap();
    let ours: Box<dyn Model> = Box::new(native(s));
    let mut p = vec![0.0; ours.num_params()];
    ours.init(&mut stream(5, Purpose::Init, 0, 0), &mut p);
    let mut ws = Workspace::default();
    for n in [1_100, 7, 0] {
        let (x, y) = windows(s, n, 6);
        let batch = Batch::new(&x, Targets::Class(&y), s.seq_len).unwrap();
        for model in [&ours, &burn] {
            let (loss, correct) = model.loss_and_correct(&p, batch, &mut ws);
            let alone = model.loss(&p, batch, &mut ws);
            assert_eq!(loss.to_bits(), alone.to_bits(), "{n} windows: loss");
            assert_eq!(correct, model.count_correct(&p, batch, &mut ws));
        }
    }
}
