//! The paper experiments, each an [`Experiment`](super::harness::Experiment)
//! built from its options: settings, methods (config files under `configs/`
//! with overrides) and the paper's numbers.

pub mod cflmgd_rotated_cifar;
pub mod clustered_benchmark;
pub mod clustered_benchmark_choice;
pub mod clustered_benchmark_lineup;
pub mod clustered_benchmark_methods;
pub mod clustered_benchmark_report;
pub mod clustered_benchmark_sections;
pub mod clustered_benchmark_settings;
pub mod clustered_benchmark_stats;
pub mod ifca_femnist;
pub mod ifca_rotated_cifar;
pub mod ifca_success;
pub mod mixed_regression;
pub mod mixed_regression_mnist;
pub mod rotated_mnist;
pub mod srfca_cifar;
pub mod srfca_femnist;
pub mod srfca_mnist;
pub mod srfca_shakespeare;

use std::path::PathBuf;

use fedcluster_run::config::data_dir_override;

/// What every grid experiment takes from the command line.
#[derive(Debug, Clone, Default)]
pub struct Protocol {
    /// A smoke run: a few rounds, one seed.
    pub quick: bool,
    /// Rounds instead of the paper's.
    pub rounds: Option<usize>,
    /// Seeds instead of the default.
    pub seeds: Option<usize>,
    /// The real data set's directory (`--data-dir`; `None`: the run
    /// library's resolution, `<data root>/<dir_name>`).
    pub data_dir: Option<PathBuf>,
}

impl Protocol {
    /// Seeds per cell: `--seeds`, else one for `--quick`, else `full`.
    pub fn seeds(&self, full: usize) -> usize {
        self.seeds
            .unwrap_or(if self.quick { 1 } else { full })
            .max(1)
    }

    /// The override pointing `data.data_dir` at `--data-dir` (`None`
    /// without it: the data set is then found where `fedcluster run` finds
    /// it).
    pub fn data_dir_override(&self) -> Option<String> {
        self.data_dir.as_deref().map(data_dir_override)
    }
}
