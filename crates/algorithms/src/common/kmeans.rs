//! k-means with k-means++ seeding (Arthur and Vassilvitskii 2007) and several
//! restarts, keeping the run of lowest inertia. Used by one-shot clustering
//! (IFCA paper, Algorithm 1) on the clients' local models.

use rand::Rng as _;

use fedcluster_core::params::sq_dist;
use fedcluster_core::{CoreError, Rng};

/// A k-means solution.
#[derive(Debug, Clone)]
pub struct KMeans {
    /// Cluster of each point.
    pub labels: Vec<usize>,
    /// The `k` centroids.
    pub centroids: Vec<Vec<f32>>,
    /// Sum of squared distances of the points to their centroids.
    pub inertia: f64,
}

/// Runs k-means `restarts` times (Lloyd iterations until the labels stop changing
/// or `max_iter`), each seeded by k-means++, and returns the lowest-inertia run.
pub fn kmeans(
    points: &[&[f32]],
    k: usize,
    restarts: usize,
    max_iter: usize,
    rng: &mut Rng,
) -> Result<KMeans, CoreError> {
    if k == 0 || points.len() < k {
        return Err(CoreError::Invalid {
            what: "k-means",
            why: format!(
                "need 1 <= k <= number of points, got k = {k} for {} points",
                points.len()
            ),
        });
    }
    let dim = points[0].len();
    if let Some(bad) = points.iter().position(|p| p.len() != dim) {
        return Err(CoreError::Shape {
            what: "k-means point",
            expected: dim,
            got: points[bad].len(),
        });
    }
    let mut best: Option<KMeans> = None;
    for _ in 0..restarts.max(1) {
        let run = lloyd(points, seed_plus_plus(points, k, rng), max_iter);
        if best.as_ref().is_none_or(|b| run.inertia < b.inertia) {
            best = Some(run);
        }
    }
    Ok(best.expect("at least one restart"))
}

fn seed_plus_plus(points: &[&[f32]], k: usize, rng: &mut Rng) -> Vec<Vec<f32>> {
    let mut centroids = vec![points[rng.random_range(0..points.len())].to_vec()];
    let mut d2: Vec<f64> = points.iter().map(|p| sq_dist(p, &centroids[0])).collect();
    while centroids.len() < k {
        let total: f64 = d2.iter().sum();
        let next = if total > 0.0 {
            let mut target = rng.random::<f64>() * total;
            let mut chosen = points.len() - 1;
            for (i, d) in d2.iter().enumerate() {
                if target < *d {
                    chosen = i;
                    break;
                }
                target -= d;
            }
            chosen
        } else {
            rng.random_range(0..points.len())
        };
        centroids.push(points[next].to_vec());
        for (d, p) in d2.iter_mut().zip(points) {
            *d = d.min(sq_dist(p, centroids.last().expect("just pushed")));
        }
    }
    centroids
}

fn nearest(point: &[f32], centroids: &[Vec<f32>]) -> (usize, f64) {
    let mut best = (0, f64::INFINITY);
    for (j, c) in centroids.iter().enumerate() {
        let d = sq_dist(point, c);
        if d < best.1 {
            best = (j, d);
        }
    }
    best
}

fn lloyd(points: &[&[f32]], mut centroids: Vec<Vec<f32>>, max_iter: usize) -> KMeans {
    let k = centroids.len();
    let dim = points[0].len();
    let mut labels = vec![usize::MAX; points.len()];
    for _ in 0..max_iter.max(1) {
        let mut changed = false;
        for (l, p) in labels.iter_mut().zip(points) {
            let (j, _) = nearest(p, &centroids);
            changed |= *l != j;
            *l = j;
        }
        if !changed {
            break;
        }
        let mut sums = vec![vec![0.0f64; dim]; k];
        let mut counts = vec![0usize; k];
        for (l, p) in labels.iter().zip(points) {
            counts[*l] += 1;
            for (s, v) in sums[*l].iter_mut().zip(*p) {
                *s += f64::from(*v);
            }
        }
        for j in 0..k {
            if counts[j] == 0 {
                // An empty cluster takes the point farthest from its centroid.
                let far = (0..points.len())
                    .max_by(|&a, &b| {
                        let da = sq_dist(points[a], &centroids[labels[a]]);
                        let db = sq_dist(points[b], &centroids[labels[b]]);
                        da.total_cmp(&db)
                    })
                    .expect("points is not empty");
                centroids[j] = points[far].to_vec();
                labels[far] = j;
            } else {
                for (c, s) in centroids[j].iter_mut().zip(&sums[j]) {
                    *c = (s / counts[j] as f64) as f32;
                }
            }
        }
    }
    let inertia = labels
        .iter()
        .zip(points)
        .map(|(l, p)| sq_dist(p, &centroids[*l]))
        .sum();
    KMeans {
        labels,
        centroids,
        inertia,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fedcluster_core::{Purpose, stream};
    use rand_distr::{Distribution, StandardNormal};

    #[test]
    fn recovers_well_separated_blobs() {
        let mut rng = stream(3, Purpose::Clustering, 0, 0);
        let centers = [[0.0f32, 0.0], [10.0, 0.0], [0.0, 10.0]];
        let mut pts = Vec::new();
        for i in 0..60 {
            let c = centers[i % 3];
            let nx: f32 = StandardNormal.sample(&mut rng);
            let ny: f32 = StandardNormal.sample(&mut rng);
            pts.push(vec![c[0] + 0.3 * nx, c[1] + 0.3 * ny]);
        }
        let refs: Vec<&[f32]> = pts.iter().map(|p| p.as_slice()).collect();
        let km = kmeans(&refs, 3, 5, 100, &mut rng).unwrap();
        for i in 0..60 {
            for j in 0..60 {
                assert_eq!(km.labels[i] == km.labels[j], i % 3 == j % 3);
            }
        }
        for c in &km.centroids {
            let closest = centers
                .iter()
                .map(|t| sq_dist(c, t).sqrt())
                .fold(f64::INFINITY, f64::min);
            assert!(closest < 0.3, "centroid {c:?} is {closest} from every blob");
        }
    }

    #[test]
    fn rejects_k_larger_than_points() {
        let mut rng = stream(3, Purpose::Clustering, 0, 0);
        let p = [1.0f32];
        assert!(kmeans(&[&p], 2, 1, 10, &mut rng).is_err());
        assert!(kmeans(&[&p], 0, 1, 10, &mut rng).is_err());
    }
}
