//! Fault injection on the data sets fedcluster writes: a federation from
//! `data export` and a LEAF directory from `data leaf-shakespeare`, each file
//! damaged every way, then run: a refusal naming the file, or the undamaged
//! data set's `metrics.csv`, never another.

use std::path::Path;

use crate::cases::{Counts, copy_dir, damage, faults};
use crate::common::{fedcluster, scratch, small, write_toy_plays};

/// Runs `config` (with `extra` arguments) into a fresh `out` in `dir`: its
/// `metrics.csv`, or `None` and the error output.
fn metrics(dir: &Path, config: &str, extra: &[&str], out: &str) -> (Option<Vec<u8>>, String) {
    let _ = std::fs::remove_dir_all(dir.join(out));
    let args = [
        &["run", config, "-q", "--threads", "1", "--out", out],
        extra,
    ]
    .concat();
    let o = fedcluster(&args, dir);
    let got = o
        .status
        .success()
        .then(|| std::fs::read(dir.join(out).join("metrics.csv")).unwrap());
    (got, String::from_utf8_lossy(&o.stderr).into_owned())
}

/// Each of `files` (relative to `data`, with the file swapped in for it)
/// damaged `step`-th fault by fault in a copy of `pristine`, then run.
fn damage_each(
    dir: &Path,
    (pristine, data): (&str, &str),
    files: &[(&str, &str)],
    step: usize,
    run: &dyn Fn() -> (Option<Vec<u8>>, String),
) -> Counts {
    copy_dir(&dir.join(pristine), &dir.join(data));
    let (expected, message) = run();
    let expected = expected.unwrap_or_else(|| panic!("the undamaged data set runs: {message}"));
    let mut counts = Counts::default();
    for (f, (file, swap)) in files.iter().enumerate() {
        let len = std::fs::metadata(dir.join(pristine).join(file))
            .unwrap()
            .len();
        for fault in faults(len, 91 + f as u64).into_iter().step_by(step) {
            let _ = std::fs::remove_dir_all(dir.join(data));
            copy_dir(&dir.join(pristine), &dir.join(data));
            let target = dir.join(data).join(file);
            damage(&target, &fault, &dir.join(data).join(swap));
            let (got, message) = run();
            // A damaged list is refused naming a file of the data set (the
            // list, or a file it no longer matches); a removed one leaves a
            // user's own data set, read unchecked.
            let list = format!("{data}/");
            let names = if *file == "checksums.sha256" {
                list.as_str()
            } else {
                file
            };
            let same = got.map(|g| g == expected);
            counts.record(&format!("{file} {fault:?}"), same, &message, names);
        }
    }
    counts
}

/// `data export` of a small mixture, run as `kind = "files"`.
pub fn exported() {
    let dir = scratch("fault-data-export");
    let ifca = "name = \"ifca\"\nclusters = 2\nlr = 0.1\nrestarts = 3";
    let config = small(ifca, 3);
    std::fs::write(dir.join("cfg.toml"), &config).unwrap();
    let o = fedcluster(&["data", "export", "cfg.toml", "--out", "pristine"], &dir);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (head, rest) = config.split_once("[data]").unwrap();
    let (_, tail) = rest.split_once("[model]").unwrap();
    let files = format!("{head}[data]\nkind = \"files\"\ndata_dir = \"fed\"\n\n[model]{tail}");
    std::fs::write(dir.join("files.toml"), files).unwrap();
    let list = [
        ("federation.json", "train/1.safetensors"),
        ("train/0.safetensors", "train/1.safetensors"),
        ("test/3.safetensors", "test/4.safetensors"),
        ("truth.safetensors", "train/1.safetensors"),
        ("checksums.sha256", "federation.json"),
    ];
    let run = || metrics(&dir, "files.toml", &[], "out");
    let counts = damage_each(&dir, ("pristine", "fed"), &list, 2, &run);
    counts.report("data export federation");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `data leaf-shakespeare` of toy plays, run as `kind = "shakespeare"`.
pub fn leaf() {
    let dir = scratch("fault-data-leaf");
    write_toy_plays(&dir.join("plays"));
    let args = [
        "data",
        "leaf-shakespeare",
        "--plays",
        "plays",
        "--out",
        "pristine",
    ];
    let o = fedcluster(&args, &dir);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let config = "seed = 3\nrounds = 1\ntest_pick = \"own\"\n[data]\nkind = \"shakespeare\"\n\
        clients = 3\nmax_train_samples = 20\nmax_test_samples = 5\n[model]\nkind = \"char-lstm\"\n\
        embedding = 4\nhidden = 8\nlayers = 1\n[algorithm]\nname = \"ifca\"\nclusters = 2\n\
        lr = 0.8\naggregation = \"model\"\nlocal_steps = 1\noptimizer = { kind = \"sgd\", batch_size = 5 }\n";
    std::fs::write(dir.join("leaf.toml"), config).unwrap();
    let list = [
        ("train/shakespeare_train.json", "test/shakespeare_test.json"),
        ("test/shakespeare_test.json", "train/shakespeare_train.json"),
        ("checksums.sha256", "stats.md"),
    ];
    let run = || metrics(&dir, "leaf.toml", &["--data-dir", "leaf"], "out");
    let counts = damage_each(&dir, ("pristine", "leaf"), &list, 3, &run);
    counts.report("data leaf-shakespeare directory");
    let _ = std::fs::remove_dir_all(&dir);
}
