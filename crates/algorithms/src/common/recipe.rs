//! The optional recipe keys of the minibatch optimizers ([`super::optimizer`]):
//! a step-size schedule within each local training ([`Schedule`]: the SR-FCA
//! public code's triangular warm-up and decay) and the tensors that SGD's
//! `weight_decay` is restricted to ([`LayerNames`]: the IFCA public code's L2
//! penalty on its hidden fully connected layers), resolved against a client's
//! data and model into the [`fedcluster_core::train::MinibatchSpec`] fields
//! `schedule` and `decay`.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Mutex;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use fedcluster_core::Model;
use fedcluster_core::train::Triangular;
use fedcluster_core::train::decay::tensor_ranges;

use super::checked::FieldError;

/// A step-size schedule over the optimizer steps of one local training,
/// counted from when the optimizer's state last started (so configs pair it
/// with `keep_state = false`, as the SR-FCA code builds a new optimizer and
/// scheduler at every local training).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, tag = "kind")]
pub enum Schedule {
    /// `np.interp(step, [0, warmup, total], [0, 1, 0])` ([`Triangular`]) with
    /// an epoch of `⌊points / batch_size⌋` steps (at least 1) of the client's
    /// data, `warmup = warmup_epochs` epochs and `total` the local steps
    /// rounded down to whole epochs (the SR-FCA code's `iters_per_epoch =
    /// 50000 // (100 · 16) = 31`, `epochs = 2400 // 31`, `warmup_epochs = 5`).
    /// A local training shorter than the warm-up plus one epoch runs at the
    /// full step size.
    Triangular {
        /// Epochs of the linear warm-up from 0.
        warmup_epochs: usize,
    },
}

impl Schedule {
    /// The schedule of a local training of `steps` minibatches of
    /// `batch_size` on `points` points (`None`: the full step size).
    pub fn resolve(&self, points: usize, batch_size: usize, steps: usize) -> Option<Triangular> {
        match *self {
            Schedule::Triangular { warmup_epochs } => {
                let per_epoch = (points / batch_size.max(1)).max(1);
                let schedule = Triangular {
                    warmup: warmup_epochs.saturating_mul(per_epoch),
                    total: steps / per_epoch * per_epoch,
                };
                (schedule.total > schedule.warmup).then_some(schedule)
            }
        }
    }
}

/// The names of the tensors a weight decay applies to, as the model names
/// them ([`Model::tensors`]). The names live for the whole process, so that
/// the optimizer stays a `Copy` value: each distinct list is kept once
/// ([`LayerNames::new`] interns it), so deserializing the same config again
/// (every client half of a resumed run, every joining client) keeps nothing
/// more.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayerNames(&'static [&'static str]);

impl LayerNames {
    /// The names given, interned: the list of an earlier call with the same
    /// names, else a new one kept for the process' life.
    pub fn new(names: Vec<String>) -> Self {
        static INTERNED: Mutex<BTreeMap<Vec<String>, &'static [&'static str]>> =
            Mutex::new(BTreeMap::new());
        // A panic elsewhere while holding the lock leaves the map whole.
        let mut interned = INTERNED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&list) = interned.get(&names) {
            return Self(list);
        }
        let list: Vec<&'static str> = names
            .iter()
            .map(|n| &*Box::leak(n.clone().into_boxed_str()))
            .collect();
        let list: &'static [&'static str] = Box::leak(list.into_boxed_slice());
        interned.insert(names, list);
        Self(list)
    }

    /// The names, in the order configured.
    pub fn names(&self) -> &'static [&'static str] {
        self.0
    }

    /// The coordinate ranges of the named tensors in `model`'s flat vector;
    /// an unknown or repeated name is an error at `field` listing the
    /// model's tensors.
    pub fn ranges(&self, field: &str, model: &dyn Model) -> Result<Vec<Range<usize>>, FieldError> {
        if self.0.is_empty() {
            return Err(FieldError::new(field, "names no tensor"));
        }
        tensor_ranges(&model.tensors(), self.0).map_err(|e| FieldError::new(field, e.to_string()))
    }
}

impl Serialize for LayerNames {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for LayerNames {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<String>::deserialize(d).map(Self::new)
    }
}

/// Checks every `decay_layers` key in `config` (an algorithm's config, any
/// optimizer in it) against `model`'s tensors: the error names the key's
/// path (`optimizer.decay_layers`) and lists the model's tensors.
pub fn check_layer_names(config: &impl Serialize, model: &dyn Model) -> Result<(), FieldError> {
    let Ok(value) = toml::Value::try_from(config) else {
        return Ok(()); // nothing that TOML can hold names a layer
    };
    check_value(&value, "", model)
}

fn check_value(value: &toml::Value, path: &str, model: &dyn Model) -> Result<(), FieldError> {
    let Some(table) = value.as_table() else {
        return Ok(());
    };
    for (key, v) in table {
        let at = if path.is_empty() {
            key.clone()
        } else {
            format!("{path}.{key}")
        };
        if key == "decay_layers" {
            let names = v
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|n| n.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            LayerNames::new(names).ranges(&at, model)?;
        } else {
            check_value(v, &at, model)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_names_are_kept_once() {
        let names = || vec!["fc1.weight".to_string(), "fc2.weight".to_string()];
        let first = LayerNames::new(names());
        #[derive(Deserialize)]
        struct Config {
            decay_layers: LayerNames,
        }
        let config = r#"decay_layers = ["fc1.weight", "fc2.weight"]"#;
        let again = toml::from_str::<Config>(config).unwrap().decay_layers;
        assert_eq!(first.names(), ["fc1.weight", "fc2.weight"]);
        assert!(
            std::ptr::eq(first.names(), again.names()),
            "a second list with the same names is the first one"
        );
        let other = LayerNames::new(vec!["fc2.weight".into(), "fc1.weight".into()]);
        assert_eq!(other.names(), ["fc2.weight", "fc1.weight"], "order kept");
        assert!(!std::ptr::eq(first.names(), other.names()));
    }

    #[test]
    fn an_epoch_is_the_clients_points_over_the_batch_size() {
        let srfca = Schedule::Triangular { warmup_epochs: 5 };
        // The SR-FCA client: 3125 points, batches of 100, 2400 iterations.
        assert_eq!(
            srfca.resolve(3125, 100, 2400),
            Triangular::srfca(2400, 31),
            "the public code's schedule"
        );
        assert_eq!(
            srfca.resolve(3125, 100, 2400),
            Some(Triangular {
                warmup: 155,
                total: 2387
            })
        );
        assert_eq!(srfca.resolve(3125, 100, 100), None, "3 epochs: full step");
        assert_eq!(
            srfca.resolve(10, 100, 12),
            Some(Triangular {
                warmup: 5,
                total: 12
            }),
            "fewer points than a batch: an epoch is one step"
        );
    }

    #[test]
    fn layer_names_round_trip_and_unknown_names_list_the_tensors() {
        let names = LayerNames::new(vec!["fc1.weight".into()]);
        let text = toml::to_string(&std::collections::BTreeMap::from([("l", names)])).unwrap();
        assert_eq!(text.trim(), r#"l = ["fc1.weight"]"#);
        let model = fedcluster_models::LinearRegression::new(3).unwrap();
        let err = LayerNames::new(vec!["fc1.weight".into()])
            .ranges("optimizer.decay_layers", &model)
            .unwrap_err();
        assert_eq!(err.field, "optimizer.decay_layers");
        assert!(err.message.contains("fc1.weight"), "{}", err.message);
        let tensors: Vec<String> = model.tensors().into_iter().map(|t| t.name).collect();
        assert!(err.message.contains(&tensors[0]), "{}", err.message);
    }
}
