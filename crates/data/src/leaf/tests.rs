//! LEAF files and Shakespeare: round trips, malformed inputs, and the same
//! clients from the plays and from their LEAF directory.

use std::path::Path;

use super::alphabet::symbol;
use super::dir::{SplitUser, read_leaf_dir, write_leaf_dir};
use super::json::{LeafSamples, LeafUser, Split, UserRef, read_leaf_json, write_leaf_json};
use super::samples::TextSamples;
use super::shakespeare::{ShakespeareSpec, leaf_user_id, shakespeare, users_from_plays};

/// Consecutive windows of `seq_len` over `text`, as LEAF cuts them.
fn windows(text: &str, seq_len: usize) -> TextSamples {
    let ids: Vec<u8> = text.chars().map(|c| symbol(c).unwrap()).collect();
    let mut t = TextSamples::new(seq_len);
    for j in 0..ids.len() - seq_len {
        t.push(&ids[j..j + seq_len], ids[j + seq_len]);
    }
    t
}

fn text_user(id: &str, text: &str) -> LeafUser {
    LeafUser {
        id: id.into(),
        hierarchy: Some("A PLAY".into()),
        samples: LeafSamples::Text(windows(text, 5)),
    }
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

fn error(path: &Path, split: Split) -> String {
    read_leaf_json(path, split).unwrap_err().to_string()
}

#[test]
fn text_and_feature_files_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.json");
    let users = vec![
        text_user("P_HAMLET", "To be, or not to be: that is the question."),
        text_user("P_OPHELIA", "O, what a noble mind is here o'erthrown!"),
    ];
    let refs: Vec<UserRef<'_>> = users.iter().map(UserRef::from).collect();
    write_leaf_json(&path, &refs).unwrap();
    assert_eq!(read_leaf_json(&path, Split::Train).unwrap(), users);

    let features = vec![LeafUser {
        id: "f0001".into(),
        hierarchy: None,
        samples: LeafSamples::Features {
            dim: 3,
            x: vec![0.0, 0.5, 1.0, 0.25, 0.75, 0.125],
            y: vec![61, 0],
        },
    }];
    let refs: Vec<UserRef<'_>> = features.iter().map(UserRef::from).collect();
    write_leaf_json(&path, &refs).unwrap();
    assert_eq!(read_leaf_json(&path, Split::Test).unwrap(), features);
}

#[test]
fn leafs_own_layout_reads_with_its_test_count_quirk() {
    // As LEAF writes them: `user_data` before `num_samples` is allowed, extra
    // keys are ignored, and Shakespeare test files overstate `num_samples` by
    // seq_len - 1.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    write(
        &path,
        r#"{"user_data": {"u": {"x": ["abcde", "bcdef"], "y": ["f", "g"], "raw": "ignored"}},
            "users": ["u"], "num_samples": [6], "hierarchies": ["P"]}"#,
    );
    let users = read_leaf_json(&path, Split::Test).unwrap();
    let LeafSamples::Text(t) = &users[0].samples else {
        panic!("text samples")
    };
    assert_eq!(
        (t.len(), t.text.len()),
        (2, 6),
        "shared windows are stored once"
    );
    assert_eq!(users[0].hierarchy.as_deref(), Some("P"));
    let e = error(&path, Split::Train);
    assert!(
        e.contains("user `u`: `num_samples` says 6 but `user_data` holds 2"),
        "{e}"
    );
}

#[test]
fn malformed_files_are_refused_naming_file_and_user() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.json");
    let shown = path.display().to_string();
    let cases = [
        (
            r#"{"users": ["u"], "num_samples": [1], "user_data": {"u": {"x": ["ab"#,
            "EOF",
        ),
        (
            r#"{"users": ["u", "v"], "num_samples": [1, 1], "user_data": {"u": {"x": ["ab"], "y": ["c"]}}}"#,
            "user `v` is in `users` but missing from `user_data`",
        ),
        (
            r#"{"users": ["u"], "num_samples": [3], "user_data": {"u": {"x": ["ab"], "y": ["c"]}}}"#,
            "user `u`: `num_samples` says 3 but `user_data` holds 1 samples",
        ),
        (
            r#"{"users": ["u"], "num_samples": [1], "user_data": {"u": {"x": ["a@"], "y": ["c"]}}}"#,
            "user `u`: x[0]: character '@' is not in LEAF's 80-symbol alphabet",
        ),
        (
            r#"{"users": ["u"], "num_samples": [1], "user_data": {"u": {"x": ["ab"], "y": ["cd"]}}}"#,
            "user `u`: y[0]: \"cd\" is not one character",
        ),
        (
            r#"{"users": ["u"], "num_samples": [1], "user_data": {"u": {"x": ["ab"], "y": ["_"]}}}"#,
            "user `u`: y[0]: character '_' is not in LEAF's 80-symbol alphabet",
        ),
        (
            r#"{"users": ["u"], "num_samples": [2], "user_data": {"u": {"x": ["ab", "abc"], "y": ["c", "d"]}}}"#,
            "user `u`: x[1]: 3 characters where x[0] has 2",
        ),
        (
            r#"{"users": ["u"], "num_samples": [2], "user_data": {"u": {"x": ["ab", "bc"], "y": ["c"]}}}"#,
            "user `u`: 2 inputs in `x` but 1 labels in `y`",
        ),
        (
            r#"{"users": ["u"], "num_samples": [1], "user_data": {"u": {"x": [[1, 2]], "y": [-1]}}}"#,
            "user `u`: y[0]: -1 is not a class index",
        ),
        (
            r#"{"users": ["u"], "num_samples": [1, 2], "user_data": {"u": {"x": ["ab"], "y": ["c"]}}}"#,
            "`num_samples` has 2 entries for 1 users",
        ),
        (
            r#"{"users": [], "num_samples": [], "user_data": {"w": {"x": [[1]], "y": [0]}}}"#,
            "user `w` is in `user_data` but not in `users`",
        ),
        (r#"{"num_samples": [], "user_data": {}}"#, "no `users` list"),
        (r#"[1, 2]"#, "not a LEAF JSON file"),
    ];
    for (text, expected) in cases {
        write(&path, text);
        let e = error(&path, Split::Train);
        assert!(e.starts_with(&shown), "{e}");
        assert!(e.contains(expected), "{text}\n{e}");
    }
    let missing = dir.path().join("none.json");
    assert!(error(&missing, Split::Train).contains("cannot read"));
    // LEAF's by-sample split keeps an empty entry for each user it drops.
    write(
        &path,
        r#"{"users": [], "num_samples": [], "user_data": {"w": {"x": [], "y": []}}}"#,
    );
    assert_eq!(read_leaf_json(&path, Split::Train).unwrap(), []);
}

#[test]
fn leaf_directories_round_trip_and_must_hold_the_same_users() {
    let dir = tempfile::tempdir().unwrap();
    let user = |id: &str, train: &str, test: &str| SplitUser {
        id: id.into(),
        hierarchy: Some("P".into()),
        train: LeafSamples::Text(windows(train, 4)),
        test: LeafSamples::Text(windows(test, 4)),
    };
    let users = vec![
        user("a", "abcdefgh", "ghijk"),
        user("b", "ABCDEFG", "FGHIJ"),
    ];
    let out = dir.path().join("leaf");
    write_leaf_dir(&out, "toy", &users, &[("notes.txt", "made by a test")]).unwrap();
    assert!(out.join("notes.txt").is_file());
    assert!(out.join("train/toy_train.json").is_file());
    assert!(!dir.path().join("leaf.partial").exists());
    assert_eq!(read_leaf_dir(&out).unwrap(), users);
    let e = write_leaf_dir(&out, "toy", &users, &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("already exists"), "{e}");

    // A byte changed in a written file is refused, naming the file.
    let train = out.join("train/toy_train.json");
    let pristine = std::fs::read(&train).unwrap();
    let mut flipped = pristine.clone();
    flipped[pristine.len() / 2] ^= 1;
    std::fs::write(&train, &flipped).unwrap();
    let e = read_leaf_dir(&out).unwrap_err().to_string();
    assert!(e.contains("toy_train.json") && e.contains("SHA-256"), "{e}");
    std::fs::write(&train, &pristine).unwrap();

    // LEAF's own checks, on a directory without checksums (LEAF's output).
    std::fs::remove_file(out.join("checksums.sha256")).unwrap();
    // A user in test/ only.
    let extra = [user("c", "abcdefgh", "ghijk")];
    let refs: Vec<UserRef<'_>> = extra
        .iter()
        .map(|u| UserRef {
            id: &u.id,
            hierarchy: None,
            samples: &u.test,
        })
        .collect();
    write_leaf_json(&out.join("test/more.json"), &refs).unwrap();
    let e = read_leaf_dir(&out).unwrap_err().to_string();
    assert!(
        e.contains("user `c` has test samples but no training samples"),
        "{e}"
    );
    // The same user in two training files.
    std::fs::remove_file(out.join("test/more.json")).unwrap();
    std::fs::copy(
        out.join("train/toy_train.json"),
        out.join("train/copy.json"),
    )
    .unwrap();
    let e = read_leaf_dir(&out).unwrap_err().to_string();
    assert!(e.contains("user `a` is also in"), "{e}");
}

#[test]
fn user_ids_follow_leafs_rule() {
    // Python's re.sub(r'\W+', '_', (play + '_' + role).replace(' ', '_')):
    // spaces become `_` first, so `, ` gives `__`.
    assert_eq!(
        leaf_user_id("HAMLET, PRINCE OF DENMARK", "MAR. AND BER"),
        "HAMLET__PRINCE_OF_DENMARK_MAR__AND_BER"
    );
    assert_eq!(leaf_user_id("THE TEMPEST", "MASTER"), "THE_TEMPEST_MASTER");
    assert_eq!(leaf_user_id("A -- B", "C"), "A___B_C");
}

/// A play of two speakers with long speeches, and a poem.
fn write_plays(dir: &Path) {
    let speech = |who: &str, n: usize| {
        (0..n)
            .map(|i| format!("{who}.\nLine {i} of {who}'s speech, long enough to count,\nand a second line; [Aside.] then a third.\n"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let play = format!(
        "THE TOY TRAGEDY\n\nby William Shakespeare\n\nACT I.\n\nSCENE I. A room.\n\n{}\n{}\n{}\n",
        speech("ALPHA", 12),
        speech("BETA", 9),
        speech("GAMMA", 2)
    );
    write(&dir.join("toy_gut.txt"), &play);
    write(
        &dir.join("poem_gut.txt"),
        "A POEM\n\nby William Shakespeare\n\nShall I compare thee\n",
    );
}

#[test]
fn plays_give_leaf_users_and_their_directory_the_same_clients() {
    let dir = tempfile::tempdir().unwrap();
    let plays = dir.path().join("plays");
    std::fs::create_dir(&plays).unwrap();
    write_plays(&plays);
    let (users, stats) = users_from_plays(&plays, 0.8).unwrap();
    assert_eq!(stats.skipped, ["poem_gut.txt"]);
    // GAMMA speaks 4 lines: a user before the split, too short for a test
    // window after it.
    assert_eq!(
        (stats.plays, stats.roles, stats.users, stats.split_users),
        (1, 3, 3, 2)
    );
    let ids: Vec<&str> = users.iter().map(|u| u.id.as_str()).collect();
    assert_eq!(ids, ["THE_TOY_TRAGEDY_ALPHA", "THE_TOY_TRAGEDY_BETA"]);
    for user in &users {
        // n windows: the first ⌊0.8 n⌋ train, the last n - ⌊0.8 n⌋ - 79 test.
        let n = user.train.len() + user.test.len() + 79;
        assert_eq!(user.train.len(), (0.8 * n as f64) as usize);
    }

    let leaf = dir.path().join("leaf");
    write_leaf_dir(&leaf, "shakespeare", &users, &[]).unwrap();
    let spec = |dir: &Path| ShakespeareSpec {
        data_dir: Some(dir.to_path_buf()),
        clients: 2,
        train_fraction: 0.8,
        max_train_samples: 0,
        max_test_samples: 0,
    };
    let from_plays = shakespeare(&spec(&plays), 7).unwrap();
    let from_leaf = shakespeare(&spec(&leaf), 7).unwrap();
    from_plays.validate().unwrap();
    assert_eq!(from_plays, from_leaf);
    assert_eq!((from_plays.dim, from_plays.train.len()), (80, 2));
    // One client sampled: the seed decides which.
    let one = |seed| {
        shakespeare(
            &ShakespeareSpec {
                clients: 1,
                ..spec(&leaf)
            },
            seed,
        )
        .unwrap()
        .train[0]
            .len()
    };
    let sizes: std::collections::HashSet<usize> = (0..20).map(one).collect();
    assert_eq!(sizes.len(), 2, "both users are drawn over 20 seeds");
    let e = shakespeare(
        &ShakespeareSpec {
            clients: 3,
            ..spec(&leaf)
        },
        1,
    )
    .unwrap_err();
    assert_eq!(e.field(), "clients");
    let capped = shakespeare(
        &ShakespeareSpec {
            max_test_samples: 5,
            ..spec(&leaf)
        },
        7,
    )
    .unwrap();
    assert!(capped.test.iter().all(|c| c.len() == 5));
    assert_eq!(capped.train, from_leaf.train);
}

/// The real plays, when they are here: the counts beside LEAF's.
#[test]
fn real_plays_give_about_leafs_users() {
    let test = "real_plays_give_about_leafs_users";
    let Some(dir) = fedcluster_testkit::real_data("shakespeare", "Shakespeare plays", test) else {
        return;
    };
    let (users, stats) = users_from_plays(&dir, 0.8).unwrap();
    eprintln!("{stats:?}");
    // LEAF: 1,129 users, 4,226,158 samples; the texts differ slightly.
    assert!((1_080..=1_180).contains(&stats.users), "{}", stats.users);
    assert!(
        (4_000_000..=4_400_000).contains(&stats.samples),
        "{}",
        stats.samples
    );
    assert_eq!(stats.plays, 37);
    // The five poems and metadata.txt have no act heading.
    assert_eq!(stats.skipped.len(), 6, "{:?}", stats.skipped);
    assert_eq!(users.len(), stats.split_users);
}
