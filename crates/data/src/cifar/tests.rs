//! Tests of the CIFAR readers: sets written by the tests themselves (a few
//! hundred records per file) in every form a path may take, and every kind
//! of bad file.

use std::path::{Path, PathBuf};

use super::fixture::write_tar_gz;
use super::*;

/// Records per file of the sets written here.
const RECORDS: usize = 200;

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// What `files` (as [`write_cifar_set`] takes them) read as, with CIFAR-100's
/// `labels`.
fn expected(set: Cifar, labels: Cifar100Labels, files: &[CifarRecords]) -> ImageSet {
    let split = |files: &[CifarRecords]| {
        let images = files.iter().flat_map(|f| f.images_hwc()).collect();
        let labels = files
            .iter()
            .flat_map(|f| match (set, labels) {
                (Cifar::Cifar100, Cifar100Labels::Coarse) => f.coarse.clone(),
                _ => f.labels.clone(),
            })
            .map(u32::from)
            .collect();
        (images, labels)
    };
    let (train, test) = files.split_at(files.len() - 1);
    let (train_images, train_labels) = split(train);
    let (test_images, test_labels) = split(test);
    ImageSet {
        shape: ImageShape {
            height: 32,
            width: 32,
            channels: 3,
        },
        classes: match set {
            Cifar::Cifar10 => 10,
            Cifar::Cifar100 => labels.classes(),
        },
        train_images,
        train_labels,
        test_images,
        test_labels,
    }
}

fn load(set: Cifar, path: &Path, labels: Cifar100Labels) -> Result<ImageSet> {
    match set {
        Cifar::Cifar10 => load_cifar10(path),
        Cifar::Cifar100 => load_cifar100(path, labels),
    }
}

/// Every way of reading a set: its directory, its data directory, its
/// archive, the archive's directory.
#[test]
fn sets_round_trip_from_directory_bin_dir_and_archive() {
    for set in [Cifar::Cifar10, Cifar::Cifar100] {
        let files = CifarRecords::synthetic_set(set, RECORDS);
        let extracted = tempdir();
        let bin = write_cifar_set(extracted.path(), set, SetForm::Directory, &files).unwrap();
        let packed = tempdir();
        let archive = write_cifar_set(packed.path(), set, SetForm::Archive, &files).unwrap();
        assert_eq!(bin, extracted.path().join(set.bin_dir()));
        assert_eq!(archive, packed.path().join(set.archive()));
        let label_kinds: &[Cifar100Labels] = match set {
            Cifar::Cifar10 => &[Cifar100Labels::Fine],
            Cifar::Cifar100 => &[Cifar100Labels::Fine, Cifar100Labels::Coarse],
        };
        for &labels in label_kinds {
            let want = expected(set, labels, &files);
            want.check("cifar").unwrap();
            assert_eq!(want.train_len(), set.train_files().len() * RECORDS);
            for path in [extracted.path(), &bin, packed.path(), &archive] {
                let got = load(set, path, labels).unwrap();
                got.check("cifar").unwrap();
                assert!(
                    got == want,
                    "{} from {} differs",
                    set.title(),
                    path.display()
                );
            }
        }
    }
}

#[test]
fn pixels_are_channels_last_and_scaled() {
    // Record 0: red plane 255, green and blue 0. Record 1: pixel (y, x) has
    // red y, green x, blue 7.
    let mut chw = vec![0u8; 2 * IMAGE_BYTES];
    chw[..1024].fill(255);
    let second = &mut chw[IMAGE_BYTES..];
    for y in 0..32 {
        for x in 0..32 {
            second[32 * y + x] = y as u8;
            second[1024 + 32 * y + x] = x as u8;
            second[2048 + 32 * y + x] = 7;
        }
    }
    let dir = tempdir();
    let bin = dir.path().join("cifar-10-batches-bin");
    std::fs::create_dir(&bin).unwrap();
    for name in Cifar::Cifar10.files() {
        write_cifar10_batch(&bin.join(name), &[3, 9], &chw).unwrap();
    }
    let set = load_cifar10(dir.path()).unwrap();
    assert_eq!(set.train_len(), 10);
    assert_eq!(set.test_labels, [3, 9]);
    assert_eq!(set.classes, 10);
    let red = set.test_image(0).unwrap();
    assert_eq!(red.len(), 3072);
    assert!(red.chunks(3).all(|p| p == [1.0, 0.0, 0.0]));
    let ramp = set.test_image(1).unwrap();
    for y in 0..32 {
        for x in 0..32 {
            let at = 3 * (32 * y + x);
            let want = [y as f32 / 255.0, x as f32 / 255.0, 7.0 / 255.0];
            assert_eq!(ramp[at..at + 3], want, "pixel ({y}, {x})");
        }
    }

    // CIFAR-100 keeps the fine or the coarse byte.
    let dir = tempdir();
    let bin = dir.path().join("cifar-100-binary");
    std::fs::create_dir(&bin).unwrap();
    for name in ["train.bin", "test.bin"] {
        write_cifar100_batch(&bin.join(name), &[19, 0], &[99, 42], &chw).unwrap();
    }
    let fine = load_cifar100(dir.path(), Cifar100Labels::Fine).unwrap();
    assert_eq!((fine.classes, &fine.train_labels[..]), (100, &[99, 42][..]));
    let coarse = load_cifar100(&bin, Cifar100Labels::Coarse).unwrap();
    assert_eq!(
        (coarse.classes, &coarse.test_labels[..]),
        (20, &[19, 0][..])
    );
    assert_eq!(coarse.test_images, set.test_images);
}

#[test]
fn extracted_directory_is_preferred_to_the_archive() {
    let dir = tempdir();
    let set = Cifar::Cifar10;
    let files = CifarRecords::synthetic_set(set, 3);
    write_cifar_set(dir.path(), set, SetForm::Directory, &files).unwrap();
    let other = CifarRecords::synthetic_set(set, 5);
    write_cifar_set(dir.path(), set, SetForm::Archive, &other).unwrap();
    assert_eq!(load_cifar10(dir.path()).unwrap().train_len(), 15);
    std::fs::remove_dir_all(dir.path().join(set.bin_dir())).unwrap();
    assert_eq!(load_cifar10(dir.path()).unwrap().train_len(), 25);
}

/// Archives whose members come in another order, with `./` in front, or
/// of different sizes (decoded apart and joined) read the same.
#[test]
fn archive_members_in_any_order_and_size() {
    let set = Cifar::Cifar10;
    let mut files = CifarRecords::synthetic_set(set, 4);
    files[2] = CifarRecords::synthetic(set, 7, 2);
    files[4] = CifarRecords::synthetic(set, 1, 4);
    let want = expected(set, Cifar100Labels::Fine, &files);
    let names: Vec<&str> = set.files().collect();
    for order in [[0, 2, 3, 5, 4, 1], [5, 4, 3, 2, 1, 0], [1, 0, 2, 3, 4, 5]] {
        let dir = tempdir();
        let path = dir.path().join("any-name.tgz");
        let bytes: Vec<Vec<u8>> = files.iter().map(|f| f.to_bytes(set).unwrap()).collect();
        let members: Vec<(String, &[u8])> = order
            .iter()
            .map(|&i| {
                (
                    format!("./cifar-10-batches-bin/{}", names[i]),
                    bytes[i].as_slice(),
                )
            })
            .collect();
        write_tar_gz(&path, &["./cifar-10-batches-bin"], &members).unwrap();
        assert!(load_cifar10(&path).unwrap() == want, "order {order:?}");
    }
}

/// The error of a load that must fail (without printing a loaded set).
fn error(loaded: Result<ImageSet>) -> DataError {
    match loaded {
        Ok(set) => panic!("loaded {} training images", set.train_len()),
        Err(e) => e,
    }
}

/// Loads `path` as `set` and checks that the error starts with `file` and
/// mentions every one of `needles`.
fn fails(set: Cifar, path: &Path, file: &Path, needles: &[&str]) -> DataError {
    let err = error(load(set, path, Cifar100Labels::Fine));
    let msg = err.to_string();
    assert!(
        msg.starts_with(&file.display().to_string()),
        "`{msg}` does not start with {}",
        file.display()
    );
    for needle in needles {
        assert!(msg.contains(needle), "`{msg}` does not mention `{needle}`");
    }
    assert!(!msg.contains('\n'), "`{msg}` is not one line");
    err
}

/// A valid set of 3 records per file, extracted, in a fresh directory.
fn extracted(set: Cifar) -> (tempfile::TempDir, PathBuf, Vec<CifarRecords>) {
    let dir = tempdir();
    let files = CifarRecords::synthetic_set(set, 3);
    let bin = write_cifar_set(dir.path(), set, SetForm::Directory, &files).unwrap();
    (dir, bin, files)
}

#[test]
fn bad_files_are_one_error_naming_the_file() {
    for set in [Cifar::Cifar10, Cifar::Cifar100] {
        let len = set.record_bytes();
        let (dir, bin, files) = extracted(set);
        let test = bin.join(set.test_file());
        let valid = files.last().unwrap().to_bytes(set).unwrap();

        std::fs::write(&test, &valid[..valid.len() - 5]).unwrap();
        let size = (valid.len() - 5).to_string();
        let err = fails(
            set,
            dir.path(),
            &test,
            &[&size, &format!("{len}-byte"), "2 whole records"],
        );
        assert_eq!(err.path(), Some(test.as_path()));

        std::fs::write(&test, []).unwrap();
        fails(set, dir.path(), &test, &["empty file"]);

        let mut bad = valid.clone();
        bad[2 * len] = 200;
        std::fs::write(&test, &bad).unwrap();
        let which = match set {
            Cifar::Cifar10 => "label 200",
            Cifar::Cifar100 => "coarse label 200",
        };
        fails(set, dir.path(), &test, &["record 2", which]);
        // A fine label of 100 is out of range even when the coarse one is read.
        if set == Cifar::Cifar100 {
            let mut bad = valid.clone();
            bad[len + 1] = 100;
            std::fs::write(&test, &bad).unwrap();
            let err = error(load_cifar100(dir.path(), Cifar100Labels::Coarse));
            assert!(
                err.to_string().contains("record 1: fine label 100"),
                "{err}"
            );
        }
        std::fs::write(&test, &valid).unwrap();

        let first = bin.join(set.train_files()[0]);
        std::fs::remove_file(&first).unwrap();
        fails(set, dir.path(), &bin, &[set.train_files()[0], "no `"]);
        std::fs::create_dir(&first).unwrap();
        fails(set, dir.path(), &first, &["not a file"]);
        drop(dir);
    }
}

/// An archive of `set` holding `members` (full names), written in `dir`.
fn archive_of(dir: &Path, set: Cifar, members: &[(String, Vec<u8>)]) -> PathBuf {
    let path = dir.join(set.archive());
    let members: Vec<(String, &[u8])> = members
        .iter()
        .map(|(n, b)| (n.clone(), b.as_slice()))
        .collect();
    write_tar_gz(&path, &[set.bin_dir()], &members).unwrap();
    path
}

/// The members of a valid archive of `set`, 3 records per file.
fn members(set: Cifar) -> Vec<(String, Vec<u8>)> {
    let files = CifarRecords::synthetic_set(set, 3);
    set.files()
        .zip(&files)
        .map(|(name, f)| {
            (
                format!("{}/{name}", set.bin_dir()),
                f.to_bytes(set).unwrap(),
            )
        })
        .collect()
}

#[test]
fn bad_archives_are_one_error_naming_archive_and_member() {
    for set in [Cifar::Cifar10, Cifar::Cifar100] {
        let dir = tempdir();
        let len = set.record_bytes();
        let good = members(set);
        let last = good.len() - 1;
        let test_member = good[last].0.clone();

        let mut m = good.clone();
        m[last].1.truncate(len * 2 + 1);
        let path = archive_of(dir.path(), set, &m);
        fails(
            set,
            &path,
            &path,
            &[
                &test_member,
                &(len * 2 + 1).to_string(),
                &format!("{len}-byte"),
            ],
        );

        let mut m = good.clone();
        m[last].1.clear();
        let path = archive_of(dir.path(), set, &m);
        fails(set, dir.path(), &path, &[&test_member, "empty file"]);

        let mut m = good.clone();
        m[0].1[len] = 255;
        let path = archive_of(dir.path(), set, &m);
        fails(set, &path, &path, &[&m[0].0, "record 1", "label 255"]);

        let mut m = good.clone();
        let gone = m.remove(0).0;
        let path = archive_of(dir.path(), set, &m);
        fails(set, &path, &path, &[&format!("no member `{gone}`")]);

        let mut m = good.clone();
        m.push(good[0].clone());
        let path = archive_of(dir.path(), set, &m);
        fails(set, &path, &path, &[&good[0].0, "twice"]);

        // Damaged compressed data: cut short, or a byte flipped.
        let path = archive_of(dir.path(), set, &good);
        let gz = std::fs::read(&path).unwrap();
        std::fs::write(&path, &gz[..gz.len() / 2]).unwrap();
        fails(set, &path, &path, &["damaged archive"]);
        let mut flipped = gz.clone();
        flipped[gz.len() / 2] ^= 0x55;
        std::fs::write(&path, &flipped).unwrap();
        fails(set, &path, &path, &["damaged archive"]);

        // A tar cut inside a member, compressed whole: the member's header
        // declares more records than follow.
        let mut tar = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut tar).unwrap();
        let first_data = 1024; // the directory's header, then the member's
        tar.truncate(first_data + len + 10);
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut enc, &tar).unwrap();
        std::fs::write(&path, enc.finish().unwrap()).unwrap();
        fails(set, &path, &path, &[&good[0].0, "ends inside record 1"]);

        std::fs::write(&path, b"PK\x03\x04 not gzip").unwrap();
        fails(set, &path, &path, &["not a .tar.gz archive"]);
        std::fs::write(&path, []).unwrap();
        fails(set, &path, &path, &["empty file"]);
    }
}

#[test]
fn python_version_is_named_with_the_archive_to_get() {
    for set in [Cifar::Cifar10, Cifar::Cifar100] {
        let [py_dir, py_archive] = set.python_names();
        let needles = [
            "python version",
            set.title(),
            set.url(),
            set.md5(),
            &format!("fedcluster data fetch {}", set.fetch_name()),
        ];

        // The extracted python directory, inside a data directory or given.
        let dir = tempdir();
        let py = dir.path().join(py_dir);
        std::fs::create_dir(&py).unwrap();
        for f in set.python_files() {
            std::fs::write(py.join(f), b"\x80\x02pickle").unwrap();
        }
        fails(set, dir.path(), &py, &needles);
        fails(set, &py, &py, &needles);

        // The python archive, found or given, and any archive of it.
        let dir = tempdir();
        let archive = dir.path().join(py_archive);
        let members = vec![(format!("{py_dir}/{}", set.python_files()[0]), &b"x"[..])];
        write_tar_gz(&archive, &[py_dir], &members).unwrap();
        fails(set, dir.path(), &archive, &needles);
        fails(set, &archive, &archive, &needles);
        let renamed = dir.path().join("download.tar.gz");
        std::fs::rename(&archive, &renamed).unwrap();
        fails(set, &renamed, &renamed, &needles);
    }
}

#[test]
fn neither_version_names_what_was_looked_for_where() {
    let dir = tempdir();
    std::fs::write(dir.path().join("notes.txt"), b"x").unwrap();
    for set in [Cifar::Cifar10, Cifar::Cifar100] {
        let [py_dir, py_archive] = set.python_names();
        fails(
            set,
            dir.path(),
            dir.path(),
            &[
                set.title(),
                set.bin_dir(),
                set.archive(),
                py_dir,
                py_archive,
                set.test_file(),
            ],
        );
    }
    let missing = dir.path().join("nowhere");
    let err = error(load_cifar10(&missing));
    assert!(matches!(err, DataError::Io { .. }));
    assert_eq!(err.path(), Some(missing.as_path()));
    // A CIFAR-10 set is not taken for CIFAR-100.
    let (dir, _, _) = extracted(Cifar::Cifar10);
    fails(Cifar::Cifar100, dir.path(), dir.path(), &["no CIFAR-100"]);
}

#[test]
fn writers_refuse_lists_that_do_not_fit() {
    let dir = tempdir();
    let path = dir.path().join("x.bin");
    let err = write_cifar10_batch(&path, &[1, 2], &[0; IMAGE_BYTES]).unwrap_err();
    assert_eq!(err.field(), "images_chw");
    let err = write_cifar100_batch(&path, &[1], &[1, 2], &[0; IMAGE_BYTES]).unwrap_err();
    assert_eq!(err.field(), "labels[1]");
    let files = CifarRecords::synthetic_set(Cifar::Cifar10, 1);
    let err =
        write_cifar_set(dir.path(), Cifar::Cifar100, SetForm::Directory, &files[..3]).unwrap_err();
    assert_eq!(err.field(), "files");
    // CIFAR-10 records lack the coarse labels CIFAR-100 needs.
    let err = files[0].to_bytes(Cifar::Cifar100).unwrap_err();
    assert!(err.field().starts_with("labels"));
}

/// Decodes members of `sizes` records into a guessed split in `order`, each
/// record's values and label its member and index; returns the split.
fn gather(sizes: &[usize], order: &[usize]) -> split::Decoded {
    let mut split = split::Split::guessed(sizes.len());
    for &k in order {
        let mut member = split.member(k, sizes[k]).unwrap();
        for i in 0..sizes[k] {
            let (images, labels) = member.chunk(1).unwrap();
            images.fill((1000 * k + i) as f32);
            labels[0] = (1000 * k + i) as u32;
        }
        split.complete(k).unwrap();
    }
    split.finish().unwrap()
}

/// Every order of `0..n`.
fn orders(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for rest in orders(n - 1) {
        for at in 0..=rest.len() {
            let mut o = rest.clone();
            o.insert(at, n - 1);
            out.push(o);
        }
    }
    out
}

#[test]
fn split_members_land_in_order_from_any_order() {
    for sizes in [
        &[3, 3, 3, 3, 3][..],
        &[3, 3, 5, 3, 1],
        &[2, 4, 4, 4, 4],
        &[2],
    ] {
        let want: Vec<u32> = (0..sizes.len())
            .flat_map(|k| (0..sizes[k]).map(move |i| (1000 * k + i) as u32))
            .collect();
        for order in orders(sizes.len()) {
            let got = gather(sizes, &order);
            assert_eq!(got.labels, want, "sizes {sizes:?}, order {order:?}");
            let images: Vec<u32> = got
                .images
                .chunks(IMAGE_BYTES)
                .map(|c| c[0] as u32)
                .collect();
            assert_eq!(images, want);
            assert!(
                got.images
                    .chunks(IMAGE_BYTES)
                    .all(|c| c.iter().all(|v| *v == c[0]))
            );
            if sizes.iter().all(|n| *n == sizes[0]) {
                // Decoded in place: the buffers reserved once, exactly.
                assert_eq!(got.images.capacity(), got.images.len(), "order {order:?}");
                assert_eq!(got.labels.capacity(), got.labels.len());
            }
        }
    }
}
