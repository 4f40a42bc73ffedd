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

/// A cluster's members for one round under `clients_per_round` (the SR-FCA
/// public code's `num_clients_per_round`, drawn per cluster in its
/// `ClusterTrainer`): all of `members` when there are no more than `count`,
/// otherwise `count` of them drawn uniformly without replacement, in the order
/// of `members`.
pub fn members_for_round(members: &[ClientId], count: usize, rng: &mut Rng) -> Vec<ClientId> {
    if members.len() <= count {
        return members.to_vec();
    }
    let mut picked = rand::seq::index::sample(rng, members.len(), count).into_vec();
    picked.sort_unstable();
    picked.into_iter().map(|i| members[i]).collect()
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

    #[test]
    fn members_for_round_draws_count_members_in_order_or_keeps_all() {
        let mut rng = stream(1, Purpose::Server, 0, 0);
        let members = [3, 5, 8, 13, 21, 34];
        let picked = members_for_round(&members, 3, &mut rng);
        assert_eq!(picked.len(), 3);
        assert!(picked.windows(2).all(|w| w[0] < w[1]));
        assert!(picked.iter().all(|c| members.contains(c)));
        assert_eq!(members_for_round(&members, 6, &mut rng), members);
        assert_eq!(members_for_round(&members, 10, &mut rng), members);
    }
}
