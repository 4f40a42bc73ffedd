//! Client sampling for partial participation.

use fedcluster_core::{ClientId, Rng};

/// The participants of a round: all clients when `fraction >= 1`, otherwise
/// `max(1, round(fraction * m))` clients drawn uniformly without replacement,
/// returned in increasing id order.
pub fn participants(num_clients: usize, fraction: f64, rng: &mut Rng) -> Vec<ClientId> {
    if fraction >= 1.0 {
        return (0..num_clients).collect();
    }
    let count = ((fraction * num_clients as f64).round() as usize).clamp(1, num_clients);
    let mut chosen = rand::seq::index::sample(rng, num_clients, count).into_vec();
    chosen.sort_unstable();
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use fedcluster_core::{Purpose, stream};

    #[test]
    fn samples_the_requested_fraction_without_repeats() {
        let mut rng = stream(1, Purpose::Server, 0, 0);
        let p = participants(100, 0.1, &mut rng);
        assert_eq!(p.len(), 10);
        assert!(p.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(participants(7, 1.0, &mut rng), (0..7).collect::<Vec<_>>());
        assert_eq!(participants(7, 0.01, &mut rng).len(), 1);
    }
}
