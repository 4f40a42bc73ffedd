//! [`HeldOut`]: each training client's own held-out samples as its test
//! client, in place of the data set's test clients, for a validation split
//! that never reads the test data, or a per-client test split.

use anyhow::{Result, bail};

use fedcluster_data::{ClientData, DataSet, TargetsOwned};

use super::spec::HeldOut;

/// `data` with each training client cut by `h`: its first `h.train` samples
/// train, the next `h.test` are test client `i` (same true cluster). Fails,
/// naming the client, when one holds fewer than `h.train + h.test` samples.
pub(super) fn split(data: DataSet, h: HeldOut) -> Result<DataSet> {
    let mut data = match data {
        DataSet::Stored(d) => d,
        DataSet::Generated(g) => g.materialize(),
        DataSet::Images(m) => m.materialize(),
    };
    let need = h.train + h.test;
    if h.train == 0 || h.test == 0 {
        bail!("held-out split {h:?}: both parts need at least one sample");
    }
    let mut train = Vec::with_capacity(data.train.len());
    let mut test = Vec::with_capacity(data.train.len());
    for (i, client) in data.train.iter().enumerate() {
        if client.len() < need {
            bail!(
                "{}: training client {i} holds {} samples, fewer than the {} + {} of the \
                 held-out split",
                data.name,
                client.len(),
                h.train,
                h.test
            );
        }
        train.push(rows(client, data.dim, 0..h.train));
        test.push(rows(client, data.dim, h.train..need));
    }
    data.train = train;
    data.test = test;
    data.truth.test_labels = data.truth.train_labels.clone();
    data.name = format!("{}-held-out-{}-{}", data.name, h.train, h.test);
    data.validate()?;
    Ok(DataSet::Stored(data))
}

/// Rows `range` of `client` (of `dim` features each).
fn rows(client: &ClientData, dim: usize, range: std::ops::Range<usize>) -> ClientData {
    ClientData {
        x: client.x[range.start * dim..range.end * dim].to_vec(),
        y: match &client.y {
            TargetsOwned::Real(y) => TargetsOwned::Real(y[range].to_vec()),
            TargetsOwned::Class(y) => TargetsOwned::Class(y[range].to_vec()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fedcluster_data::{FederatedData, GroundTruth};

    fn client(values: &[u32]) -> ClientData {
        ClientData {
            x: values.iter().map(|&v| v as f32).collect(),
            y: TargetsOwned::Class(values.to_vec()),
        }
    }

    fn data() -> FederatedData {
        FederatedData {
            name: "toy".into(),
            dim: 1,
            task: fedcluster_data::Task::Classification { classes: 10 },
            image: None,
            train: vec![client(&[0, 1, 2, 3, 4]), client(&[5, 6, 7, 8, 9])],
            test: vec![client(&[9])],
            truth: GroundTruth {
                clusters: 2,
                train_labels: vec![0, 1],
                test_labels: vec![1],
                params: None,
            },
        }
    }

    #[test]
    fn each_client_trains_on_its_first_samples_and_is_tested_on_the_next() {
        let DataSet::Stored(d) =
            split(DataSet::Stored(data()), HeldOut { train: 2, test: 2 }).unwrap()
        else {
            panic!("a stored data set");
        };
        assert_eq!(d.train, vec![client(&[0, 1]), client(&[5, 6])]);
        assert_eq!(d.test, vec![client(&[2, 3]), client(&[7, 8])]);
        assert_eq!(d.truth.test_labels, vec![0, 1]);
    }

    #[test]
    fn a_client_too_small_for_the_split_is_named() {
        let Err(e) = split(DataSet::Stored(data()), HeldOut { train: 4, test: 2 }) else {
            panic!("a client of 5 samples split into 4 + 2");
        };
        assert!(
            format!("{e:#}").contains("training client 0 holds 5 samples"),
            "{e:#}"
        );
    }
}
