//! The clustered-benchmark's methods and their equal-budget search grids:
//! every clustered algorithm of the algorithm table that runs on image
//! classification, and the FedAvg, Local and oracle baselines, each with
//! exactly [`CANDIDATES`] candidate configurations.

use crate::reproduce::harness::{ConfigFile, Method, Tuned};

/// Candidate configurations per method: the same for every method.
pub const CANDIDATES: usize = 6;

/// The learning rates of a method with a knob of its own (3 x 2 = 6).
const RATES: [&str; 3] = ["0.03", "0.1", "0.3"];
/// The learning rates of a method without one (6).
const BASELINE_RATES: [&str; CANDIDATES] = ["0.01", "0.02", "0.05", "0.1", "0.2", "0.5"];

/// A method's second searched hyper-parameter: its main knob, two values.
pub struct Knob {
    /// How the report names it (`K`).
    pub name: &'static str,
    /// The config key it sets.
    pub key: &'static str,
    /// Each value: how the report shows it, and its TOML.
    pub values: [(&'static str, &'static str); 2],
    /// Whether each value is a multiple of the learning rate.
    pub times_lr: bool,
}

/// One compared method: its config and what its search varies.
pub struct Family {
    /// Directory-name prefix and `--only-method` prefix (`ifca`).
    pub key: &'static str,
    /// How the report names it.
    pub label: &'static str,
    /// Its config under `configs/clustered-benchmark/`.
    pub config: ConfigFile,
    /// The config keys the learning rate sets (ERM and FedAvg alike), each
    /// to the rate times its factor (CFL's thresholds scale with the
    /// updates, so with the rate).
    pub lr_keys: &'static [(&'static str, f64)],
    /// Its main knob (`None`: [`BASELINE_RATES`] alone).
    pub knob: Option<Knob>,
    /// A baseline (FedAvg, Local, the oracle) rather than a clustered method.
    pub baseline: bool,
    /// Whether it reads the true clusters (the oracle): it runs only where
    /// they are known.
    pub needs_truth: bool,
}

const K: &str = "algorithm.clusters";
const K_VALUES: [(&str, &str); 2] = [("2", "2"), ("4", "4")];
const CUT: &str = "algorithm.cut";
const CUT_VALUES: [(&str, &str); 2] = [
    ("2", "{ kind = \"clusters\", value = 2 }"),
    ("4", "{ kind = \"clusters\", value = 4 }"),
];
const LR: &[(&str, f64)] = &[("algorithm.lr", 1.0)];
const ERM_LR: &[(&str, f64)] = &[("algorithm.lr", 1.0), ("algorithm.erm_lr", 1.0)];

macro_rules! family {
    ($key:literal, $label:literal, $lr:expr, $knob:expr, $baseline:expr) => {
        Family {
            key: $key,
            label: $label,
            config: ConfigFile {
                path: concat!("configs/clustered-benchmark/", $key, ".toml"),
                text: include_str!(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/../../configs/clustered-benchmark/",
                    $key,
                    ".toml"
                )),
            },
            lr_keys: $lr,
            knob: $knob,
            baseline: $baseline,
            needs_truth: false,
        }
    };
}

fn k() -> Option<Knob> {
    Some(Knob {
        name: "K",
        key: K,
        values: K_VALUES,
        times_lr: false,
    })
}

fn cut() -> Option<Knob> {
    Some(Knob {
        name: "clusters cut",
        key: CUT,
        values: CUT_VALUES,
        times_lr: false,
    })
}

/// Every compared method, baselines first.
pub fn families() -> Vec<Family> {
    vec![
        family!("global", "FedAvg (global)", LR, None, true),
        family!("local", "Local", LR, None, true),
        Family {
            needs_truth: true,
            ..family!("oracle", "Oracle (FedAvg per true cluster)", LR, None, true)
        },
        family!("ifca", "IFCA", LR, k(), false),
        family!("cflmgd", "CFL-MGD", LR, k(), false),
        family!("oneshot", "One-shot (own starts)", ERM_LR, k(), false),
        family!(
            "local-kmeans",
            "Local-KMeans (shared start)",
            ERM_LR,
            k(),
            false
        ),
        family!(
            "srfca",
            "SR-FCA",
            &[("algorithm.lr", 1.0), ("algorithm.local_lr", 1.0)],
            Some(Knob {
                name: "threshold quantile",
                key: "algorithm.threshold.value",
                values: [("0.1", "0.1"), ("0.25", "0.25")],
                times_lr: false,
            }),
            false
        ),
        family!(
            "cfl",
            "CFL",
            // ε₁ = 1.5 lr; ε₂ a multiple of lr (at lr 0.1 on rotated MNIST the
            // largest update norm after warm-up is 0.3 to 0.5).
            &[("algorithm.lr", 1.0), ("algorithm.eps1", 1.5)],
            Some(Knob {
                name: "eps2 / lr",
                key: "algorithm.eps2",
                values: [("3", "3"), ("5", "5")],
                times_lr: true,
            }),
            false
        ),
        family!("fedsoft", "FedSoft", LR, k(), false),
        family!("fesem", "FeSEM", LR, k(), false),
        family!("flhc", "FL+HC", LR, cut(), false),
        family!("pacfl", "PACFL", LR, cut(), false),
        family!("fedem", "FedEM", LR, k(), false),
        family!("fedrc", "FedRC", LR, k(), false),
    ]
}

/// One candidate configuration of a family.
pub struct Variant {
    /// Its method key, unique in the grid (`ifca-lr0.1-k4`).
    pub key: &'static str,
    /// How the report shows it (`lr 0.1, K = 4`).
    pub value: String,
    /// Its overrides of the family's config.
    pub overrides: Vec<String>,
}

impl Family {
    /// The family's [`CANDIDATES`] candidate configurations.
    pub fn variants(&self) -> Vec<Variant> {
        let times = |rate: &str, factor: f64| {
            let rate: f64 = rate.parse().expect("the grid's rates are numbers");
            // Rounded to 6 digits: 0.1 x 3 prints as 0.3, not 0.30000000000000004.
            format!("{}", (rate * factor * 1e6).round() / 1e6)
        };
        let lr = |rate: &str| -> Vec<String> {
            self.lr_keys
                .iter()
                .map(|(k, factor)| format!("{k}={}", times(rate, *factor)))
                .collect()
        };
        match &self.knob {
            None => BASELINE_RATES
                .iter()
                .map(|rate| Variant {
                    key: leak(format!("{}-lr{rate}", self.key)),
                    value: format!("lr {rate}"),
                    overrides: lr(rate),
                })
                .collect(),
            Some(knob) => RATES
                .iter()
                .flat_map(|rate| {
                    knob.values
                        .iter()
                        .map(move |(shown, toml)| (rate, shown, toml))
                })
                .map(|(rate, shown, toml)| {
                    let mut overrides = lr(rate);
                    let value = if knob.times_lr {
                        times(
                            rate,
                            toml.parse().expect("a multiple of the rate is a number"),
                        )
                    } else {
                        toml.to_string()
                    };
                    overrides.push(format!("{}={value}", knob.key));
                    Variant {
                        key: leak(format!("{}-lr{rate}-{shown}", self.key)),
                        value: format!("lr {rate}, {} = {shown}", knob.name),
                        overrides,
                    }
                })
                .collect(),
        }
    }

    /// The grid's description of this family's search, for the report.
    pub fn grid(&self) -> String {
        match &self.knob {
            None => format!("lr in {{{}}}", BASELINE_RATES.join(", ")),
            Some(knob) => format!(
                "lr in {{{}}} x {} in {{{}, {}}}{}",
                RATES.join(", "),
                knob.name,
                knob.values[0].0,
                knob.values[1].0,
                if knob.times_lr { "; eps1 = 1.5 lr" } else { "" }
            ),
        }
    }

    /// The harness's methods of this family: one per variant.
    pub fn methods(&self) -> Vec<Method> {
        self.variants()
            .into_iter()
            .map(|v| {
                let mut m = Method::new(v.key, self.label, self.config);
                m.overrides = v.overrides;
                m.tuned = Some(Tuned {
                    family: self.label,
                    value: v.value,
                });
                m
            })
            .collect()
    }
}

/// A method key made once per process for a grid of ~100 variants (the
/// harness names methods by `&'static str`).
fn leak(key: String) -> &'static str {
    Box::leak(key.into_boxed_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_gets_the_same_number_of_distinct_candidates() {
        let mut keys = std::collections::HashSet::new();
        for f in families() {
            let variants = f.variants();
            assert_eq!(variants.len(), CANDIDATES, "{}", f.key);
            for v in &variants {
                assert!(keys.insert(v.key), "{} twice", v.key);
                assert!(v.key.starts_with(f.key), "{}", v.key);
            }
        }
        assert_eq!(keys.len(), 15 * CANDIDATES);
    }

    #[test]
    fn cfl_thresholds_scale_with_the_rate() {
        let cfl = families().into_iter().find(|f| f.key == "cfl").unwrap();
        let v = cfl
            .variants()
            .into_iter()
            .find(|v| v.key == "cfl-lr0.1-3")
            .unwrap();
        assert_eq!(
            v.overrides,
            [
                "algorithm.lr=0.1",
                "algorithm.eps1=0.15",
                "algorithm.eps2=0.3"
            ]
        );
    }

    #[test]
    fn each_variant_parses_with_its_overrides() {
        for f in families() {
            for v in f.variants() {
                fedcluster_run::config::RunConfig::parse(f.config.text, &v.overrides, f.key)
                    .unwrap_or_else(|e| panic!("{}: {e:#}", v.key));
            }
        }
    }
}
