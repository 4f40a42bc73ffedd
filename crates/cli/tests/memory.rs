//! The memory estimate (`fedcluster_run::memory`): a run that would not fit
//! `--max-memory` is refused with the estimate and its biggest term before
//! anything large is allocated, the estimate follows the measured peak of a
//! real run, and an allocation that fails is one error line and exit 1, not
//! an abort.

mod common;

use std::process::Stdio;

use common::{command, fedcluster, scratch};
use fedcluster_run::config::RunConfig;
use fedcluster_run::experiment::{build_data_set, build_model};
use fedcluster_run::memory;

/// IFCA on mixed regression of `clients` clients of one 2-feature point.
fn config(clients: usize) -> String {
    format!(
        "name = \"m\"\nseed = 1\nrounds = 1\nthreads = 1\n\
         [data]\nkind = \"mixed-regression\"\ndim = 2\nclusters = 2\nprobs = [0.5, 0.5]\n\
         client_sizes = [{{ count = {clients}, points = 1 }}]\ntest_points_per_client = 1\n\
         [model]\nkind = \"linear\"\n\
         [algorithm]\nname = \"ifca\"\nclusters = 2\naggregation = \"gradient\"\nlr = 0.5\n"
    )
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_run_above_max_memory_is_refused_with_its_biggest_term() {
    let dir = scratch("memory-refused");
    std::fs::write(dir.join("big.toml"), config(100_000_000)).unwrap();
    let o = fedcluster(
        &["run", "big.toml", "--out", "r", "--max-memory", "2G"],
        &dir,
    );
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("run needs about"), "{e}");
    assert!(e.contains("(biggest: "), "{e}");
    assert!(e.contains("100000000 clients"), "{e}");
    assert!(e.contains("2.0 GiB available (--max-memory)"), "{e}");
    assert!(!dir.join("r").exists() && !dir.join("r.partial").exists());
    let bad = fedcluster(&["run", "big.toml", "--max-memory", "2X"], &dir);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(stderr(&bad).contains("--max-memory"), "{}", stderr(&bad));
}

#[test]
fn a_small_run_fits_and_a_tiny_limit_refuses_it() {
    let dir = scratch("memory-tiny");
    std::fs::write(dir.join("small.toml"), config(100)).unwrap();
    let o = fedcluster(
        &["run", "small.toml", "--out", "r", "--max-memory", "1M"],
        &dir,
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("1.0 MiB available (--max-memory)"));
    let o = fedcluster(
        &[
            "run",
            "small.toml",
            "--out",
            "r",
            "-q",
            "--max-memory",
            "1G",
        ],
        &dir,
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

/// The peak resident memory (bytes) of `fedcluster run` on `toml`, as the
/// run measures and prints it (`memory est. / peak`: its `VmHWM` read at its
/// end; to 0.1 MiB below 1 GiB, as every size here). Polling
/// `/proc/<pid>/status` from here instead could miss a peak reached just
/// before the process exited, when the poller was not scheduled in time (a
/// CI run read CFL's growth 1.5x too high). mimalloc returns freed pages to
/// the system 10 ms after their last use by default, and a large buffer
/// allocated while an earlier one's pages are being returned takes fresh
/// ones: the peak depended on timing (CFL at 2,000 clients: 88 or 114 MiB,
/// 1 run in 4 the latter with other work on the machine, and this test
/// failed 5 times in 21). The runs here keep freed pages for reuse
/// (`MIMALLOC_PURGE_DELAY=-1`: 88.6-88.7 MiB every time, and every case's
/// ratio the same to 0.05 over 6 repeats); returning them at once (`0`)
/// peaks lower, at what the estimate does not model (the ratio of
/// `models-cfl` then reached 1.52).
fn measured_peak(dir: &std::path::Path, toml: &str) -> u64 {
    let out = format!("{toml}.out");
    let o = command(&["run", toml, "--out", &out, "-q"], dir)
        .env("MIMALLOC_PURGE_DELAY", "-1")
        .output()
        .expect("the binary runs");
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let row = stdout
        .lines()
        .find(|l| l.contains("memory est. / peak"))
        .unwrap_or_else(|| panic!("no memory row in the run's table:\n{stdout}"));
    // `| memory est. / peak | 94.6 MiB / 120.0 MiB |`: the value's last size.
    let value = row
        .split('|')
        .nth(2)
        .unwrap_or_else(|| panic!("no value in {row:?}"));
    let peak = value.rsplit(" / ").next().unwrap();
    memory::parse_size(peak).unwrap_or_else(|e| panic!("{row:?}: {e:#}"))
}

/// Local training on mixed regression of `clients` clients of one
/// 500-feature point: each client's own 2,004-byte model.
fn local_config(clients: usize) -> String {
    format!(
        "name = \"m\"\nseed = 1\nrounds = 1\nthreads = 1\nlocal_eval_models = 10\n\
         [data]\nkind = \"mixed-regression\"\ndim = 500\nclusters = 2\nprobs = [0.5, 0.5]\n\
         client_sizes = [{{ count = {clients}, points = 1 }}]\ntest_points_per_client = 1\n\
         [model]\nkind = \"linear\"\n\
         [algorithm]\nname = \"local\"\nlr = 0.1\nlocal_steps = 1\n"
    )
}

fn estimated(toml: &str) -> u128 {
    let config = RunConfig::parse(toml, &[], "test").unwrap();
    let data_set = build_data_set(&config).unwrap();
    let data = data_set.view();
    let model = build_model(&config, &data).unwrap();
    memory::estimate(&config, &data, model.as_ref()).total()
}

/// Whether the measured peak can be read here (Linux: `/proc`).
fn peaks_are_measurable() -> bool {
    let here = std::path::Path::new("/proc/self/status").exists();
    if !here {
        eprintln!("skipped: no /proc");
    }
    here
}

/// How the estimate's growth between two sizes of `config` compares with
/// the growth of the measured peak: `Err` names both when they are more
/// than a factor of 1.5 apart.
fn growth_against_the_peak(
    name: &str,
    config: &dyn Fn(usize) -> String,
    sizes: [usize; 2],
) -> Result<f64, String> {
    let dir = scratch(name);
    let [small, large] = sizes.map(config);
    std::fs::write(dir.join("small.toml"), &small).unwrap();
    std::fs::write(dir.join("large.toml"), &large).unwrap();
    let measured = measured_peak(&dir, "large.toml") - measured_peak(&dir, "small.toml");
    let estimate = (estimated(&large) - estimated(&small)) as f64;
    let ratio = estimate / measured as f64;
    let said = format!(
        "{name}, {} to {} clients: estimate grew {estimate} bytes, the measured peak \
         {measured}: ratio {ratio:.2}",
        sizes[0], sizes[1]
    );
    eprintln!("{said}");
    match (1.0 / 1.5..=1.5).contains(&ratio) {
        true => Ok(ratio),
        false => Err(said),
    }
}

/// The estimate's growth between two sizes of `config` is within a factor
/// of 1.5 of the growth of the measured peak.
fn estimate_follows_the_measured_peak(name: &str, config: fn(usize) -> String, sizes: [usize; 2]) {
    if peaks_are_measurable() {
        growth_against_the_peak(name, &config, sizes).unwrap();
    }
}

#[test]
fn the_estimate_follows_the_measured_peak() {
    estimate_follows_the_measured_peak("memory-measured", config, [20_000, 220_000]);
}

/// Local training holds each client's own model several times
/// (`Algorithm::models_per_client`): without that term its estimate grew by
/// 0.30 of the measured peak's growth.
#[test]
fn local_trainings_own_models_are_in_the_estimate() {
    estimate_follows_the_measured_peak("memory-local", local_config, [4_000, 24_000]);
}

/// The `[algorithm]` tables of the algorithms whose servers hold state per
/// client or per pair of clients, at learning rates nothing diverges at.
const SRFCA: &str = "name = \"srfca\"\ndistance = \"cross-loss\"\n\
    threshold = { kind = \"quantile\", value = 0.25 }\nmin_size = 2\nlocal_steps = 5\n\
    local_lr = 0.00001\nrefine_steps = 1\nrefine_rounds = 1\nrefine_local_steps = 1\nlr = 0.00001\n";
const CFL: &str = "name = \"cfl\"\nlr = 0.00001\nlocal_steps = 1\neps1 = 0.1\neps2 = 0.52\n\
    warmup_rounds = 1\nmin_split_size = 2\n";
/// CFL at a learning rate its updates split at (20 features): the
/// similarities are computed at a split.
const CFL_SPLITTING: &str = "name = \"cfl\"\nlr = 0.01\nlocal_steps = 1\neps1 = 0.1\neps2 = 0.52\n\
    warmup_rounds = 1\nmin_split_size = 2\n";
const FLHC: &str = "name = \"flhc\"\ncluster_round = 1\ncut = { kind = \"clusters\", value = 2 }\n\
    lr = 0.00001\nlocal_steps = 1\n";
const PACFL: &str = "name = \"pacfl\"\nbasis = 1\ncut = { kind = \"clusters\", value = 2 }\n\
    lr = 0.00001\nlocal_steps = 1\n";
const ONESHOT: &str = "name = \"oneshot\"\nclusters = 2\nerm_steps = 5\nerm_lr = 0.00001\n\
    erm_init = { kind = \"model\" }\nlr = 0.00001\nlocal_steps = 1\n";

/// `algorithm` on mixed regression of `clients` clients of one
/// `dim`-feature point, 5 rounds (every clustering step of the algorithms
/// above runs in them).
fn holder_config(algorithm: &str, dim: usize, clients: usize) -> String {
    format!(
        "name = \"m\"\nseed = 1\nrounds = 5\nthreads = 1\n\
         [data]\nkind = \"mixed-regression\"\ndim = {dim}\nclusters = 2\nprobs = [0.5, 0.5]\n\
         client_sizes = [{{ count = {clients}, points = 1 }}]\ntest_points_per_client = 1\n\
         [model]\nkind = \"linear\"\n[algorithm]\n{algorithm}"
    )
}

/// `algorithm` on `clients` clients of one 2x2 image (two classes) with an
/// MLP of 1,000 hidden units: 7,002 parameters against 5 values of data a
/// client, so what is held per client is mostly models.
fn mlp_config(algorithm: &str, clients: usize) -> String {
    format!(
        "name = \"m\"\nseed = 1\nrounds = 5\nthreads = 1\n\
         [data]\nkind = \"synthetic-images\"\nclients = {clients}\npoints_per_client = 1\n\
         test_points_per_client = 1\nclusters = 2\nclasses = 2\nheight = 2\nwidth = 2\n\
         channels = 1\nnoise_std = 1.0\n[model]\nkind = \"mlp\"\nhidden = 1000\n\
         [algorithm]\n{algorithm}"
    )
}

/// A named config by its number of clients, and the two numbers it is
/// measured at.
type Case<'a> = (&'a str, &'a dyn Fn(usize) -> String, [usize; 2]);

/// Each case's estimate follows the measured peak; every miss is named.
fn every_case_follows_the_measured_peak(cases: &[Case<'_>]) {
    if !peaks_are_measurable() {
        return;
    }
    let missed: Vec<String> = cases
        .iter()
        .filter_map(|&(name, config, sizes)| growth_against_the_peak(name, config, sizes).err())
        .collect();
    assert!(missed.is_empty(), "{}", missed.join("\n"));
}

/// SR-FCA's, CFL's, FL+HC's and PACFL's servers hold distances between
/// every two clients (`Algorithm::bytes_per_client_pair`): without that
/// term their estimates grew by 0.05 to 0.08 of the measured peak's growth
/// (1,000 to 4,000 clients of 500 features).
#[test]
fn pairwise_distances_are_in_the_estimate() {
    let on_20_features = |algorithm: &'static str| move |m| holder_config(algorithm, 20, m);
    every_case_follows_the_measured_peak(&[
        ("memory-pairs-srfca", &on_20_features(SRFCA), [1_000, 2_500]),
        (
            "memory-pairs-cfl",
            &on_20_features(CFL_SPLITTING),
            [1_000, 2_000],
        ),
        ("memory-pairs-flhc", &on_20_features(FLHC), [1_000, 2_500]),
        ("memory-pairs-pacfl", &on_20_features(PACFL), [1_000, 2_500]),
    ]);
}

/// The servers of SR-FCA, CFL, FL+HC and one-shot keep a model-sized vector
/// of every client (`Algorithm::models_per_client`): without that term their
/// estimates would grow by 0.02 to 0.49 of the measured peak's growth here
/// (and grew by 0.43 to 0.63 of it from 300 to 1,200 clients of 20,000
/// features and a linear model, measured before the term).
#[test]
fn servers_copies_of_client_models_are_in_the_estimate() {
    let mlp = |algorithm: &'static str| move |m| mlp_config(algorithm, m);
    every_case_follows_the_measured_peak(&[
        ("memory-models-srfca", &mlp(SRFCA), [200, 800]),
        ("memory-models-cfl", &mlp(CFL), [200, 800]),
        ("memory-models-flhc", &mlp(FLHC), [200, 800]),
        ("memory-models-oneshot", &mlp(ONESHOT), [200, 800]),
    ]);
}

/// Under `ulimit -v`, a run that allocates beyond it (the estimate waved
/// through with a large `--max-memory`) ends with one error line naming the
/// size and exit 1: no abort (signal 6), no backtrace.
#[test]
fn an_allocation_that_fails_is_an_error_line_not_an_abort() {
    if std::process::Command::new("bash")
        .arg("-c")
        .arg("true")
        .status()
        .is_err()
    {
        eprintln!("skipped: no bash");
        return;
    }
    let dir = scratch("memory-ulimit");
    std::fs::write(dir.join("run.toml"), config(1_000_000)).unwrap();
    let bin = env!("CARGO_BIN_EXE_fedcluster");
    let script =
        format!("ulimit -v 300000; exec '{bin}' run run.toml --out r -q --max-memory 100G");
    let o = std::process::Command::new("bash")
        .args(["-c", &script])
        .current_dir(&dir)
        .output()
        .unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{:?}: {e}", o.status);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.starts_with("error: out of memory: an allocation of "),
        "{e}"
    );
    assert!(e.contains(" bytes failed"), "{e}");
}

/// `join --max-memory` below what its clients need is refused, one line
/// naming the limit, before their data is built; the coordinator is left
/// waiting (and killed here).
#[test]
fn a_join_above_max_memory_is_refused() {
    use std::io::BufRead as _;
    let dir = scratch("memory-join");
    std::fs::write(dir.join("small.toml"), config(4)).unwrap();
    let mut serve = command(
        &[
            "serve",
            "small.toml",
            "--listen",
            "127.0.0.1:0",
            "--insecure",
        ],
        &dir,
    )
    .args(["-q", "--out", "net"])
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(serve.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_string();
    let join = |limit: &str| {
        fedcluster(
            &[
                "join",
                "--server",
                &addr,
                "--data",
                "partition:0-1",
                "--insecure",
            ]
            .into_iter()
            .chain(["--connect-timeout", "10", "--max-memory", limit])
            .collect::<Vec<_>>(),
            &dir,
        )
    };
    let o = join("1M");
    let _ = serve.kill();
    let _ = serve.wait();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("run needs about"), "{e}");
    assert!(e.contains("1.0 MiB available (--max-memory)"), "{e}");
    let bad = fedcluster(
        &[
            "join",
            "--server",
            &addr,
            "--data",
            "partition:0",
            "--max-memory",
            "2X",
        ],
        &dir,
    );
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
}

/// `reproduce --max-memory` below what a run needs is refused, naming the
/// run and the limit, before any run is built or saved.
#[test]
fn a_reproduction_above_max_memory_is_refused() {
    let dir = scratch("memory-reproduce");
    let args = ["reproduce", "mixed-regression", "--quick", "--out", "r"];
    let o = fedcluster(&[&args[..], &["--max-memory", "1M"]].concat(), &dir);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("run needs about"), "{e}");
    assert!(e.contains("1.0 MiB available (--max-memory)"), "{e}");
    assert!(e.contains("seed 1"), "names the run: {e}");
    assert!(!dir.join("r/runs").exists(), "a run was saved");
}
