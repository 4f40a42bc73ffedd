//! `fedcluster data fetch` against a tiny HTTP/1.1 server on 127.0.0.1 that
//! serves files the test writes (no network): a good file lands under its
//! final name, a corrupted one is refused with nothing left behind, a
//! `.part` is resumed with a range request (restarted when the server ignores
//! the range, put in place when it already holds every byte), a mirror
//! without the file passes to the next, files already there are checked and
//! never overwritten without `--force`, a 404 names its URL, an unknown
//! name lists the known ones, and without `--data-root` the files land where
//! `fedcluster run` looks ($FEDCLUSTER_DATA, else data/).

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};

const FILE: &str = "cifar-10-binary.tar.gz";

/// What the server does with a `Range: bytes=N-` header.
#[derive(Clone, Copy, PartialEq)]
enum Ranges {
    /// Answers `206` with the bytes from N (`416` when N is past the end).
    Honour,
    /// Answers `200` with the whole file.
    Ignore,
    /// Honours ranges, but answers a request without one with half the
    /// file, then holds the connection open (a download that hangs, to be
    /// killed).
    StallHalfWay,
}

/// One request the server saw: its path and its `Range` header.
#[derive(Clone, Debug, PartialEq)]
struct Seen {
    path: String,
    range: Option<String>,
}

/// A server on 127.0.0.1 in a thread, serving `files` by name; its base URL
/// and the requests it has seen.
fn serve(files: HashMap<String, Vec<u8>>, ranges: Ranges) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        let files = Arc::new(files);
        for stream in listener.incoming().flatten() {
            let (files, log) = (Arc::clone(&files), Arc::clone(&log));
            std::thread::spawn(move || answer(stream, &files, ranges, &log));
        }
    });
    (base, seen)
}

fn answer(
    mut stream: TcpStream,
    files: &HashMap<String, Vec<u8>>,
    ranges: Ranges,
    log: &Mutex<Vec<Seen>>,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    reader.read_line(&mut request_line).unwrap();
    let mut range = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("range")
        {
            range = Some(value.trim().to_string());
        }
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .to_string();
    log.lock().unwrap().push(Seen {
        path: path.clone(),
        range: range.clone(),
    });
    let body = files.get(path.trim_start_matches('/'));
    let from = range
        .as_deref()
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.strip_suffix('-'))
        .and_then(|n| n.parse::<usize>().ok());
    let (head, bytes): (String, &[u8]) = match (body, from) {
        (None, _) => ("404 Not Found".into(), b"no such file"),
        (Some(body), None) if ranges == Ranges::StallHalfWay => {
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(&body[..body.len() / 2]);
            let _ = stream.flush();
            std::thread::sleep(std::time::Duration::from_secs(60));
            return;
        }
        (Some(body), Some(from)) if ranges != Ranges::Ignore && from < body.len() => (
            format!(
                "206 Partial Content\r\nContent-Range: bytes {from}-{}/{}",
                body.len() - 1,
                body.len()
            ),
            &body[from..],
        ),
        (Some(body), Some(_)) if ranges != Ranges::Ignore => (
            format!(
                "416 Range Not Satisfiable\r\nContent-Range: bytes */{}",
                body.len()
            ),
            b"",
        ),
        (Some(body), _) => ("200 OK".into(), body),
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        bytes.len()
    );
    let _ = stream.write_all(bytes);
}

/// Bytes that stand for the archive: 300 KB, no two 64 KB blocks alike.
fn archive() -> Vec<u8> {
    (0..300_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect()
}

fn md5_hex(bytes: &[u8]) -> String {
    format!("{:x}", md5::compute(bytes))
}

/// `fedcluster data fetch cifar10` from `base` into `root`, with `md5`
/// expected for the archive, and `extra` arguments.
fn fetch(base: &str, root: &Path, md5: &str, extra: &[&str]) -> Output {
    let expect = format!("{FILE}={md5}");
    let args = [
        "data",
        "fetch",
        "cifar10",
        "--mirror",
        base,
        "--data-root",
        root.to_str().unwrap(),
        "--expect-md5",
        &expect,
    ];
    common::fedcluster(&[&args[..], extra].concat(), root)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn succeeded(out: &Output) {
    assert!(out.status.success(), "{}", stderr(out));
}

/// The final name and the `.part` of the archive under `root`.
fn paths(root: &Path) -> (PathBuf, PathBuf) {
    let dir = root.join("cifar10");
    (dir.join(FILE), dir.join(format!("{FILE}.part")))
}

#[test]
fn a_good_file_lands_under_its_final_name_with_its_bytes() {
    let root = common::scratch("fetch-good");
    let bytes = archive();
    let (base, seen) = serve(
        HashMap::from([(FILE.into(), bytes.clone())]),
        Ranges::Honour,
    );
    let out = fetch(&base, &root, &md5_hex(&bytes), &[]);
    succeeded(&out);
    let (file, part) = paths(&root);
    assert_eq!(std::fs::read(&file).unwrap(), bytes);
    assert!(!part.exists());
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [Seen {
            path: format!("/{FILE}"),
            range: None
        }]
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let dir = root.join("cifar10");
    assert!(
        stdout.contains(&format!("--data-dir {}", dir.display())),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_corrupted_file_is_refused_naming_both_checksums_and_nothing_is_kept() {
    let root = common::scratch("fetch-corrupt");
    let bytes = archive();
    let mut corrupted = bytes.clone();
    corrupted[150_000] ^= 0x40;
    let (base, _) = serve(
        HashMap::from([(FILE.into(), corrupted.clone())]),
        Ranges::Honour,
    );
    let expected = md5_hex(&bytes);
    let out = fetch(&base, &root, &expected, &[]);
    assert!(!out.status.success());
    let err = stderr(&out);
    let line = err.lines().find(|l| l.starts_with("error:")).unwrap_or("");
    assert!(
        line.contains(FILE)
            && line.contains(&format!("expected {expected}"))
            && line.contains(&format!("got {}", md5_hex(&corrupted))),
        "{err}"
    );
    let (file, part) = paths(&root);
    assert!(!file.exists() && !part.exists(), "{err}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_download_killed_half_way_resumes_with_a_range_request() {
    let root = common::scratch("fetch-resume");
    let bytes = archive();
    let half = bytes.len() / 2;
    let (file, part) = paths(&root);
    std::fs::create_dir_all(part.parent().unwrap()).unwrap();
    std::fs::write(&part, &bytes[..half]).unwrap();
    let (base, seen) = serve(
        HashMap::from([(FILE.into(), bytes.clone())]),
        Ranges::Honour,
    );
    let out = fetch(&base, &root, &md5_hex(&bytes), &[]);
    succeeded(&out);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].range.as_deref(), Some(&*format!("bytes={half}-")));
    assert_eq!(std::fs::read(&file).unwrap(), bytes);
    assert!(!part.exists());
    assert!(
        stderr(&out).contains(&format!("from byte {half}")),
        "{}",
        stderr(&out)
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// The real thing: a `fetch` whose server hangs half way is killed (SIGKILL),
/// and the next `fetch` resumes from what reached the disk.
#[test]
fn a_fetch_killed_during_its_download_resumes_where_it_stopped() {
    let root = common::scratch("fetch-kill");
    let bytes = archive();
    let (file, part) = paths(&root);
    let (base, seen) = serve(
        HashMap::from([(FILE.into(), bytes.clone())]),
        Ranges::StallHalfWay,
    );
    let expect = format!("{FILE}={}", md5_hex(&bytes));
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_fedcluster"))
        .args([
            "data",
            "fetch",
            "cifar10",
            "--mirror",
            &base,
            "--expect-md5",
            &expect,
        ])
        .args(["--data-root", root.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait for most of the half the server sent to reach the `.part`.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len() as usize);
    while size(&part) < bytes.len() / 4 {
        assert!(std::time::Instant::now() < deadline, "no .part after 30 s");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let kept = size(&part);
    assert!(
        kept <= bytes.len() / 2 && !file.exists(),
        "{kept} bytes kept"
    );
    assert_eq!(
        std::fs::read(&part).unwrap(),
        bytes[..kept],
        "the .part is a prefix"
    );
    succeeded(&fetch(&base, &root, &md5_hex(&bytes), &[]));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[1].range.as_deref(), Some(&*format!("bytes={kept}-")));
    assert_eq!(std::fs::read(&file).unwrap(), bytes);
    assert!(!part.exists());
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_part_that_holds_every_byte_is_checked_and_put_in_place() {
    let root = common::scratch("fetch-complete-part");
    let bytes = archive();
    let (file, part) = paths(&root);
    std::fs::create_dir_all(part.parent().unwrap()).unwrap();
    std::fs::write(&part, &bytes).unwrap();
    let (base, seen) = serve(
        HashMap::from([(FILE.into(), bytes.clone())]),
        Ranges::Honour,
    );
    succeeded(&fetch(&base, &root, &md5_hex(&bytes), &[]));
    let range = format!("bytes={}-", bytes.len());
    assert_eq!(seen.lock().unwrap()[0].range.as_deref(), Some(&*range));
    assert_eq!(std::fs::read(&file).unwrap(), bytes);
    assert!(!part.exists());
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_server_that_ignores_the_range_gives_the_whole_file_from_its_start() {
    let root = common::scratch("fetch-no-range");
    let bytes = archive();
    let (file, part) = paths(&root);
    std::fs::create_dir_all(part.parent().unwrap()).unwrap();
    // Wrong bytes: appending the whole file to them could never match.
    std::fs::write(&part, vec![7u8; 1000]).unwrap();
    let (base, seen) = serve(
        HashMap::from([(FILE.into(), bytes.clone())]),
        Ranges::Ignore,
    );
    let out = fetch(&base, &root, &md5_hex(&bytes), &[]);
    succeeded(&out);
    assert_eq!(
        seen.lock().unwrap()[0].range.as_deref(),
        Some("bytes=1000-")
    );
    assert_eq!(std::fs::read(&file).unwrap(), bytes);
    assert!(!part.exists());
    assert!(
        stderr(&out).contains("ignored the range"),
        "{}",
        stderr(&out)
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_file_already_there_is_kept_when_right_refused_when_wrong_and_replaced_with_force() {
    let root = common::scratch("fetch-present");
    let bytes = archive();
    let md5 = md5_hex(&bytes);
    let (base, seen) = serve(
        HashMap::from([(FILE.into(), bytes.clone())]),
        Ranges::Honour,
    );
    let (file, _) = paths(&root);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();

    std::fs::write(&file, &bytes).unwrap();
    let out = fetch(&base, &root, &md5, &[]);
    succeeded(&out);
    assert!(stderr(&out).contains("already there, checksum ok"));
    assert!(seen.lock().unwrap().is_empty(), "nothing is downloaded");

    std::fs::write(&file, b"something else").unwrap();
    let out = fetch(&base, &root, &md5, &[]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("not overwritten") && stderr(&out).contains("--force"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"something else");

    succeeded(&fetch(&base, &root, &md5, &["--force"]));
    assert_eq!(std::fs::read(&file).unwrap(), bytes);
    assert_eq!(seen.lock().unwrap().len(), 1);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_missing_file_is_an_error_naming_its_url() {
    let root = common::scratch("fetch-404");
    let (base, _) = serve(HashMap::new(), Ranges::Honour);
    let out = fetch(&base, &root, &md5_hex(b""), &[]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(&format!("GET {base}{FILE}: HTTP 404")),
        "{err}"
    );
    assert!(!paths(&root).0.exists());
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_mirror_without_the_file_passes_to_the_next() {
    let root = common::scratch("fetch-next-mirror");
    let bytes = archive();
    let (empty, _) = serve(HashMap::new(), Ranges::Honour);
    let (base, _) = serve(
        HashMap::from([(FILE.into(), bytes.clone())]),
        Ranges::Honour,
    );
    let out = fetch(&empty, &root, &md5_hex(&bytes), &["--mirror", &base]);
    succeeded(&out);
    assert!(
        stderr(&out).contains(&format!(
            "GET {empty}{FILE}: HTTP 404 Not Found; trying the next"
        )),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(paths(&root).0).unwrap(), bytes);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn an_unknown_name_lists_the_known_ones() {
    let root = common::scratch("fetch-unknown");
    let out = common::fedcluster(&["data", "fetch", "imagenet"], &root);
    assert!(!out.status.success());
    let err = stderr(&out);
    for name in [
        "mnist",
        "fashion-mnist",
        "cifar10",
        "cifar100",
        "shakespeare",
    ] {
        assert!(err.contains(name), "{name} is not listed: {err}");
    }
    assert!(!root.join("data").exists());
    let _ = std::fs::remove_dir_all(&root);
}

/// Without `--data-root` the files land where `fedcluster run` looks when
/// no directory is given: `$FEDCLUSTER_DATA/<name>/`, else `data/<name>/` in
/// the working directory; and the output says that the run finds them there.
#[test]
fn without_a_data_root_the_files_land_where_a_run_looks() {
    let root = common::scratch("fetch-default-root");
    let bytes = archive();
    let (base, _) = serve(
        HashMap::from([(FILE.into(), bytes.clone())]),
        Ranges::Honour,
    );
    let expect = format!("{FILE}={}", md5_hex(&bytes));
    let args = [
        "data",
        "fetch",
        "cifar10",
        "--mirror",
        &base,
        "--expect-md5",
        &expect,
    ];
    let variable = root.join("from-the-variable");
    let out = common::command(&args, &root)
        .env(fedcluster_testkit::DATA_ROOT_VAR, &variable)
        .output()
        .unwrap();
    succeeded(&out);
    assert_eq!(std::fs::read(paths(&variable).0).unwrap(), bytes);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("`fedcluster run` reads it from there"),
        "{stdout}"
    );
    let out = common::fedcluster(&args, &root);
    succeeded(&out);
    assert_eq!(std::fs::read(paths(&root.join("data")).0).unwrap(), bytes);
    let _ = std::fs::remove_dir_all(&root);
}
