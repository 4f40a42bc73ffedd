//! The central directory an `.npz` (zip) archive declares, checked against
//! the file's size before the zip crate reads it: `ZipArchive::new` reserves
//! room for as many entries as the end-of-central-directory record (or its
//! zip64 version) declares, so a crafted archive of a few hundred bytes
//! could ask for terabytes. Every entry takes at least 46 bytes of the
//! central directory, and the directory lies inside the file.

use std::io::{Read, Seek, SeekFrom};

/// Bytes of the smallest central-directory entry.
const MIN_ENTRY_BYTES: u64 = 46;
/// The end-of-central-directory record: 22 bytes and a comment of at most
/// 65,535.
const EOCD_BYTES: u64 = 22;
const EOCD_SEARCH: u64 = EOCD_BYTES + 0xFFFF;
const EOCD_SIGNATURE: [u8; 4] = [0x50, 0x4b, 0x05, 0x06];
const ZIP64_LOCATOR_SIGNATURE: [u8; 4] = [0x50, 0x4b, 0x06, 0x07];
const ZIP64_EOCD_SIGNATURE: [u8; 4] = [0x50, 0x4b, 0x06, 0x06];

/// What an archive's end records declare of its central directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Directory {
    entries: u64,
    size: u64,
    offset: u64,
}

/// Fails, saying why, when the archive `reader` (of `len` bytes) declares a
/// central directory that does not fit in it; leaves the reader anywhere.
pub fn check<R: Read + Seek>(reader: &mut R, len: u64) -> Result<(), String> {
    let start = len.saturating_sub(EOCD_SEARCH);
    let mut tail = Vec::new();
    reader
        .seek(SeekFrom::Start(start))
        .map_err(|e| e.to_string())?;
    reader
        .take(EOCD_SEARCH)
        .read_to_end(&mut tail)
        .map_err(|e| e.to_string())?;
    let Some(at) = (0..tail.len().saturating_sub(EOCD_BYTES as usize - 1))
        .rev()
        .find(|&i| tail[i..i + 4] == EOCD_SIGNATURE)
    else {
        return Err("not a zip archive: no end-of-central-directory record".into());
    };
    let eocd = &tail[at..];
    let mut directory = Directory {
        entries: u16le(eocd, 10).into(),
        size: u32le(eocd, 12).into(),
        offset: u32le(eocd, 16).into(),
    };
    let zip64 = directory.entries == 0xFFFF
        || directory.size == 0xFFFF_FFFF
        || directory.offset == 0xFFFF_FFFF;
    if zip64 && at >= 20 && tail[at - 20..at - 16] == ZIP64_LOCATOR_SIGNATURE {
        let record = u64le(&tail[at - 20..], 8);
        if record > len.saturating_sub(56) {
            return Err(format!(
                "its zip64 end record at {record} lies past its {len} bytes"
            ));
        }
        let mut bytes = [0u8; 56];
        reader
            .seek(SeekFrom::Start(record))
            .map_err(|e| e.to_string())?;
        reader.read_exact(&mut bytes).map_err(|e| e.to_string())?;
        if bytes[..4] != ZIP64_EOCD_SIGNATURE {
            return Err("its zip64 end record is not where its locator says".into());
        }
        directory = Directory {
            entries: u64le(&bytes, 32),
            size: u64le(&bytes, 40),
            offset: u64le(&bytes, 48),
        };
    }
    fits(directory, len)
}

fn fits(d: Directory, len: u64) -> Result<(), String> {
    let end = d.offset.checked_add(d.size);
    if end.is_none_or(|end| end > len) {
        return Err(format!(
            "its central directory ({} bytes at {}) lies past its {len} bytes",
            d.size, d.offset
        ));
    }
    if d.entries.saturating_mul(MIN_ENTRY_BYTES) > d.size {
        return Err(format!(
            "it declares {} entries, more than its central directory of {} bytes holds",
            d.entries, d.size
        ));
    }
    Ok(())
}

fn u16le(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32le(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or_default())
}

fn u64le(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;

    /// A zip64 end record declaring `entries` entries, its locator and a
    /// classic end record pointing to it, after `pad` bytes.
    fn zip64(pad: usize, entries: u64, size: u64, offset: u64) -> Vec<u8> {
        let mut b = vec![0u8; pad];
        let record = b.len() as u64;
        b.extend(ZIP64_EOCD_SIGNATURE);
        b.extend(44u64.to_le_bytes());
        b.extend([45, 0, 45, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        b.extend(entries.to_le_bytes());
        b.extend(entries.to_le_bytes());
        b.extend(size.to_le_bytes());
        b.extend(offset.to_le_bytes());
        b.extend(ZIP64_LOCATOR_SIGNATURE);
        b.extend(0u32.to_le_bytes());
        b.extend(record.to_le_bytes());
        b.extend(1u32.to_le_bytes());
        b.extend(EOCD_SIGNATURE);
        b.extend([0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]);
        b.extend([0xFF; 8]);
        b.extend([0, 0]);
        b
    }

    #[test]
    fn a_zip64_directory_declaring_more_entries_than_the_file_holds_is_refused() {
        let bytes = zip64(0, 1 << 40, 0, 0);
        let e = check(&mut Cursor::new(&bytes), bytes.len() as u64).unwrap_err();
        assert!(e.contains("1099511627776 entries"), "{e}");
        let far = zip64(0, 1, 46, 1 << 50);
        let e = check(&mut Cursor::new(&far), far.len() as u64).unwrap_err();
        assert!(e.contains("lies past"), "{e}");
    }

    #[test]
    fn an_archive_the_zip_crate_writes_passes() {
        let mut bytes = Cursor::new(Vec::new());
        let mut zip = zip::ZipWriter::new(&mut bytes);
        zip.start_file("x.npy", zip::write::SimpleFileOptions::default())
            .unwrap();
        std::io::Write::write_all(&mut zip, b"values").unwrap();
        zip.finish().unwrap();
        let bytes = bytes.into_inner();
        assert_eq!(check(&mut Cursor::new(&bytes), bytes.len() as u64), Ok(()));
        let e = check(&mut Cursor::new(&bytes[..10]), 10).unwrap_err();
        assert!(e.contains("no end-of-central-directory"), "{e}");
    }

    #[test]
    fn a_crafted_npz_file_is_refused_by_name_before_the_zip_crate_reads_it() {
        let dir = std::env::temp_dir().join(format!("fedcluster-zip64-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("client_0.npz");
        std::fs::write(&path, zip64(64, u64::MAX / 64, 0, 0)).unwrap();
        let e = crate::files::arrays::read_arrays(&path, ["x", "y"], 1000)
            .unwrap_err()
            .to_string();
        assert!(e.contains("client_0.npz") && e.contains("entries"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
