//! Parameter initialisation shared by the models.

use rand::Rng as _;

use fedcluster_core::Rng;

/// Fills `out` with `U(-1/√fan_in, 1/√fan_in)`, PyTorch's `nn.Linear` default for
/// weights and biases; zeros when `fan_in` is 0.
pub fn uniform_fan_in(rng: &mut Rng, fan_in: usize, out: &mut [f32]) {
    if fan_in == 0 {
        out.fill(0.0);
        return;
    }
    let bound = 1.0 / (fan_in as f32).sqrt();
    for v in out {
        *v = rng.random_range(-bound..bound);
    }
}
