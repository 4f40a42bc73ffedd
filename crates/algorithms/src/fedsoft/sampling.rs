//! Which clients a FedSoft round trains: a uniform fraction of them (the
//! default), or per centre `s` clients drawn by their importance weight `u_ks`
//! for it (the FedSoft paper's selection) or by `u_ks n_k` (its public code's).

use serde::{Deserialize, Serialize};

use fedcluster_core::{ClientId, Rng};

/// How a round's participants are drawn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sampling {
    /// `participation` of the clients, uniformly without replacement.
    #[default]
    Uniform,
    /// For each centre `s`, `max(1, round(participation · m / S))` clients
    /// drawn without replacement with probability proportional to `u_ks`
    /// (uniform `1/S` for a client not heard from yet); the round trains the
    /// union of the draws.
    Importance,
    /// The same with probability proportional to `u_ks n_k`.
    ImportanceSize,
}

impl Sampling {
    /// Whether it is the default (not written into a config).
    pub fn is_uniform(&self) -> bool {
        *self == Sampling::Uniform
    }
}

/// The union over the `k` centres of each centre's `per_centre` clients,
/// drawn by `weight(client, centre)`, in increasing id order. A centre whose
/// weights are all zero draws nothing.
pub fn per_centre(
    m: usize,
    k: usize,
    per_centre: usize,
    weight: impl Fn(usize, usize) -> f64,
    rng: &mut Rng,
) -> Vec<ClientId> {
    let mut chosen = vec![false; m];
    for s in 0..k {
        let positive = (0..m).filter(|&i| weight(i, s) > 0.0).count();
        let amount = per_centre.min(positive);
        if amount == 0 {
            continue;
        }
        let drawn = rand::seq::index::sample_weighted(rng, m, |i| weight(i, s), amount)
            .expect("finite non-negative weights, enough of them positive");
        for i in drawn {
            chosen[i] = true;
        }
    }
    (0..m).filter(|&i| chosen[i]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fedcluster_core::{Purpose, stream};

    #[test]
    fn each_centre_draws_its_own_clients_by_weight() {
        let mut rng = stream(1, Purpose::Server, 0, 0);
        // Clients 0-4 belong to centre 0, 5-9 to centre 1.
        let weight = |i: usize, s: usize| if (i < 5) == (s == 0) { 1.0 } else { 0.0 };
        for _ in 0..20 {
            let p = per_centre(10, 2, 2, weight, &mut rng);
            assert_eq!(p.len(), 4, "{p:?}");
            assert_eq!(p.iter().filter(|&&i| i < 5).count(), 2, "{p:?}");
            assert!(p.windows(2).all(|w| w[0] < w[1]));
        }
        // Fewer positive weights than asked for: every one of them.
        let one = |i: usize, _: usize| if i == 3 { 1.0 } else { 0.0 };
        assert_eq!(per_centre(10, 2, 4, one, &mut rng), vec![3]);
    }

    #[test]
    fn heavier_clients_are_drawn_more_often() {
        let mut rng = stream(2, Purpose::Server, 0, 0);
        let weight = |i: usize, _: usize| if i == 0 { 20.0 } else { 1.0 };
        let hits = (0..200)
            .filter(|_| per_centre(20, 1, 1, weight, &mut rng) == vec![0])
            .count();
        // Client 0 holds 20 / 39 of the weight: about 103 of 200 draws.
        assert!((70..140).contains(&hits), "{hits}");
    }
}
