//! The networked mode end to end: `fedcluster serve` and several `fedcluster
//! join` processes on 127.0.0.1 over TLS with certificates generated here.
//! With every client answering, the run directory's metrics.csv is identical
//! to `fedcluster run`'s for the same config and seed.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_fedcluster");

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fedcluster-net-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A CA, a coordinator certificate for localhost / 127.0.0.1, a client
/// certificate and a token, as files in `dir`.
fn pki(dir: &Path) {
    fedcluster_cli::certs::generate(dir, &["localhost".into(), "127.0.0.1".into()], false).unwrap();
    std::fs::write(dir.join("token"), "s3cret-token\n").unwrap();
}

/// A small two-cluster synthetic problem with `algorithm`.
fn config(dir: &Path, rounds: usize, algorithm: &str) -> PathBuf {
    let path = dir.join("config.toml");
    std::fs::write(
        &path,
        format!(
            r#"seed = 3
rounds = {rounds}
[data]
kind = "ifca-synthetic"
clients = 4
points_per_client = 60
test_points_per_client = 20
dim = 10
clusters = 2
noise_std = 0.1
separation = 1.0
[model]
kind = "linear"
[algorithm]
{algorithm}
"#
        ),
    )
    .unwrap();
    path
}

const IFCA: &str = "name = \"ifca\"\nclusters = 2\naggregation = \"model\"\nlr = 0.1\nlocal_steps = 3\n\
                    restarts = 2\ninit = { kind = \"gaussian\", std = 1.0 }";

/// Starts the coordinator; returns it and the address it listens on.
fn serve(dir: &Path, cfg: &Path, out: &str, extra: &[&str]) -> (Child, String) {
    serve_on("127.0.0.1:0", dir, cfg, out, extra)
}

fn serve_on(listen: &str, dir: &Path, cfg: &Path, out: &str, extra: &[&str]) -> (Child, String) {
    let mut child = Command::new(BIN)
        .arg("serve")
        .arg(cfg)
        .args(["--listen", listen, "-q", "--out"])
        .arg(dir.join(out))
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    (child, addr)
}

fn join(addr: &str, id: usize, args: &[&str]) -> Child {
    Command::new(BIN)
        .args([
            "join",
            "--server",
            addr,
            "--data",
            &format!("partition:{id}"),
        ])
        .args(if args.contains(&"--connect-timeout") {
            &[][..]
        } else {
            &["--connect-timeout", "20"][..]
        })
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for `child` for at most `limit`, killing it after.
fn wait(mut child: Child, limit: Duration) -> Output {
    let start = Instant::now();
    while start.elapsed() < limit {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    panic!(
        "process still running after {limit:?}; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Asserts that the coordinator and every client exited successfully.
fn all_succeeded(served: &Output, clients: Vec<Child>) {
    assert!(
        served.status.success(),
        "serve failed: {}",
        String::from_utf8_lossy(&served.stderr)
    );
    for c in clients {
        let out = wait(c, Duration::from_secs(30));
        assert!(
            out.status.success(),
            "join failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The `participants` column of a metrics.csv.
fn participants(metrics: &Path) -> Vec<usize> {
    let metrics = std::fs::read_to_string(metrics).unwrap();
    let header: Vec<&str> = metrics.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "participants").unwrap();
    metrics
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(col).unwrap().parse().unwrap())
        .collect()
}

fn in_process(dir: &Path, cfg: &Path) -> String {
    let out = dir.join("local");
    let status = Command::new(BIN)
        .arg("run")
        .arg(cfg)
        .arg("--out")
        .arg(&out)
        .arg("-q")
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::read_to_string(out.join("metrics.csv")).unwrap()
}

fn tls_args(dir: &Path, mutual: bool) -> (Vec<String>, Vec<String>) {
    let p = |f: &str| dir.join(f).display().to_string();
    let mut server = vec![
        "--tls-cert".into(),
        p("server.pem"),
        "--tls-key".into(),
        p("server.key"),
        "--token-file".into(),
        p("token"),
    ];
    let mut client = vec![
        "--ca".into(),
        p("ca.pem"),
        "--token-file".into(),
        p("token"),
    ];
    if mutual {
        server.extend(["--client-ca".into(), p("ca.pem")]);
        client.extend([
            "--cert".into(),
            p("client.pem"),
            "--key".into(),
            p("client.key"),
        ]);
    }
    (server, client)
}

fn networked_run_matches(name: &str, algorithm: &str, mutual: bool) {
    let dir = scratch(name);
    pki(&dir);
    let cfg = config(&dir, 15, algorithm);
    let (server_args, client_args) = tls_args(&dir, mutual);
    let server_args: Vec<&str> = server_args.iter().map(String::as_str).collect();
    let client_args: Vec<&str> = client_args.iter().map(String::as_str).collect();
    let (coordinator, addr) = serve(&dir, &cfg, "net", &server_args);
    let clients: Vec<Child> = (0..4).map(|i| join(&addr, i, &client_args)).collect();
    let served = wait(coordinator, Duration::from_secs(120));
    all_succeeded(&served, clients);
    let networked = std::fs::read_to_string(dir.join("net/metrics.csv")).unwrap();
    assert_eq!(networked, in_process(&dir, &cfg), "metrics.csv differs");
    // What the metrics count is what crossed: the payload bytes the
    // coordinator measured within 1.5x of summary.json's (and not much below:
    // these 10-parameter messages are small, so a few bytes of counted tags
    // that encode as one-byte integers weigh).
    let stdout = String::from_utf8_lossy(&served.stdout);
    let measured: Vec<u64> = stdout
        .split("payload measured: ")
        .nth(1)
        .unwrap_or_else(|| panic!("{stdout}"))
        .split(" bytes")
        .next()
        .unwrap()
        .split(" and ")
        .map(|n| n.parse().unwrap())
        .collect();
    let summary = std::fs::read_to_string(dir.join("net/summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
    for (m, key) in measured.iter().zip(["bytes_down", "bytes_up"]) {
        let counted = summary[key].as_u64().unwrap() as f64;
        let ratio = *m as f64 / counted;
        assert!(
            (0.75..=1.5).contains(&ratio),
            "{name} {key}: measured {m}, counted {counted}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The oracle with 2 clusters: each client is sent its cluster's model only.
#[test]
fn networked_oracle_sends_each_client_its_own_model() {
    networked_run_matches("oracle", "name = \"oracle\"\nlr = 0.05", false);
}

#[test]
fn networked_ifca_over_tls_matches_the_in_process_run() {
    networked_run_matches("ifca", IFCA, false);
}

#[test]
fn networked_srfca_over_mutual_tls_matches_the_in_process_run() {
    networked_run_matches(
        "srfca",
        "name = \"srfca\"\ndistance = \"cross-loss\"\nthreshold = { kind = \"quantile\", value = 0.4 }\n\
         local_steps = 50\nlocal_lr = 0.05\nrefine_rounds = 3\nlr = 0.1\ninit = { kind = \"zeros\" }",
        true,
    );
}

#[test]
fn clients_without_the_token_or_certificate_are_refused() {
    let dir = scratch("refused");
    pki(&dir);
    let cfg = config(&dir, 3, IFCA);
    let (server_args, _) = tls_args(&dir, true);
    let mut server_args: Vec<&str> = server_args.iter().map(String::as_str).collect();
    server_args.extend(["--join-timeout", "4"]);
    let (coordinator, addr) = serve(&dir, &cfg, "net", &server_args);
    let p = |f: &str| dir.join(f).display().to_string();
    let (ca, cert, key, token) = (p("ca.pem"), p("client.pem"), p("client.key"), p("token"));
    std::fs::write(dir.join("wrong"), "guess").unwrap();
    let wrong = p("wrong");
    // The right certificate with the wrong token.
    let no_token = join(
        &addr,
        0,
        &[
            "--ca",
            &ca,
            "--cert",
            &cert,
            "--key",
            &key,
            "--token-file",
            &wrong,
        ],
    );
    let out = wait(no_token, Duration::from_secs(30));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("token"), "{err}");
    // The right token without a client certificate.
    let no_cert = join(
        &addr,
        1,
        &[
            "--ca",
            &ca,
            "--token-file",
            &token,
            "--connect-timeout",
            "2",
        ],
    );
    let out = wait(no_cert, Duration::from_secs(30));
    assert!(!out.status.success());
    // Nobody got in: the coordinator gives up waiting, with a clear error.
    let served = wait(coordinator, Duration::from_secs(30));
    assert!(!served.status.success());
    let err = String::from_utf8_lossy(&served.stderr);
    assert!(err.contains("0 of 4 clients registered"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A TLS coordinator of `rounds` IFCA rounds that completes a round with 3 of
/// its 4 clients after 1 s; returns its directory, process, address and the
/// clients' arguments.
fn tolerant_run(name: &str, rounds: usize) -> (PathBuf, Child, String, Vec<String>) {
    let dir = scratch(name);
    pki(&dir);
    let cfg = config(&dir, rounds, IFCA);
    let (server_args, client_args) = tls_args(&dir, false);
    let mut server_args: Vec<&str> = server_args.iter().map(String::as_str).collect();
    server_args.extend(["--min-clients", "3", "--round-timeout", "1"]);
    let (coordinator, addr) = serve(&dir, &cfg, "net", &server_args);
    (dir, coordinator, addr, client_args)
}

#[test]
fn a_client_killed_mid_round_is_dropped_and_the_run_completes() {
    let (dir, coordinator, addr, client_args) = tolerant_run("killed", 5);
    let client_args: Vec<&str> = client_args.iter().map(String::as_str).collect();
    let mut crashing = client_args.clone();
    crashing.extend(["--crash-at-round", "2"]);
    let clients: Vec<Child> = (0..4)
        .map(|i| join(&addr, i, if i == 3 { &crashing } else { &client_args }))
        .collect();
    let served = wait(coordinator, Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&served.stdout);
    assert!(
        served.status.success(),
        "serve failed: {}",
        String::from_utf8_lossy(&served.stderr)
    );
    // Rounds 2, 3 and 4 went on without client 3.
    assert!(stdout.contains("3 dropped"), "{stdout}");
    let participants = participants(&dir.join("net/metrics.csv"));
    assert_eq!(participants, [4, 4, 3, 3, 3]);
    // Each dropped reply is recorded: which round, which client, why.
    let replies = std::fs::read_to_string(dir.join("net/replies.csv")).unwrap();
    let rows: Vec<&str> = replies.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{replies}");
    for (row, round) in rows.iter().zip(2..) {
        assert!(row.starts_with(&format!("{round},3,dropped,")), "{replies}");
    }
    for c in clients {
        let _ = wait(c, Duration::from_secs(30));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A client that died stops answering heartbeats: once it has been silent for
/// `SILENT_AFTER` (15 s), rounds close as soon as every other client replied
/// instead of each waiting out the round timeout (60 s here).
#[test]
fn rounds_stop_waiting_for_a_silent_client() {
    let dir = scratch("silent");
    pki(&dir);
    let cfg = config(&dir, 4, IFCA);
    let (server_args, client_args) = tls_args(&dir, false);
    let mut server_args: Vec<&str> = server_args.iter().map(String::as_str).collect();
    server_args.extend(["--min-clients", "3", "--round-timeout", "60"]);
    let start = std::time::Instant::now();
    let (coordinator, addr) = serve(&dir, &cfg, "net", &server_args);
    let client_args: Vec<&str> = client_args.iter().map(String::as_str).collect();
    let mut crashing = client_args.clone();
    crashing.extend(["--crash-at-round", "1"]);
    let clients: Vec<Child> = (0..4)
        .map(|i| join(&addr, i, if i == 3 { &crashing } else { &client_args }))
        .collect();
    let served = wait(coordinator, Duration::from_secs(150));
    let elapsed = start.elapsed();
    assert!(
        served.status.success(),
        "serve failed: {}",
        String::from_utf8_lossy(&served.stderr)
    );
    assert_eq!(participants(&dir.join("net/metrics.csv")), [4, 3, 3, 3]);
    // One silence of 15-16 s, not three round timeouts of 60 s.
    assert!(elapsed < Duration::from_secs(50), "took {elapsed:?}");
    for c in clients {
        let _ = wait(c, Duration::from_secs(30));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// When the coordinator of a 300-round run dies.
#[derive(Clone, Copy, Debug)]
enum Kill {
    /// `kill -9` once round 20 is logged: during round 20, its replies in the
    /// log but not yet in the models.
    MidRun,
    /// Exits as if killed right after round 20 (between two rounds).
    BetweenRounds,
    /// Exits as if killed once its last round is logged, before writing the
    /// run directory.
    AfterLastRound,
}

/// A coordinator killed as `kill` says and started again with `--resume`
/// finishes with the uninterrupted run's `metrics.csv`, over TLS or
/// plaintext; its clients reconnect to it on any transport error.
fn coordinator_killed_and_resumed(name: &str, tls: bool, kill: Kill) {
    let dir = scratch(name);
    pki(&dir);
    let rounds = 300;
    let cfg = config(&dir, rounds, IFCA);
    let (server_args, client_args) = if tls {
        tls_args(&dir, false)
    } else {
        (vec!["--insecure".into()], vec!["--insecure".into()])
    };
    let mut server_args: Vec<&str> = server_args.iter().map(String::as_str).collect();
    let mut client_args: Vec<&str> = client_args.iter().map(String::as_str).collect();
    client_args.extend(["--connect-timeout", "60"]);
    // A fixed port, so that the clients find the restarted coordinator.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen = format!("127.0.0.1:{port}");
    let last = rounds.to_string();
    match kill {
        Kill::AfterLastRound => server_args.extend(["--crash-after-round", &last]),
        Kill::BetweenRounds => server_args.extend(["--crash-after-round", "20"]),
        Kill::MidRun => {}
    }
    let (mut first, addr) = serve_on(&listen, &dir, &cfg, "net", &server_args);
    let clients: Vec<Child> = (0..4).map(|i| join(&addr, i, &client_args)).collect();
    match kill {
        Kill::MidRun => {
            let logged = dir.join("net.checkpoint/round-000020.bin");
            let start = Instant::now();
            while !logged.exists() {
                assert!(
                    start.elapsed() < Duration::from_secs(60),
                    "round 20 never logged"
                );
                std::thread::sleep(Duration::from_millis(2));
            }
            first.kill().unwrap();
            let _ = first.wait();
        }
        Kill::AfterLastRound | Kill::BetweenRounds => {
            let status = wait(first, Duration::from_secs(120)).status;
            assert_eq!(status.code(), Some(137), "the injected crash");
        }
    }
    assert!(
        !dir.join("net/metrics.csv").exists(),
        "the first coordinator must not have finished"
    );
    let mut resume_args: Vec<&str> = server_args
        .iter()
        .copied()
        .filter(|a| *a != "--crash-after-round" && *a != last && *a != "20")
        .collect();
    resume_args.push("--resume");
    let (second, _) = serve_on(&listen, &dir, &cfg, "net", &resume_args);
    let served = wait(second, Duration::from_secs(120));
    match kill {
        Kill::MidRun | Kill::BetweenRounds => all_succeeded(&served, clients),
        // Every round is replayed without a client; the clients, whose
        // coordinator went away at the end, hear from the resumed one that
        // the run is complete, and exit at once (not after their 60 s
        // --connect-timeout).
        Kill::AfterLastRound => {
            assert!(
                served.status.success(),
                "serve failed: {}",
                String::from_utf8_lossy(&served.stderr)
            );
            for c in clients {
                let out = wait(c, Duration::from_secs(15));
                let e = String::from_utf8_lossy(&out.stderr);
                assert!(out.status.success(), "{name}: client failed: {e}");
                assert!(e.contains(&format!("the run at {addr} is complete")), "{e}");
            }
        }
    }
    assert!(String::from_utf8_lossy(&served.stderr).contains("replaying"));
    let networked = std::fs::read_to_string(dir.join("net/metrics.csv")).unwrap();
    assert_eq!(
        networked,
        in_process(&dir, &cfg),
        "{name}: metrics.csv differs"
    );
    assert!(
        !dir.join("net.checkpoint").exists(),
        "checkpoint left behind"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_coordinator_killed_and_resumed_reaches_the_uninterrupted_result() {
    coordinator_killed_and_resumed("resumed-tls", true, Kill::MidRun);
    coordinator_killed_and_resumed("resumed-plain", false, Kill::MidRun);
    coordinator_killed_and_resumed("between-tls", true, Kill::BetweenRounds);
    coordinator_killed_and_resumed("between-plain", false, Kill::BetweenRounds);
}

#[test]
fn a_coordinator_killed_after_its_last_round_resumes_without_clients() {
    coordinator_killed_and_resumed("resumed-last-tls", true, Kill::AfterLastRound);
    coordinator_killed_and_resumed("resumed-last-plain", false, Kill::AfterLastRound);
}

#[test]
fn a_restarted_client_rejoins_and_answers_later_rounds() {
    let (dir, coordinator, addr, client_args) = tolerant_run("rejoined", 8);
    let client_args: Vec<&str> = client_args.iter().map(String::as_str).collect();
    let mut crashing = client_args.clone();
    crashing.extend(["--crash-at-round", "2"]);
    let mut clients: Vec<Child> = (0..3).map(|i| join(&addr, i, &client_args)).collect();
    let crashed = wait(join(&addr, 3, &crashing), Duration::from_secs(60));
    assert!(!crashed.status.success());
    // The same client, restarted: it registers again and takes part again.
    clients.push(join(&addr, 3, &client_args));
    let served = wait(coordinator, Duration::from_secs(120));
    assert!(
        served.status.success(),
        "serve failed: {}",
        String::from_utf8_lossy(&served.stderr)
    );
    let participants = participants(&dir.join("net/metrics.csv"));
    assert_eq!(participants[..2], [4, 4]);
    assert_eq!(participants.last(), Some(&4), "{participants:?}");
    // The restart is reported and recorded: the new process's client state
    // started over.
    let stdout = String::from_utf8_lossy(&served.stdout);
    assert!(stdout.contains("1 client processes restarted"), "{stdout}");
    let replies = std::fs::read_to_string(dir.join("net/replies.csv")).unwrap();
    assert!(
        replies.lines().any(|l| l.contains(",3,restarted,")),
        "{replies}"
    );
    for c in clients {
        let out = wait(c, Duration::from_secs(30));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A coordinator that stops mid-run and does not come back within the
/// clients' `--connect-timeout`: each client exits 1 with one line saying
/// there is no coordinator at the address, right after its timeout.
#[test]
fn clients_whose_coordinator_does_not_come_back_say_so_after_their_timeout() {
    let dir = scratch("gone");
    let cfg = config(&dir, 5, IFCA);
    let (coordinator, addr) = serve(
        &dir,
        &cfg,
        "net",
        &["--insecure", "--crash-after-round", "1"],
    );
    let args = ["--insecure", "--connect-timeout", "2"];
    let clients: Vec<Child> = (0..4).map(|i| join(&addr, i, &args)).collect();
    let served = wait(coordinator, Duration::from_secs(30));
    assert_eq!(served.status.code(), Some(137), "the injected crash");
    let start = Instant::now();
    for c in clients {
        let out = wait(c, Duration::from_secs(15));
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{e}");
        assert!(e.contains(&format!("no coordinator at {addr}")), "{e}");
        assert_eq!(e.trim().lines().count(), 1, "{e}");
    }
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
