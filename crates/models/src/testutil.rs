//! Seeded data and comparison helpers shared by the unit tests of this crate.

use fedcluster_core::rng::{Purpose, Rng, stream};
use fedcluster_core::{Batch, Model, Workspace};
use rand::Rng as _;
use rand_distr::StandardNormal;

/// The test stream for `seed`.
pub fn rng(seed: u64) -> Rng {
    stream(seed, Purpose::ClientData, 0, 0)
}

/// `len` standard normal draws scaled by `scale`.
pub fn normal(rng: &mut Rng, len: usize, scale: f32) -> Vec<f32> {
    (0..len)
        .map(|_| scale * rng.sample::<f32, _>(StandardNormal))
        .collect()
}

/// `len` class indices below `classes`.
pub fn classes(rng: &mut Rng, len: usize, classes: u32) -> Vec<u32> {
    (0..len).map(|_| rng.random_range(0..classes)).collect()
}

/// `|a - b| <= rel * max(|a|, |b|)`, with a message on failure.
pub fn assert_rel(a: f64, b: f64, rel: f64, what: &str) {
    let scale = a.abs().max(b.abs());
    assert!(
        (a - b).abs() <= rel * scale,
        "{what}: {a} vs {b} (relative error {})",
        (a - b).abs() / scale
    );
}

/// `‖a - b‖ <= rel * max(‖a‖, ‖b‖)`, with a message on failure.
pub fn assert_vec_rel(a: &[f32], b: &[f32], rel: f64, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    let sq = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>();
    let diff: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2))
        .sum();
    let scale = sq(a).max(sq(b)).sqrt();
    assert!(
        diff.sqrt() <= rel * scale,
        "{what}: relative error {}",
        diff.sqrt() / scale
    );
}

/// A model that forwards the required methods only, so that `losses` and
/// `assign_and_grad` run the trait's default (per-model) implementations.
pub struct Plain<'a>(pub &'a dyn Model);

impl Model for Plain<'_> {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn num_params(&self) -> usize {
        self.0.num_params()
    }
    fn input_dim(&self) -> usize {
        self.0.input_dim()
    }
    fn init(&self, rng: &mut Rng, out: &mut [f32]) {
        self.0.init(rng, out);
    }
    fn loss(&self, params: &[f32], batch: Batch<'_>, ws: &mut Workspace) -> f64 {
        self.0.loss(params, batch, ws)
    }
    fn loss_grad(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        grad: &mut [f32],
        ws: &mut Workspace,
    ) -> f64 {
        self.0.loss_grad(params, batch, grad, ws)
    }
    fn forward_flops_per_sample(&self) -> u64 {
        self.0.forward_flops_per_sample()
    }
}

/// Runs `assign_and_grad` of `model` and of the trait default on the same inputs
/// and checks that they agree: same choices, losses and gradients within `rel`.
/// Returns the choices.
pub fn assert_assign_matches_default(
    model: &dyn Model,
    models: &[f32],
    group: usize,
    batch: Batch<'_>,
    rel: f64,
) -> Vec<usize> {
    let p = model.num_params();
    let count = models.len() / p;
    let replicas = count / group;
    let run = |m: &dyn Model| {
        let (mut losses, mut chosen) = (vec![0.0; count], vec![usize::MAX; replicas]);
        let mut grads = vec![0.0; replicas * p];
        let mut ws = Workspace::default();
        m.assign_and_grad(
            models,
            group,
            batch,
            &mut losses,
            &mut chosen,
            &mut grads,
            &mut ws,
        );
        // A second call on the warm workspace gives the same bits.
        let mut again = vec![0.0; replicas * p];
        m.assign_and_grad(
            models,
            group,
            batch,
            &mut losses,
            &mut chosen,
            &mut again,
            &mut ws,
        );
        assert_eq!(grads, again, "{}: repeated call", m.name());
        (losses, chosen, grads)
    };
    let (losses, chosen, grads) = run(model);
    let (want_losses, want_chosen, want_grads) = run(&Plain(model));
    assert_eq!(chosen, want_chosen, "chosen models");
    for (l, w) in losses.iter().zip(&want_losses) {
        assert_rel(*l, *w, rel, "losses");
    }
    for (g, w) in grads.chunks_exact(p).zip(want_grads.chunks_exact(p)) {
        assert_vec_rel(g, w, rel, "gradient");
    }
    chosen
}
