//! How a cluster's training images are dealt to its clients when they should
//! not all look alike: the label-skew and quantity-skew partitions of the
//! federated-learning literature, as Flower's partitioners, FedLab and
//! FL-bench offer them, here inside each cluster of a clustered partition.
//!
//! - [`LabelSkew::Dirichlet`] (Hsu, Qi, Brown 2019, "Measuring the effects of
//!   non-identical data distribution"): client `c` draws its label
//!   proportions `q_c ~ Dir(alpha · 1)` over the classes, then each of its
//!   `points_per_client` images from class `l` with probability `q_c[l]`,
//!   without replacement from the cluster's images of that class; a class
//!   that runs out is dropped from the draw (its probability shared by the
//!   others). Small `alpha`: a few classes per client; large: close to iid.
//! - [`LabelSkew::Classes`] (McMahan et al. 2017, the "pathological non-iid"
//!   shards): the cluster's images sorted by label are cut into
//!   `clients · per_client` shards of equal size, and each client receives
//!   `per_client` shards drawn at random, so it sees about `per_client`
//!   classes.
//! - [`LabelSkew::Quantity`]: client sizes in proportion to
//!   `Dir(alpha · 1)` over the cluster's clients (each at least one image),
//!   labels as they come; the cluster still holds `clients · n` images.
//!
//! Every draw comes from the cluster's stream; a client's images come out in
//! a random order.

use rand::Rng;
use rand::seq::SliceRandom;
use rand_distr::{Distribution, Gamma};
use serde::{Deserialize, Serialize};

use crate::error::{DataError, Result};

/// A deal of a cluster's images to its clients other than equal chunks:
/// `[data.skew]` with `kind = "dirichlet" | "classes" | "quantity"`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum LabelSkew {
    /// Each client's label proportions drawn from `Dir(alpha)`.
    Dirichlet {
        /// The concentration (> 0).
        alpha: f64,
    },
    /// `per_client` label-sorted shards per client.
    Classes {
        /// Shards (so about classes) per client; divides `points_per_client`.
        per_client: usize,
    },
    /// Client sizes in proportion to `Dir(alpha)`.
    Quantity {
        /// The concentration (> 0).
        alpha: f64,
    },
}

impl LabelSkew {
    /// Checks the skew for clients of `n` images each; the error names the
    /// field (`skew.alpha`, ...).
    pub fn check(&self, n: usize) -> Result<()> {
        match *self {
            Self::Dirichlet { alpha } | Self::Quantity { alpha } => {
                if !(alpha.is_finite() && alpha > 0.0) {
                    return Err(DataError::invalid(
                        "skew.alpha",
                        format!("must be a positive number, got {alpha}"),
                    ));
                }
            }
            Self::Classes { per_client } => {
                if per_client == 0 || !n.is_multiple_of(per_client) {
                    return Err(DataError::invalid(
                        "skew.per_client",
                        format!(
                            "{per_client} shards per client must be at least 1 and divide \
                             points_per_client = {n}"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Its part of the data set's name: `dirichlet0.5`, `classes2`, ...
    pub fn name(&self) -> String {
        match self {
            Self::Dirichlet { alpha } => format!("dirichlet{alpha}"),
            Self::Classes { per_client } => format!("classes{per_client}"),
            Self::Quantity { alpha } => format!("quantity{alpha}"),
        }
    }

    /// Whether the deal draws images by class from every image the cluster
    /// may hold (the others deal exactly the cluster's share).
    pub(crate) fn draws_from_classes(&self) -> bool {
        matches!(self, Self::Dirichlet { .. })
    }
}

/// Deals `pool` (indices into `labels`, in random order; at least
/// `clients · n` of them) to `clients` clients as `skew` says: each client's
/// image indices.
pub(crate) fn deal(
    skew: &LabelSkew,
    pool: &[usize],
    labels: &[u32],
    classes: usize,
    clients: usize,
    n: usize,
    rng: &mut impl Rng,
) -> std::result::Result<Vec<Vec<usize>>, String> {
    let mut dealt = match *skew {
        LabelSkew::Dirichlet { alpha } => dirichlet(pool, labels, classes, clients, n, alpha, rng)?,
        LabelSkew::Classes { per_client } => {
            shards(&pool[..clients * n], labels, clients, per_client, rng)
        }
        LabelSkew::Quantity { alpha } => quantity(&pool[..clients * n], clients, alpha, rng)?,
    };
    for client in &mut dealt {
        client.shuffle(rng);
    }
    Ok(dealt)
}

/// Proportions drawn from `Dir(alpha · 1)` of dimension `len` (all zero when
/// every gamma draw underflows, which the callers handle).
fn dirichlet_draw(
    alpha: f64,
    len: usize,
    rng: &mut impl Rng,
) -> std::result::Result<Vec<f64>, String> {
    let gamma = Gamma::new(alpha, 1.0).map_err(|e| format!("alpha = {alpha}: {e}"))?;
    let mut q: Vec<f64> = (0..len).map(|_| gamma.sample(rng)).collect();
    let total: f64 = q.iter().sum();
    if total > 0.0 {
        q.iter_mut().for_each(|v| *v /= total);
    }
    Ok(q)
}

fn dirichlet(
    pool: &[usize],
    labels: &[u32],
    classes: usize,
    clients: usize,
    n: usize,
    alpha: f64,
    rng: &mut impl Rng,
) -> std::result::Result<Vec<Vec<usize>>, String> {
    let mut by_class: Vec<Vec<usize>> = vec![Vec::new(); classes];
    for &i in pool {
        by_class[labels[i] as usize].push(i);
    }
    // Each class's images are taken from its end (the pool is random).
    (0..clients)
        .map(|c| {
            let q = dirichlet_draw(alpha, classes, rng)?;
            let mut client = Vec::with_capacity(n);
            for _ in 0..n {
                let class = draw_class(&q, &by_class, rng).ok_or_else(|| {
                    format!(
                        "the cluster's {} images ran out at client {c} (clients of \
                         points_per_client = {n} need {})",
                        pool.len(),
                        clients * n
                    )
                })?;
                client.extend(by_class[class].pop());
            }
            Ok(client)
        })
        .collect()
}

/// A class drawn with probability `q`, among the classes with images left
/// (uniformly among them if they all have probability zero); `None` when
/// none is left.
fn draw_class(q: &[f64], by_class: &[Vec<usize>], rng: &mut impl Rng) -> Option<usize> {
    let left = |l: &usize| !by_class[*l].is_empty();
    let total: f64 = (0..q.len()).filter(left).map(|l| q[l]).sum();
    if total > 0.0 {
        let mut u = rng.random::<f64>() * total;
        let mut last = None;
        for l in (0..q.len()).filter(left) {
            if q[l] > 0.0 {
                last = Some(l);
                if u < q[l] {
                    return Some(l);
                }
                u -= q[l];
            }
        }
        return last;
    }
    let remaining: Vec<usize> = (0..q.len()).filter(left).collect();
    (!remaining.is_empty()).then(|| remaining[rng.random_range(0..remaining.len())])
}

fn shards(
    pool: &[usize],
    labels: &[u32],
    clients: usize,
    per_client: usize,
    rng: &mut impl Rng,
) -> Vec<Vec<usize>> {
    let mut sorted = pool.to_vec();
    sorted.sort_by_key(|&i| labels[i]);
    let size = pool.len() / (clients * per_client);
    let mut order: Vec<usize> = (0..clients * per_client).collect();
    order.shuffle(rng);
    order
        .chunks_exact(per_client)
        .map(|mine| {
            mine.iter()
                .flat_map(|&s| sorted[s * size..(s + 1) * size].iter().copied())
                .collect()
        })
        .collect()
}

fn quantity(
    pool: &[usize],
    clients: usize,
    alpha: f64,
    rng: &mut impl Rng,
) -> std::result::Result<Vec<Vec<usize>>, String> {
    let q = dirichlet_draw(alpha, clients, rng)?;
    let sizes = sizes(&q, pool.len());
    let mut start = 0;
    Ok(sizes
        .iter()
        .map(|&size| {
            let client = pool[start..start + size].to_vec();
            start += size;
            client
        })
        .collect())
}

/// `total` images as client sizes: one each, the rest in proportion to `q`
/// by largest remainders (ties to the lower index; all equal when `q` is all
/// zero).
pub(crate) fn sizes(q: &[f64], total: usize) -> Vec<usize> {
    let m = q.len();
    let rest = total - m;
    let sum: f64 = q.iter().sum();
    let share = |c: usize| {
        if sum > 0.0 {
            q[c] / sum * rest as f64
        } else {
            rest as f64 / m as f64
        }
    };
    let mut sizes: Vec<usize> = (0..m).map(|c| share(c).floor() as usize).collect();
    let mut given: usize = sizes.iter().sum();
    // Rounding may overshoot by one: take it from the largest.
    while given > rest {
        let largest = (0..m).max_by_key(|&c| (sizes[c], std::cmp::Reverse(c)));
        sizes[largest.unwrap_or(0)] -= 1;
        given -= 1;
    }
    let mut by_remainder: Vec<usize> = (0..m).collect();
    by_remainder.sort_by(|&a, &b| {
        let (ra, rb) = (share(a) - share(a).floor(), share(b) - share(b).floor());
        rb.total_cmp(&ra).then(a.cmp(&b))
    });
    for &c in by_remainder.iter().take(rest.saturating_sub(given)) {
        sizes[c] += 1;
    }
    sizes.iter_mut().for_each(|s| *s += 1);
    sizes
}

#[cfg(test)]
mod tests;
