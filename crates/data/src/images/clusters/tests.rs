//! Tests of the clustered image partitions, on a tiny hand-made data set and
//! on the real MNIST.

use fedcluster_core::{Purpose, stream};
use rand::seq::SliceRandom;

use super::*;
use crate::dataset::{ClientData, TargetsOwned};
use crate::images::downsample2x2;
use crate::mnist::tests::real_mnist;

/// The four rotations, one cluster each.
const ROTATIONS: [Transform; 4] = [
    Transform::Identity,
    Transform::Rotate90,
    Transform::Rotate180,
    Transform::Rotate270,
];

/// `count` 4x4 images whose pixels all differ, labels `i % 10`.
fn tiny(train: usize, test: usize) -> ImageSet {
    let images = |count: usize, base: usize| -> Vec<f32> {
        (0..count * 16)
            .map(|p| (base + p) as f32 / 1000.0)
            .collect()
    };
    let labels = |count: usize| (0..count).map(|i| (i % 10) as u32).collect();
    ImageSet {
        shape: ImageShape {
            height: 4,
            width: 4,
            channels: 1,
        },
        classes: 10,
        train_images: images(train, 0),
        train_labels: labels(train),
        test_images: images(test, 500),
        test_labels: labels(test),
    }
}

fn spec(
    transforms: &[Transform],
    clients: usize,
    n: usize,
    test_clients: usize,
) -> ImageClustersSpec {
    ImageClustersSpec {
        transforms: transforms.to_vec(),
        clients,
        points_per_client: n,
        test_clients,
        downsample: false,
        disjoint: false,
        permute_labels: false,
        skew: None,
        data_dir: None,
    }
}

/// The permutation of the training images of cluster `j`.
fn order(train: usize, seed: u64, j: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..train).collect();
    order.shuffle(&mut stream(seed, Purpose::Partition, j as u64, 0));
    order
}

/// Image `i` of `images`, downsampled if asked, then transformed.
fn expected(m: &ImageSet, images: &[f32], i: usize, t: Transform, down: bool) -> Vec<f32> {
    let len = m.image_len();
    let mut src = images[i * len..(i + 1) * len].to_vec();
    let mut shape = m.shape;
    if down {
        shape = downsampled(m.shape);
        let mut small = vec![0.0; shape.height * shape.width];
        downsample2x2(m.shape, &src, &mut small).unwrap();
        src = small;
    }
    let mut out = vec![0.0; src.len()];
    t.apply(shape, &src, &mut out).unwrap();
    out
}

/// Checks every sample of `data` against the definition of the partition.
fn check_contents(m: &ImageSet, s: &ImageClustersSpec, seed: u64, data: &FederatedData) {
    let k = s.transforms.len();
    let n = s.points_per_client;
    let (per, test_per) = (s.clients / k, s.test_clients / k);
    assert_eq!(data.validate(), Ok(()));
    assert_eq!(data.train.len(), s.clients);
    assert_eq!(data.test.len(), s.test_clients);
    assert_eq!(data.task, Task::Classification { classes: 10 });
    assert_eq!(data.truth.clusters, k);
    assert_eq!(data.truth.params, None);
    let dim = data.dim;
    for (j, t) in s.transforms.iter().enumerate() {
        // Disjoint: one permutation, client i its i-th chunk.
        let (order, skip) = match s.disjoint {
            true => (order(m.train_len(), seed, 0), j * per * n),
            false => (order(m.train_len(), seed, j), 0),
        };
        for c in 0..per {
            let client = &data.train[j * per + c];
            assert_eq!(data.truth.train_labels[j * per + c], j);
            assert_eq!(client.len(), n);
            let indices = &order[skip + c * n..][..n];
            assert_eq!(client.y, TargetsOwned::Class(client_labels(m, indices)));
            for (x, i) in client.x.chunks_exact(dim).zip(indices) {
                assert_eq!(x, expected(m, &m.train_images, *i, *t, s.downsample));
            }
        }
        for c in 0..test_per {
            let client = &data.test[j * test_per + c];
            assert_eq!(data.truth.test_labels[j * test_per + c], j);
            assert_eq!(
                client.y,
                TargetsOwned::Class(m.test_labels[c * n..][..n].to_vec())
            );
            for (p, x) in client.x.chunks_exact(dim).enumerate() {
                assert_eq!(x, expected(m, &m.test_images, c * n + p, *t, s.downsample));
            }
        }
    }
}

fn client_labels(m: &ImageSet, indices: &[usize]) -> Vec<u32> {
    indices.iter().map(|i| m.train_labels[*i]).collect()
}

#[test]
fn tiny_partition_follows_the_definition() {
    let m = tiny(12, 6);
    let all = ROTATIONS;
    for (s, dim) in [
        (spec(&all, 8, 3, 4), 16),
        (spec(&[Transform::Identity, Transform::Invert], 4, 6, 2), 16),
        (
            ImageClustersSpec {
                downsample: true,
                ..spec(&all[..2], 2, 6, 2)
            },
            4,
        ),
    ] {
        let data = image_clusters(&m, &s, 3, "mnist").unwrap();
        assert_eq!(data.dim, dim);
        check_contents(&m, &s, 3, &data);
    }
    let s = spec(&[Transform::Identity, Transform::Invert], 4, 3, 0);
    let data = image_clusters(&m, &s, 3, "mnist").unwrap();
    assert_eq!(data.name, "mnist-identity-invert");
    assert_eq!(data.truth.train_labels, [0, 0, 1, 1]);
    assert!(data.test.is_empty() && data.truth.test_labels.is_empty());
}

/// A joining process's clients, built alone, are the partition's clients.
#[test]
fn some_clients_alone_are_the_partitions_clients() {
    let m = tiny(12, 6);
    let all = ROTATIONS;
    let s = spec(&all, 8, 3, 4);
    let data = image_clusters(&m, &s, 3, "mnist").unwrap();
    let ids = [7, 0, 5, 2];
    let alone = image_cluster_clients(&m, &s, 3, &ids).unwrap();
    for (client, &id) in alone.iter().zip(&ids) {
        assert_eq!(*client, data.train[id], "client {id}");
    }
    let e = image_cluster_clients(&m, &s, 3, &[8])
        .unwrap_err()
        .to_string();
    assert!(e.contains("client 8"), "{e}");
}

/// The partition's training clients produced on demand are its stored
/// clients, bit for bit, and so is the whole materialised data set.
fn view_matches_stored(m: &ImageSet, s: &ImageClustersSpec, seed: u64) {
    use fedcluster_core::ShardBuf;
    let stored = image_clusters(m, s, seed, "mnist").unwrap();
    let data = super::ImageClustersData::new(m.clone(), s, seed, "mnist").unwrap();
    {
        let view = data.view();
        assert_eq!(view.dim, stored.dim);
        assert_eq!(view.train.num_clients(), stored.train.len());
        let mut buf = ShardBuf::default();
        for (i, client) in stored.train.iter().enumerate() {
            let produced = view.train.batch(i, &mut buf);
            let want = client.batch(stored.dim);
            assert_eq!(produced.x, want.x, "client {i}");
            assert_eq!(produced.y, want.y, "client {i}");
        }
    }
    assert_eq!(data.materialize(), stored);
}

#[test]
fn clients_produced_on_demand_are_the_stored_ones() {
    let m = tiny(12, 6);
    view_matches_stored(&m, &spec(&ROTATIONS, 8, 3, 4), 3);
    let down = ImageClustersSpec {
        downsample: true,
        ..spec(&[Transform::Identity, Transform::Invert], 2, 6, 2)
    };
    view_matches_stored(&m, &down, 5);
}

#[test]
fn disjoint_clients_hold_every_image_once() {
    let m = tiny(24, 6);
    let s = ImageClustersSpec {
        disjoint: true,
        ..spec(&ROTATIONS, 8, 3, 4)
    };
    let data = image_clusters(&m, &s, 3, "mnist").unwrap();
    check_contents(&m, &s, 3, &data);
    // 8 clients of 3 of the 24 images: each image exactly once. The tiny
    // images' pixels all differ, so an image is known by its first pixel
    // (of the identity cluster: the others are transformed, so compare the
    // partition's indices).
    let parts = layout::Parts::new(&m, &s, 3).unwrap();
    let mut seen: Vec<u32> = (0..8)
        .flat_map(|i| parts.layout.client(i).1.to_vec())
        .collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..24).collect::<Vec<u32>>());
    view_matches_stored(&m, &s, 3);
    let alone = image_cluster_clients(&m, &s, 3, &[6, 1]).unwrap();
    assert_eq!((&alone[0], &alone[1]), (&data.train[6], &data.train[1]));
    // Without `disjoint` the same sizes reuse images across clusters.
    let shared = layout::Parts::new(&m, &spec(&ROTATIONS, 8, 3, 4), 3).unwrap();
    let mut all: Vec<u32> = (0..8)
        .flat_map(|i| shared.layout.client(i).1.to_vec())
        .collect();
    all.sort_unstable();
    all.dedup();
    assert!(all.len() < 24);
    // More disjoint images than there are: the field is named.
    let e = image_clusters(&tiny(23, 6), &s, 3, "mnist")
        .unwrap_err()
        .to_string();
    assert!(e.contains("clients") && e.contains("disjoint"), "{e}");
}

#[test]
fn partitions_depend_on_the_seed_only() {
    let m = tiny(40, 10);
    let s = spec(&[Transform::Identity, Transform::Identity], 2, 10, 2);
    let a = image_clusters(&m, &s, 11, "mnist").unwrap();
    assert_eq!(a, image_clusters(&m, &s, 11, "mnist").unwrap());
    assert_ne!(a.train, image_clusters(&m, &s, 12, "mnist").unwrap().train);
    // The same transform twice: only the independent permutations differ.
    assert_ne!(a.train[0], a.train[1]);
    assert_eq!(a.test[0], a.test[1]);
}

#[test]
fn bad_specs_name_the_field() {
    let rot = [Transform::Identity, Transform::Rotate90];
    let field = |s: ImageClustersSpec| {
        s.check_sizes(60_000, 10_000)
            .unwrap_err()
            .field()
            .to_string()
    };
    assert_eq!(field(spec(&[], 4, 10, 0)), "transforms");
    assert_eq!(field(spec(&rot, 0, 10, 0)), "clients");
    assert_eq!(field(spec(&rot, 3, 10, 0)), "clients");
    assert_eq!(field(spec(&rot, 4, 0, 0)), "points_per_client");
    assert_eq!(field(spec(&rot, 4, 10, 3)), "test_clients");
    assert_eq!(field(spec(&rot, 2, 60_001, 0)), "clients");
    assert_eq!(field(spec(&rot, 2, usize::MAX, 0)), "clients");
    assert_eq!(field(spec(&rot, 2, 10_001, 2)), "test_clients");
    // IFCA's rotated MNIST (m n = 240,000, m_test n = 40,000) and SR-FCA's
    // inverted MNIST fit exactly; one more client does not.
    let all = ROTATIONS;
    assert_eq!(
        spec(&all, 2400, 100, 400).check_sizes(60_000, 10_000),
        Ok(())
    );
    assert_eq!(field(spec(&all, 2404, 100, 400)), "clients");
    assert_eq!(field(spec(&all, 2400, 100, 404)), "test_clients");
    let inv = [Transform::Identity, Transform::Invert];
    assert_eq!(spec(&inv, 100, 600, 0).check_sizes(60_000, 10_000), Ok(()));
    // Against the data given: the tiny set has 12 training images.
    let m = tiny(12, 6);
    let err = image_clusters(&m, &spec(&rot, 4, 7, 0), 0, "mnist").unwrap_err();
    assert_eq!(err.field(), "clients");
    assert!(err.to_string().contains("12 training images"), "{err}");
}

#[test]
fn bad_images_are_reported() {
    let rot = spec(&[Transform::Identity, Transform::Rotate90], 2, 2, 0);
    let mut m = tiny(4, 2);
    (m.shape.height, m.shape.width) = (2, 8);
    let err = image_clusters(&m, &rot, 0, "mnist").unwrap_err();
    assert_eq!(err.field(), "transforms[1]");
    let inv = spec(&[Transform::Invert], 1, 2, 0);
    assert!(image_clusters(&m, &inv, 0, "mnist").is_ok());

    let mut m = tiny(4, 2);
    m.train_images.pop();
    assert_eq!(
        image_clusters(&m, &inv, 0, "mnist").unwrap_err().field(),
        "images.train_images"
    );
    let mut m = tiny(4, 2);
    m.test_labels[1] = 10;
    assert_eq!(
        image_clusters(&m, &inv, 0, "mnist").unwrap_err().field(),
        "images.test_labels[1]"
    );
    let mut m = tiny(4, 2);
    (m.shape.height, m.shape.width) = (1, 16);
    let down = ImageClustersSpec {
        downsample: true,
        ..inv
    };
    assert_eq!(
        image_clusters(&m, &down, 0, "mnist").unwrap_err().field(),
        "downsample"
    );
}

#[test]
fn specs_read_from_toml() {
    let s: ImageClustersSpec = toml::from_str(
        "transforms = [\"identity\", \"invert\"]\n\
         clients = 100\npoints_per_client = 600\ntest_clients = 10\n\
         data_dir = \"data/mnist\"\n",
    )
    .unwrap();
    assert_eq!(s.transforms, [Transform::Identity, Transform::Invert]);
    assert!(!s.downsample);
    assert_eq!(
        s.data_dir.as_deref(),
        Some(std::path::Path::new("data/mnist"))
    );
    assert_eq!(s.check_sizes(60_000, 10_000), Ok(()));
    let bad = "transforms = [\"identity\"]\nclients = 1\npoints_per_client = 1\n\
               test_clients = 0\nclusters = 2\n";
    assert!(toml::from_str::<ImageClustersSpec>(bad).is_err());
    let bad = "transforms = [\"rotate45\"]\nclients = 1\npoints_per_client = 1\ntest_clients = 0\n";
    assert!(toml::from_str::<ImageClustersSpec>(bad).is_err());
}

#[test]
fn rotated_real_mnist() {
    let Some(m) = real_mnist("rotated_real_mnist") else {
        return;
    };
    let all = ROTATIONS;
    let s = spec(&all, 8, 10, 4);
    let data = image_clusters(m, &s, 5, "mnist").unwrap();
    assert_eq!(data.dim, 784);
    assert_eq!(data.name, "mnist-identity-rotate90-rotate180-rotate270");
    assert_eq!(data.truth.train_labels, [0, 0, 1, 1, 2, 2, 3, 3]);
    assert_eq!(data.truth.test_labels, [0, 1, 2, 3]);
    check_contents(m, &s, 5, &data);
    assert_eq!(data, image_clusters(m, &s, 5, "mnist").unwrap());
    view_matches_stored(m, &s, 5);
    view_matches_stored(m, &spec(&all, 2400, 25, 400), 1);
    // Independent permutations per cluster.
    let orders: Vec<Vec<usize>> = (0..4).map(|j| order(60_000, 5, j)).collect();
    assert_ne!(orders[0][..20], orders[1][..20]);
    // Client 0's first image is training image orders[0][0], untouched; the
    // first test client holds the first test images (a 7 first).
    assert_eq!(
        data.train[0].x[..784],
        *m.train_image(orders[0][0]).unwrap()
    );
    assert_eq!(data.test[0].x[..784], *m.test_image(0).unwrap());
    assert_eq!(
        data.test[0].y,
        TargetsOwned::Class(m.test_labels[..10].to_vec())
    );

    let inv = ImageClustersSpec {
        downsample: true,
        ..spec(&[Transform::Identity, Transform::Invert], 4, 5, 2)
    };
    let data = image_clusters(m, &inv, 1, "mnist").unwrap();
    assert_eq!(data.dim, 196);
    assert_eq!(data.name, "mnist-identity-invert-14x14");
    check_contents(m, &inv, 1, &data);
}

/// Concept shift: cluster 0 keeps the true labels, every other cluster
/// relabels its training and test images by one permutation of its own.
#[test]
fn permuted_labels_relabel_each_cluster_but_the_first() {
    let m = tiny(40, 20);
    let s = ImageClustersSpec {
        permute_labels: true,
        ..spec(&[Transform::Identity; 3], 6, 10, 3)
    };
    let plain = image_clusters(&m, &spec(&[Transform::Identity; 3], 6, 10, 3), 4, "mnist").unwrap();
    let data = image_clusters(&m, &s, 4, "mnist").unwrap();
    assert_eq!(
        data.name,
        "mnist-identity-identity-identity-permuted-labels"
    );
    let classes = |c: &ClientData| match &c.y {
        TargetsOwned::Class(y) => y.clone(),
        other => panic!("{other:?}"),
    };
    let mut maps = Vec::new();
    for j in 0..3 {
        // The same images as without the shift, relabelled by one map.
        let mut map = vec![None; 10];
        for (shifted, true_labels) in [
            (
                &data.train[2 * j..2 * j + 2],
                &plain.train[2 * j..2 * j + 2],
            ),
            (&data.test[j..j + 1], &plain.test[j..j + 1]),
        ] {
            for (a, b) in shifted.iter().zip(true_labels) {
                assert_eq!(a.x, b.x);
                for (new, old) in classes(a).into_iter().zip(classes(b)) {
                    assert_eq!(*map[old as usize].get_or_insert(new), new, "cluster {j}");
                }
            }
        }
        let map: Vec<u32> = map.into_iter().map(|v| v.unwrap()).collect();
        let mut sorted = map.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..10).collect::<Vec<u32>>(), "a permutation");
        maps.push(map);
    }
    assert_eq!(maps[0], (0..10).collect::<Vec<u32>>());
    assert_ne!(maps[1], maps[0]);
    assert_ne!(maps[1], maps[2]);
    view_matches_stored(&m, &s, 4);
    let alone = image_cluster_clients(&m, &s, 4, &[5, 0]).unwrap();
    assert_eq!((&alone[0], &alone[1]), (&data.train[5], &data.train[0]));
}

/// A skew deals each cluster's images to its clients: the sizes and labels
/// follow the deal, the transforms the cluster, and the clients produced on
/// demand or alone are the stored ones.
#[test]
fn skews_combine_with_clusters() {
    let m = tiny(400, 20);
    for skew in [
        LabelSkew::Dirichlet { alpha: 0.3 },
        LabelSkew::Classes { per_client: 2 },
        LabelSkew::Quantity { alpha: 0.5 },
    ] {
        for disjoint in [false, true] {
            let s = ImageClustersSpec {
                skew: Some(skew.clone()),
                disjoint,
                ..spec(&[Transform::Identity, Transform::Rotate90], 8, 20, 2)
            };
            let data = image_clusters(&m, &s, 6, "mnist").unwrap();
            assert!(data.name.ends_with(&skew.name()), "{}", data.name);
            assert_eq!(data.validate(), Ok(()));
            let per_cluster: Vec<usize> = (0..2)
                .map(|j| data.train[4 * j..4 * j + 4].iter().map(|c| c.len()).sum())
                .collect();
            assert_eq!(per_cluster, [80, 80], "{skew:?}");
            if !matches!(skew, LabelSkew::Quantity { .. }) {
                assert!(data.train.iter().all(|c| c.len() == 20), "{skew:?}");
            }
            if let LabelSkew::Classes { .. } = skew {
                // Shards of the label-sorted cluster: fewer classes per
                // client than equal chunks of its permutation.
                let plain = ImageClustersSpec {
                    skew: None,
                    ..s.clone()
                };
                let plain = image_clusters(&m, &plain, 6, "mnist").unwrap();
                assert!(mean_classes(&data) < mean_classes(&plain) - 2.0);
            }
            view_matches_stored(&m, &s, 6);
            let alone = image_cluster_clients(&m, &s, 6, &[7, 2]).unwrap();
            assert_eq!((&alone[0], &alone[1]), (&data.train[7], &data.train[2]));
            if disjoint {
                let parts = layout::Parts::new(&m, &s, 6).unwrap();
                let mut seen: Vec<u32> = (0..8)
                    .flat_map(|i| parts.layout.client(i).1.to_vec())
                    .collect();
                seen.sort_unstable();
                seen.dedup();
                assert_eq!(seen.len(), 160, "{skew:?}: disjoint clients share an image");
            }
        }
    }
    let bad = ImageClustersSpec {
        skew: Some(LabelSkew::Classes { per_client: 3 }),
        ..spec(&[Transform::Identity], 2, 20, 0)
    };
    assert_eq!(
        bad.check_sizes(400, 20).unwrap_err().field(),
        "skew.per_client"
    );
}

/// The mean number of classes a training client holds.
fn mean_classes(data: &FederatedData) -> f64 {
    let count = |c: &ClientData| {
        let TargetsOwned::Class(y) = &c.y else {
            panic!("{:?}", c.y)
        };
        let mut y = y.clone();
        y.sort_unstable();
        y.dedup();
        y.len() as f64
    };
    data.train.iter().map(count).sum::<f64>() / data.train.len() as f64
}

/// Any angle: the partition keeps the image shape, also of images that are
/// not square, which quarter turns refuse.
#[test]
fn any_angle_rotations_partition_any_image() {
    let mut m = tiny(8, 4);
    (m.shape.height, m.shape.width) = (2, 8);
    let s = spec(&[Transform::Identity, Transform::Rotate(30.0)], 2, 4, 2);
    let data = image_clusters(&m, &s, 1, "mnist").unwrap();
    assert_eq!(data.name, "mnist-identity-rotate30");
    assert_eq!(data.dim, 16);
    check_contents(&m, &s, 1, &data);
    let nan = spec(&[Transform::Rotate(f32::NAN)], 1, 4, 0);
    assert_eq!(nan.check_sizes(8, 4).unwrap_err().field(), "transforms[0]");
}
