//! `fedcluster reproduce <experiment>`: one subcommand per paper experiment,
//! each with only the flags it takes, mapped to the experiment's data and
//! run by the harness.

use std::path::PathBuf;

use anyhow::Result;

use crate::reproduce::experiments::{self, Protocol, clustered_benchmark, ifca_success};
use crate::reproduce::harness::{self, Experiment, RunOptions};

/// Where a reproduction writes and what it runs of its grid.
#[derive(Debug, Clone, clap::Args)]
pub struct OutputArgs {
    /// Output directory: finished runs are kept there and a re-run with the same
    /// directory runs only what is missing (default: runs/reproduce/<experiment>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Worker threads per run (0: one per core); results do not depend on it.
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Refuse a run whose estimated memory exceeds SIZE (e.g. 2G; default:
    /// the memory the machine has).
    #[arg(long, value_name = "SIZE", value_parser = fedcluster_run::memory::parse_size)]
    pub max_memory: Option<u64>,
    /// Checkpoint each run every N rounds (0: every 5 minutes, and after its
    /// last round) into <run dir>.checkpoint/; a killed run resumes from there.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub checkpoint_every: usize,
    /// Also checkpoint every round after each client (one a worker thread at
    /// a time), so a killed run redoes at most a client a thread (rounds of
    /// hours: SR-FCA's pairwise losses on Shakespeare); results do not
    /// depend on it.
    #[arg(long)]
    pub checkpoint_within_rounds: bool,
}

/// The flags of the grid experiments.
#[derive(Debug, Clone, clap::Args)]
pub struct GridArgs {
    #[command(flatten)]
    pub output: OutputArgs,
    /// Seeds per (setting, method) (default: the experiment's; 1 with --quick).
    /// Finished seeds in --out are kept: `--seeds 5` after `--seeds 2` adds seeds 3-5.
    #[arg(long)]
    pub seeds: Option<usize>,
    /// Rounds per run instead of the paper's.
    #[arg(long)]
    pub rounds: Option<usize>,
    /// A smoke run: a few rounds, one seed.
    #[arg(long)]
    pub quick: bool,
    /// Run only this setting (repeatable); the report still covers every finished run.
    #[arg(long = "only-setting", value_name = "KEY")]
    pub only_settings: Vec<String>,
    /// Run only this method (repeatable).
    #[arg(long = "only-method", value_name = "KEY")]
    pub only_methods: Vec<String>,
    /// Run only this seed, one of 1..=--seeds (repeatable): splits a grid's seeds
    /// between processes sharing one --out.
    #[arg(long = "only-seed", value_name = "SEED")]
    pub only_seeds: Vec<u64>,
    /// Start each selected run that has no checkpoint of its own from the
    /// checkpoint in DIR (a <run dir>.checkpoint/ directory, or a copy of it)
    /// of the same seed's run of METHOD, when the two differ only where the
    /// algorithm allows (ONE_SHOT-IFCA from SR-FCA's checkpoint before
    /// ONE_SHOT's clustering); the result is what the run computes from its
    /// first round.
    #[arg(long, value_name = "METHOD=DIR", value_parser = parse_fork)]
    pub fork_from: Option<(String, PathBuf)>,
}

/// `METHOD=DIR` of `--fork-from`.
fn parse_fork(value: &str) -> Result<(String, PathBuf), String> {
    match value.split_once('=') {
        Some((method, dir)) if !method.is_empty() && !dir.is_empty() => {
            Ok((method.to_string(), PathBuf::from(dir)))
        }
        _ => Err(format!(
            "expected METHOD=DIR (a method key of the experiment and its checkpoint directory), got {value:?}"
        )),
    }
}

/// The flags of the experiments on real data.
#[derive(Debug, Clone, clap::Args)]
pub struct RealDataArgs {
    #[command(flatten)]
    pub grid: GridArgs,
    /// Directory of the MNIST IDX files (default: mnist/ in the data root,
    /// $FEDCLUSTER_DATA else `data`, as for `fedcluster run`).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
}

/// The flags of the Shakespeare experiment.
#[derive(Debug, Clone, clap::Args)]
pub struct ShakespeareArgs {
    #[command(flatten)]
    pub grid: GridArgs,
    /// The Project Gutenberg plays or a LEAF directory (train/ and test/ JSON
    /// files, LEAF's or `fedcluster data leaf-shakespeare`'s) (default:
    /// shakespeare/ in the data root, $FEDCLUSTER_DATA else `data`).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
}

/// The flags of the CIFAR-10 experiments.
#[derive(Debug, Clone, clap::Args)]
pub struct CifarArgs {
    #[command(flatten)]
    pub grid: GridArgs,
    /// Directory of CIFAR-10's binary version (extracted, or its .tar.gz)
    /// (default: cifar10/ in the data root, $FEDCLUSTER_DATA else `data`;
    /// `fedcluster data fetch cifar10` downloads it there). Without it the
    /// report says "not run: data absent here".
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
}

/// The flags of the FEMNIST experiments.
#[derive(Debug, Clone, clap::Args)]
pub struct FemnistArgs {
    #[command(flatten)]
    pub grid: GridArgs,
    /// LEAF's FEMNIST directory, its train/ and test/ JSON files (default:
    /// femnist/ in the data root, $FEDCLUSTER_DATA else `data`; docs/data.md
    /// says how LEAF writes it). Without it the report says "not run: data
    /// absent here".
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
}

/// The flags of the clustered benchmark: MNIST's `--data-dir`, and the
/// files of its two settings that run only when given.
#[derive(Debug, Clone, clap::Args)]
pub struct ClusteredBenchmarkArgs {
    #[command(flatten)]
    pub real: RealDataArgs,
    /// CIFAR-10's binary version (extracted, or its .tar.gz): adds the rotated
    /// CIFAR-10 setting (default: cifar10/ in the data root when it holds
    /// files; without it the report says "not run: data absent here").
    #[arg(long, value_name = "DIR")]
    pub cifar_dir: Option<PathBuf>,
    /// LEAF's FEMNIST directory (train/ and test/ JSON files): adds the
    /// FEMNIST setting (default: femnist/ in the data root when it holds
    /// files; without it the report says "not run: data absent here").
    #[arg(long, value_name = "DIR")]
    pub femnist_dir: Option<PathBuf>,
}

/// How the synthetic true parameters are scaled by R.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Scale {
    /// Entries in {0, R} (the paper's public code).
    Entries,
    /// ℓ2 norm R (the paper's text).
    Norm,
}

/// The paper experiments.
#[derive(Debug, clap::Subcommand)]
pub enum Reproduce {
    /// IFCA paper Fig. 3: success probability over (sigma, R) (panels a, b) or over
    /// the machines m and samples n (c, d), d = 1000.
    IfcaSyntheticSuccess {
        #[command(flatten)]
        output: OutputArgs,
        /// Which panel of Fig. 3 (default directory runs/reproduce/ifca-synthetic-success
        /// for a, ifca-synthetic-success-<panel> for the others).
        #[arg(long, value_enum, default_value_t = ifca_success::Panel::A)]
        panel: ifca_success::Panel,
        /// Data sets per grid cell (default 2; the paper used 40).
        #[arg(long, conflicts_with = "full")]
        trials: Option<usize>,
        /// The paper's full protocol: 40 data sets per cell.
        #[arg(long)]
        full: bool,
        /// Run only this data set, one of 1..=--trials (repeatable): splits a
        /// panel's data sets between processes sharing one --out.
        #[arg(long = "only-trial", value_name = "TRIAL")]
        only_trials: Vec<u64>,
        /// Iterations per run.
        #[arg(long, default_value_t = 300)]
        rounds: usize,
        /// Scale the true parameters as the paper's public code does (`entries`,
        /// θ* in {0, R}^d) or as its text says (`norm`, ‖θ*‖ = R).
        #[arg(long, value_enum, default_value_t = Scale::Entries)]
        truth_scale: Scale,
    },
    /// IFCA paper Table I: IFCA, global, local on rotated MNIST, (m, n) in {(4800, 50), (2400, 100), (1200, 200)}.
    IfcaRotatedMnist(RealDataArgs),
    /// CFL-MGD paper Table 2: CFL-MGD, IFCA, FedAvg (+ momentum) on rotated MNIST, (2400, 100).
    CflmgdRotatedMnist(RealDataArgs),
    /// Su, Xu, Yang Figs. 1-3: two-phase (FedAvg s in {1, 5, 10}, FedProx), FedAvg, one-shot, IFCA, oracle on mixed linear regression.
    MixedRegression(GridArgs),
    /// Su, Xu, Yang Figs. 4-5: two-phase, FedAvg, one-shot, IFCA, oracle on 14x14 MNIST with 25,000 two-image clients, k = 2 and 4.
    MixedRegressionMnist(RealDataArgs),
    /// SR-FCA paper Tables 1, 2, 4: SR-FCA, Local, Global, CFL, Local-KMeans, IFCA, FedSoft, ONE_SHOT-IFCA on inverted and rotated MNIST, m = 100, n = 600.
    SrfcaMnist(RealDataArgs),
    /// SR-FCA paper Table 3 (Shakespeare): SR-FCA, Local, Global, CFL, IFCA and FedSoft (K tuned over 1-4), ONE_SHOT-IFCA on 50 LEAF Shakespeare users, char-LSTM.
    SrfcaShakespeare(ShakespeareArgs),
    /// IFCA paper Table I, rotated CIFAR-10: IFCA, global, local at (m, n) = (200, 500), k = 2 (0/180 degrees).
    IfcaRotatedCifar(CifarArgs),
    /// CFL-MGD paper Table 2, rotated CIFAR-10: CFL-MGD, IFCA, FedAvg at (200, 500), k = 2.
    CflmgdRotatedCifar(CifarArgs),
    /// SR-FCA paper Tables 1, 2, 4, rotated CIFAR-10: SR-FCA, Local, Global, CFL, Local-KMeans, IFCA, m = 32, n = 3,125, ResNet9.
    SrfcaCifar(CifarArgs),
    /// IFCA paper Table II, FEMNIST: IFCA (k = 2, 3; pretrained, frozen trunk), one-shot, global, local on every writer of LEAF's sample.
    IfcaFemnist(FemnistArgs),
    /// SR-FCA paper Tables 3-4, FEMNIST: SR-FCA, Local, Global, CFL, IFCA and FedSoft (K tuned over 1-4), ONE_SHOT-IFCA on 50 writers.
    SrfcaFemnist(FemnistArgs),
    /// Issue 46's benchmark: every clustered method (IFCA, CFL-MGD, one-shot, Local-KMeans, SR-FCA, CFL, FedSoft, FeSEM, FL+HC, PACFL, FedEM, FedRC) and FedAvg, Local, oracle on rotated, inverted, label-permuted and Dirichlet label-skew MNIST and a synthetic mixture (and rotated CIFAR-10, FEMNIST when their files are given: --cifar-dir, --femnist-dir), each tuned by the same validation search, ranked over 3 seeds.
    ClusteredBenchmark(ClusteredBenchmarkArgs),
}

impl GridArgs {
    /// The protocol and run options these flags ask for.
    fn split(self, data_dir: Option<PathBuf>) -> (Protocol, RunOptions) {
        let protocol = Protocol {
            quick: self.quick,
            rounds: self.rounds.map(|r| r.max(1)),
            seeds: self.seeds,
            data_dir,
        };
        let options = RunOptions {
            out: self.output.out.unwrap_or_default(),
            threads: self.output.threads,
            max_memory: self.output.max_memory,
            checkpoint_every: self.output.checkpoint_every,
            checkpoint_within_rounds: self.output.checkpoint_within_rounds,
            only_settings: self.only_settings,
            only_methods: self.only_methods,
            only_seeds: self.only_seeds,
            fork_from: self.fork_from,
        };
        (protocol, options)
    }
}

impl Reproduce {
    /// The experiment and how to run it.
    pub fn experiment(self) -> (Experiment, RunOptions) {
        use experiments::{
            cflmgd_rotated_cifar, ifca_femnist, ifca_rotated_cifar, mixed_regression,
            mixed_regression_mnist, rotated_mnist, srfca_cifar, srfca_femnist, srfca_mnist,
            srfca_shakespeare,
        };
        let real = |a: RealDataArgs, build: fn(&Protocol) -> Experiment| {
            let (protocol, options) = a.grid.split(a.data_dir);
            (build(&protocol), options)
        };
        let cifar = |a: CifarArgs, build: fn(&Protocol) -> Experiment| {
            let (protocol, options) = a.grid.split(a.data_dir);
            (build(&protocol), options)
        };
        let femnist = |a: FemnistArgs, build: fn(&Protocol) -> Experiment| {
            let (protocol, options) = a.grid.split(a.data_dir);
            (build(&protocol), options)
        };
        let (exp, mut options) = match self {
            Reproduce::IfcaSyntheticSuccess {
                output,
                panel,
                trials,
                full,
                only_trials,
                rounds,
                truth_scale,
            } => {
                let trials = if full {
                    ifca_success::PAPER_TRIALS
                } else {
                    trials.unwrap_or(2)
                };
                let truth_scale = match truth_scale {
                    Scale::Entries => fedcluster_data::TruthScale::Entries,
                    Scale::Norm => fedcluster_data::TruthScale::Norm,
                };
                let o = ifca_success::Options {
                    panel,
                    trials: trials.max(1),
                    rounds: rounds.max(1),
                    truth_scale,
                };
                let options = RunOptions {
                    out: output.out.unwrap_or_default(),
                    threads: output.threads,
                    max_memory: output.max_memory,
                    checkpoint_every: output.checkpoint_every,
                    checkpoint_within_rounds: output.checkpoint_within_rounds,
                    only_seeds: only_trials,
                    ..Default::default()
                };
                (ifca_success::experiment(&o), options)
            }
            Reproduce::IfcaRotatedMnist(a) => real(a, rotated_mnist::ifca_table1),
            Reproduce::CflmgdRotatedMnist(a) => real(a, rotated_mnist::cflmgd_table2),
            Reproduce::MixedRegressionMnist(a) => real(a, mixed_regression_mnist::experiment),
            Reproduce::SrfcaMnist(a) => real(a, srfca_mnist::experiment),
            Reproduce::SrfcaShakespeare(a) => {
                let (protocol, options) = a.grid.split(a.data_dir);
                (srfca_shakespeare::experiment(&protocol), options)
            }
            Reproduce::IfcaRotatedCifar(a) => cifar(a, ifca_rotated_cifar::experiment),
            Reproduce::CflmgdRotatedCifar(a) => cifar(a, cflmgd_rotated_cifar::experiment),
            Reproduce::SrfcaCifar(a) => cifar(a, srfca_cifar::experiment),
            Reproduce::IfcaFemnist(a) => femnist(a, ifca_femnist::experiment),
            Reproduce::SrfcaFemnist(a) => femnist(a, srfca_femnist::experiment),
            Reproduce::ClusteredBenchmark(a) => real(a.real, clustered_benchmark::test_grid),
            Reproduce::MixedRegression(g) => {
                let (protocol, options) = g.split(None);
                (mixed_regression::experiment(&protocol), options)
            }
        };
        if options.out.as_os_str().is_empty() {
            options.out = PathBuf::from("runs/reproduce").join(exp.name);
        }
        (exp, options)
    }

    /// Runs the experiment; prints its tables and where the report is.
    pub fn run(self) -> Result<()> {
        if let Reproduce::ClusteredBenchmark(a) = self {
            // Two grids (the search, then the chosen candidates on test) and
            // a report of its own.
            let optional = clustered_benchmark::OptionalData {
                cifar_dir: a.cifar_dir,
                femnist_dir: a.femnist_dir,
            };
            let (protocol, mut options) = a.real.grid.split(a.real.data_dir);
            if options.out.as_os_str().is_empty() {
                options.out = PathBuf::from("runs/reproduce/clustered-benchmark");
            }
            refuse_run_dir(&options.out)?;
            let tables = clustered_benchmark::run(&protocol, &optional, &options)?;
            print!("{tables}");
            println!("report: {}", options.out.join("report.md").display());
            return Ok(());
        }
        let (exp, options) = self.experiment();
        refuse_run_dir(&options.out)?;
        if let Some(why) = harness::absent_data(&exp, &options)? {
            // Data this workspace does not hold: a report that says so, the
            // paper's numbers beside no number of ours, and a clean exit.
            let tables = harness::report_not_run(&exp, &options, &why)?;
            print!("{tables}");
            eprintln!("{}: not run: data absent here: {why}", exp.name);
            println!("report: {}", options.out.join("report.md").display());
            return Ok(());
        }
        let tables = harness::run(&exp, &options)?;
        print!("{tables}");
        println!("report: {}", options.out.join("report.md").display());
        Ok(())
    }
}

/// Fails when `out` is the run directory of a `fedcluster run` (it holds
/// `metrics.csv` or `checkpoint.bin`): a reproduction writes `runs/`, its
/// report and tables beside them, never into another run's directory.
fn refuse_run_dir(out: &std::path::Path) -> Result<()> {
    let partial = fedcluster_run::rundir::sibling(out, "partial");
    for marker in [out.join("metrics.csv"), partial.join("checkpoint.bin")] {
        anyhow::ensure!(
            std::fs::symlink_metadata(&marker).is_err(),
            "--out {}: the directory of a `fedcluster run` (it holds {}); choose another --out",
            out.display(),
            marker.display()
        );
    }
    Ok(())
}
