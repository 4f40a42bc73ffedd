//! Clients in sequence (`clients = "sequential"`): a round's participants of
//! each cluster train one after another, each from the model the previous one
//! returned, one link of the chain per engine round (see
//! [`super::Clients::Sequential`], which emulates the SR-FCA public code).

use rand::seq::SliceRandom;

use fedcluster_core::{ClientId, Rng};

/// The chains of one round: per cluster, its participants in training order,
/// and the model the next link starts from.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Chain {
    /// Per cluster, the participants in the order they train.
    order: Vec<Vec<ClientId>>,
    /// Links done.
    done: usize,
    /// Per cluster, the model the next link starts from (`k x p`).
    pub current: Vec<f32>,
}

impl Chain {
    /// The chains of `chosen` (the round's participants), each cluster's in an
    /// order drawn from `rng` (the public code trains in `np.random.choice`'s
    /// order), starting from `models`.
    pub fn new(
        chosen: &[ClientId],
        assignment: &[Option<usize>],
        models: &[f32],
        k: usize,
        rng: &mut Rng,
    ) -> Self {
        let mut order = vec![Vec::new(); k];
        for &id in chosen {
            if let Some(c) = assignment[id] {
                order[c].push(id);
            }
        }
        for clients in &mut order {
            clients.shuffle(rng);
        }
        Self {
            order,
            done: 0,
            current: models.to_vec(),
        }
    }

    /// This link's clients with their clusters, in client-id order.
    pub fn link(&self) -> Vec<(ClientId, usize)> {
        let mut link: Vec<(ClientId, usize)> = self
            .order
            .iter()
            .enumerate()
            .filter_map(|(c, clients)| clients.get(self.done).map(|&id| (id, c)))
            .collect();
        link.sort_unstable();
        link
    }

    /// Ends a link; whether that was the last one of the round.
    pub fn advance(&mut self) -> bool {
        self.done += 1;
        self.order.iter().all(|clients| clients.len() <= self.done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fedcluster_core::{Purpose, stream};

    #[test]
    fn each_cluster_chains_its_participants_one_link_at_a_time() {
        let mut rng = stream(3, Purpose::Server, 0, 0);
        let assignment = [Some(0), Some(1), Some(0), Some(0), Some(1)];
        let mut chain = Chain::new(&[0, 1, 2, 3], &assignment, &[0.0; 4], 2, &mut rng);
        let mut seen = Vec::new();
        let mut links = 0;
        loop {
            let link = chain.link();
            assert!(link.windows(2).all(|w| w[0].0 < w[1].0));
            seen.extend(link);
            links += 1;
            if chain.advance() {
                break;
            }
        }
        assert_eq!(links, 3, "cluster 0 has three participants");
        seen.sort_unstable();
        assert_eq!(seen, vec![(0, 0), (1, 1), (2, 0), (3, 0)]);
    }
}
