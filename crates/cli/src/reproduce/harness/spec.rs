//! What an experiment declares: its settings, its methods (each a label, the
//! paper's numbers and a config file with overrides), its seeds, the tables
//! (with the paper's [`Claim`]s) and plots of its report. Data only;
//! [`super::run`] does the rest.

use fedcluster_data::DataView;
use fedcluster_run::chart::Scale;
use fedcluster_sim::record::RoundRecord;

/// A paper experiment as data.
#[derive(Default)]
pub struct Experiment {
    /// Subcommand name; default output directory `runs/reproduce/<name>`.
    pub name: &'static str,
    /// The report's title.
    pub title: String,
    /// The protocol as run, one paragraph of the report.
    pub protocol: String,
    /// The grid's settings (data configurations, sizes, ...).
    pub settings: Vec<Setting>,
    /// The compared methods.
    pub methods: Vec<Method>,
    /// Seeds per (setting, method): seed `s` of setting `i` runs with seed
    /// `settings[i].seed_offset + s`, `s = 1..=seeds`.
    pub seeds: usize,
    /// Overrides common to every run (rounds, quick-mode sizes, data dir).
    pub overrides: Vec<String>,
    /// Overrides computed from each (setting, seed)'s data set, applied to
    /// every method after the others (usually as `key?=value`).
    pub from_data: Option<fn(&DataView<'_>) -> Vec<String>>,
    /// The report's tables.
    pub tables: Vec<Table>,
    /// The report's plots.
    pub plots: Vec<Plot>,
    /// Whether to write `curves.csv` (every round of every run).
    pub curves: bool,
    /// Save each run's last round only in its `metrics.csv` and `timing.csv`
    /// (its summary still has every replica's final numbers and the run's
    /// seconds): for large grids whose report reads final numbers only.
    pub last_round_only: bool,
    /// Sections after the tables (where and why we differ from the paper).
    pub notes: Vec<String>,
    /// The paper's claims, each quoted and checked on the runs: the report's
    /// "Claims" section, beside the verdicts per table.
    pub claims: Vec<PaperClaim>,
    /// A smoke run (`--quick`, fewer rounds): the report says its verdicts
    /// compare another protocol with the paper's.
    pub smoke: bool,
    /// How a tuned method's variant is chosen ([`Method::tuned`]): the best
    /// mean of this metric over the seeds run, per setting (the highest for
    /// accuracies, the lowest for errors, losses and costs:
    /// [`Metric::higher_is_better`]).
    pub tune_by: Option<Metric>,
    /// Whether a data set that is not there (its directory absent or empty)
    /// and no finished run in the output directory give a report whose every
    /// verdict is "not run: data absent here", with the way to get the data,
    /// and a clean exit ([`super::absent_data`]), instead of the missing-data
    /// error: for the experiments on data this workspace does not hold.
    pub report_absent_data: bool,
    /// Score each run on held-out samples of its own training clients
    /// instead of the data set's test clients ([`HeldOut`]): a validation
    /// split for a hyper-parameter search, or a per-client test split.
    pub held_out: Option<HeldOut>,
}

/// Each training client's samples cut in two, in the order the data set
/// holds them: the first `train` stay its training data, the next `test`
/// become its own test client (test client `i` is training client `i`'s
/// split, scored with `test_pick = "personal"`); the rest are dropped, and so
/// are the data set's own test clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeldOut {
    /// Samples each client trains on.
    pub train: usize,
    /// Samples after those that score it.
    pub test: usize,
}

/// One column of the grid.
#[derive(Default)]
pub struct Setting {
    /// Directory name and `--only-setting` value, e.g. `2400x100`.
    pub key: String,
    /// How the report names it.
    pub label: String,
    /// Overrides of every method's config in this setting; `key?=value` sets
    /// only keys a method's config has.
    pub overrides: Vec<String>,
    /// Added to the seed numbers of this setting.
    pub seed_offset: u64,
    /// What the paper reports here, in words (for figures without numbers).
    pub paper: Option<String>,
    /// Position in a two-way grid: row label and x value (see [`Layout::Grid`]).
    pub grid: Option<(String, f64)>,
}

/// One compared method.
#[derive(Default)]
pub struct Method {
    /// Directory name and `--only-method` value, e.g. `ifca`.
    pub key: &'static str,
    /// How the report names it.
    pub label: &'static str,
    /// Its config file.
    pub config: ConfigFile,
    /// Overrides of that file in every setting.
    pub overrides: Vec<String>,
    /// Overrides in one setting only: `(setting index, overrides)`.
    pub per_setting: Vec<(usize, Vec<String>)>,
    /// The paper's numbers.
    pub paper: Vec<Paper>,
    /// One variant of a tuned method (the paper tunes a hyperparameter, e.g.
    /// K): the report's headline row for the family is its best variant by
    /// [`Experiment::tune_by`], beside the paper's numbers (given on the
    /// family's first variant), and every variant has its own row.
    pub tuned: Option<Tuned>,
    /// Why ours differs from the paper's number in a cell, where that is
    /// established: the verdict prints it beside the cell when it is not
    /// reproduced (in full runs, not smoke runs).
    pub gaps: Vec<Gap>,
}

/// The established reason for one cell's gap to the paper.
#[derive(Debug, Clone)]
pub struct Gap {
    /// The setting's index.
    pub setting: usize,
    /// The metric (a table column's).
    pub metric: Metric,
    /// One line, measured or read off the paper's code, not guessed.
    pub why: &'static str,
}

/// A method's place in a tuned family.
#[derive(Debug, Clone)]
pub struct Tuned {
    /// The family, as the report names it (`IFCA`).
    pub family: &'static str,
    /// This variant's value, as the report names it (`K = 2`).
    pub value: String,
}

impl Method {
    /// The method `key` (`label` in the report) on `config` as it is.
    pub fn new(key: &'static str, label: &'static str, config: ConfigFile) -> Self {
        Self {
            key,
            label,
            config,
            ..Default::default()
        }
    }

    /// The same with `overrides` of its config in every setting.
    pub fn with_overrides(mut self, overrides: &[&str]) -> Self {
        self.overrides
            .extend(overrides.iter().map(|s| s.to_string()));
        self
    }

    /// The same with the paper's numbers.
    pub fn with_paper(mut self, paper: Vec<Paper>) -> Self {
        self.paper.extend(paper);
        self
    }

    /// The same with the reason `why` for its gap to the paper in `metric`
    /// at setting `setting`.
    pub fn with_gap(mut self, setting: usize, metric: Metric, why: &'static str) -> Self {
        self.gaps.push(Gap {
            setting,
            metric,
            why,
        });
        self
    }
}

/// A config file under `configs/`, compiled into the binary.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConfigFile {
    /// Its path in the repository.
    pub path: &'static str,
    /// Its text.
    pub text: &'static str,
}

/// `ConfigFile` for `configs/<path>`.
macro_rules! config_file {
    ($path:literal) => {
        $crate::reproduce::harness::ConfigFile {
            path: concat!("configs/", $path),
            text: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../configs/",
                $path
            )),
        }
    };
}
pub(crate) use config_file;

/// The paper's values of one metric for a method, per setting.
pub struct Paper {
    /// The metric.
    pub metric: Metric,
    /// One value (and its standard deviation, when given) per setting.
    pub values: Vec<Option<(f64, Option<f64>)>>,
}

impl Paper {
    /// Values without standard deviations.
    pub fn plain(metric: Metric, values: &[Option<f64>]) -> Self {
        Self {
            metric,
            values: values.iter().map(|v| v.map(|x| (x, None))).collect(),
        }
    }
}

/// A table of the report.
#[derive(Default)]
pub struct Table {
    /// Its heading.
    pub title: String,
    /// Its columns (metrics).
    pub columns: Vec<Column>,
    /// Rows per (setting, method), or a grid of one metric.
    pub layout: Layout,
    /// Why the paper's numbers cannot be set beside ours, when it has none.
    pub no_paper: Option<String>,
    /// The paper's claim about a figure, checked on the first column: the
    /// table's verdict where the paper gives no numbers.
    pub claim: Option<Claim>,
}

/// "`method` matches `like` and beats each of `beats`", on a table's first
/// column: matching is the column's tolerance between the two means over
/// seeds, beating is a better mean (by the metric's direction). Without
/// `like` the claim is only "beats each of `beats`".
#[derive(Debug, Clone, Copy)]
pub struct Claim {
    /// The method the paper proposes (a method key).
    pub method: &'static str,
    /// The reference it should match (a method key), e.g. the oracle, if any.
    pub like: Option<&'static str>,
    /// The baselines it should beat (method keys).
    pub beats: &'static [&'static str],
}

/// One of the paper's claims, in its own words, and how our runs check it.
pub struct PaperClaim {
    /// The paper's sentence, quoted.
    pub quote: &'static str,
    /// Where the paper makes it (`Section VI-B`, `Table 1`).
    pub source: &'static str,
    /// How it is checked.
    pub check: Check,
}

/// How a [`PaperClaim`] is checked, on the first column of one of the
/// experiment's tables (`table`, an index into [`Experiment::tables`]).
#[derive(Debug, Clone, Copy)]
pub enum Check {
    /// [`Claim`]: matches a reference and beats the baselines, per setting.
    Ordering {
        /// The table.
        table: usize,
        /// The claim.
        claim: Claim,
    },
    /// "Competitive with or better than": `method`'s mean at least the best
    /// mean of `against` less the column's tolerance, per setting.
    Competitive {
        /// The table.
        table: usize,
        /// The method the paper proposes (a method key).
        method: &'static str,
        /// The methods it should match or beat (method keys).
        against: &'static [&'static str],
    },
    /// `method`'s value on every seed of every setting it ran at most
    /// `bound` (a run without a value, such as a round never reached, fails).
    AtMost {
        /// The table.
        table: usize,
        /// The method (a method key).
        method: &'static str,
        /// The bound the paper states.
        bound: f64,
    },
    /// A grid table's values rise (do not fall) along every row.
    Rises {
        /// The table.
        table: usize,
    },
    /// Not checked here, and why.
    NotChecked(&'static str),
}

/// How a table lays out its cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// A row per (setting, method), a column per metric (rows without any
    /// value are left out).
    #[default]
    Long,
    /// The first column's metric per setting, settings placed by their
    /// [`Setting::grid`] (row label, x value); one method.
    Grid,
}

/// One column of a table.
pub struct Column {
    /// Its heading.
    pub header: String,
    /// What it shows (mean ± std over seeds).
    pub metric: Metric,
    /// How close to the paper counts as reproduced.
    pub tolerance: Tolerance,
}

impl Column {
    /// A column headed `header` showing `metric`.
    pub fn new(header: &str, metric: Metric, tolerance: Tolerance) -> Self {
        Self {
            header: header.into(),
            metric,
            tolerance,
        }
    }
}

/// [`Table::no_paper`] for figures: the paper's findings are quoted with the
/// settings instead ([`Setting::paper`]).
pub const FIGURES_ONLY: &str = "the paper reports these experiments as figures only; its findings are quoted below each setting";

/// How close to the paper's number a result must be to count as reproduced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tolerance {
    /// Within this many units (points for percentages).
    Absolute(f64),
    /// Within this fraction of the paper's number.
    Relative(f64),
}

/// The project's rule for percentages: within 1.5 points.
pub const POINTS: Tolerance = Tolerance::Absolute(1.5);
/// The project's rule for other quantities: within 10%.
pub const TEN_PERCENT: Tolerance = Tolerance::Relative(0.1);

impl Tolerance {
    /// How a report words it: `1.5 points`, `10%`.
    pub fn describe(&self) -> String {
        match *self {
            Tolerance::Absolute(t) => format!("{t} points"),
            Tolerance::Relative(t) => format!("{}%", 100.0 * t),
        }
    }

    /// Whether `ours` is within the tolerance of `paper`.
    pub fn holds(&self, ours: f64, paper: f64) -> bool {
        match *self {
            Tolerance::Absolute(t) => (ours - paper).abs() <= t + 1e-9,
            Tolerance::Relative(t) => (ours - paper).abs() <= t * paper.abs() + 1e-12,
        }
    }
}

/// A plot of the report.
pub enum Plot {
    /// One chart per setting: `field` against the round, a line per method
    /// (seed 1), optionally on a log10 scale.
    Curves {
        /// What is plotted.
        field: Field,
        /// Plot `log10` of the values.
        log10: bool,
    },
    /// One chart: the metric's mean over seeds against the settings' grid x,
    /// a line per grid row.
    Grid {
        /// What is plotted.
        metric: Metric,
        /// The file name (without `.svg`).
        file: &'static str,
        /// The x axis' label.
        x_label: &'static str,
        /// The y axis' label: what the mean over seeds is (the IFCA success
        /// metric's mean is a success probability).
        y_label: &'static str,
        /// How the y axis spans the values (a probability: 0 to 1).
        scale: Scale,
    },
}

impl Plot {
    /// [`Plot::Curves`] of `field`.
    pub fn curves(field: Field, log10: bool) -> Self {
        Plot::Curves { field, log10 }
    }
}

/// A number read off one finished run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    /// The selected replica's value after the last round.
    Final(Field),
    /// The value after the round the config's `eval_at[i]` names.
    AtEval(Field, usize),
    /// The value after round `r` (counted from 1), for a curve the paper
    /// compares at a round (`None` where the run has no value there).
    AtRound(Field, usize),
    /// The lowest final value over the replicas that did not diverge.
    BestReplica(Field),
    /// IFCA Fig. 3: 1 when the best replica's parameter error is below
    /// `0.6 σ + slack` (σ the data's noise), else 0; a diverged run scores 0.
    IfcaSuccess {
        /// Added to `0.6 σ` (the public code: 0.001 over (σ, R), 0 over (m, n)).
        slack: f64,
    },
    /// The mean of a field over the last `last` rounds that have it (a
    /// per-round measure, such as the participants' cluster accuracy, is noisy).
    MeanOverLast(Field, usize),
    /// Mean milliseconds per round over the last `last` rounds.
    MsPerRound {
        /// Rounds counted, from the end.
        last: usize,
    },
    /// Wall-clock seconds of the run's rounds.
    Seconds,
    /// The round (counted from 1) from which the field is 0 in every later
    /// round of the run, e.g. every client in its cluster for good (`None`
    /// when the last round's value is not 0).
    SettledAt(Field),
    /// The highest test accuracy (%) over the rounds evaluated, from
    /// `summary.json`'s `best_test_accuracy` (every round counts, even where
    /// `metrics.csv` keeps the last round only).
    BestTestAccuracy,
}

impl Metric {
    /// Whether a larger value is better, as tuning reads it.
    pub fn higher_is_better(self) -> bool {
        match self {
            Metric::Final(f)
            | Metric::AtEval(f, _)
            | Metric::AtRound(f, _)
            | Metric::BestReplica(f)
            | Metric::MeanOverLast(f, _) => f.higher_is_better(),
            Metric::IfcaSuccess { .. } | Metric::BestTestAccuracy => true,
            Metric::MsPerRound { .. } | Metric::Seconds | Metric::SettledAt(_) => false,
        }
    }
}

/// A per-round quantity of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// Test accuracy, in %.
    TestAccuracy,
    /// Test error (100 − accuracy), in %.
    TestError,
    /// Test cluster accuracy (1 − test misclustering), in %.
    ClusterAccuracy,
    /// Test loss.
    TestLoss,
    /// Training loss.
    TrainLoss,
    /// Parameter error against the true models.
    ParamError,
    /// Misclustering of the training clients (one-to-one matching).
    Misclustering,
    /// Misclustering with found clusters labelled by their majority (SR-FCA
    /// Definition 3.1).
    MajorityMisclustering,
    /// Number of cluster models.
    ClustersFound,
    /// Cluster accuracy of the round's participants (1 − their
    /// misclustering), in %.
    RoundClusterAccuracy,
    /// Adjusted Rand index of the training clients' clustering.
    Ari,
    /// Normalised mutual information of the same.
    Nmi,
}

impl Field {
    /// The field's value in `r`.
    pub fn of(self, r: &RoundRecord) -> Option<f64> {
        match self {
            Field::TestAccuracy => r.test_accuracy.map(|a| 100.0 * a),
            Field::TestError => r.test_accuracy.map(|a| 100.0 * (1.0 - a)),
            Field::ClusterAccuracy => r.test_misclustering.map(|e| 100.0 * (1.0 - e)),
            Field::TestLoss => r.test_loss,
            Field::TrainLoss => r.train_loss,
            Field::ParamError => r.param_error,
            Field::Misclustering => r.misclustering,
            Field::MajorityMisclustering => r.majority_misclustering,
            Field::ClustersFound => r.clusters_found.map(|c| c as f64),
            Field::RoundClusterAccuracy => r.round_misclustering.map(|e| 100.0 * (1.0 - e)),
            Field::Ari => r.ari,
            Field::Nmi => r.nmi,
        }
    }

    /// Whether a larger value is better (accuracies), as tuning reads it;
    /// errors, losses and cluster counts are better smaller.
    pub fn higher_is_better(self) -> bool {
        matches!(
            self,
            Field::TestAccuracy
                | Field::ClusterAccuracy
                | Field::RoundClusterAccuracy
                | Field::Ari
                | Field::Nmi
        )
    }

    /// How plots and file names call it.
    pub fn name(self) -> &'static str {
        match self {
            Field::TestAccuracy => "test accuracy %",
            Field::TestError => "test error %",
            Field::ClusterAccuracy => "cluster accuracy %",
            Field::TestLoss => "test loss",
            Field::TrainLoss => "training loss",
            Field::ParamError => "parameter error",
            Field::Misclustering => "misclustering",
            Field::MajorityMisclustering => "majority misclustering",
            Field::ClustersFound => "clusters found",
            Field::RoundClusterAccuracy => "participants' cluster accuracy %",
            Field::Ari => "ARI",
            Field::Nmi => "NMI",
        }
    }
}
