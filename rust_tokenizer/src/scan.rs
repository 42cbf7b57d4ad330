//! One read of each file of an output folder for its checks: the size and SHA-256 its
//! `manifest.json` entry is compared with and, when it is a plain 1-D integer `.npy` (the
//! headers [`crate::npy`] parses), the element type, length and largest value the array checks
//! need. Python's `hrm_assets.common.manifest.scan_files` calls [`scan_files`] for the
//! `manifest_valid` and `arrays_consistent` checks of many folders at once; the checks' rules
//! stay in Python.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::error::Result;
use crate::npy::{parse_plain_header, PlainHeader};
use crate::sample::concat::max_value;
use crate::tokenize::write::file_digest_with;

/// What one read of a file found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileScan {
    pub size: u64,
    /// Lowercase hex SHA-256 of the file's bytes.
    pub sha256: String,
    /// `None` unless the file is a plain 1-D integer `.npy` holding all the data its header
    /// announces (bytes past it are allowed, as numpy allows them).
    pub array: Option<ArrayFigures>,
}

/// The figures of a plain 1-D integer `.npy`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArrayFigures {
    /// The element type as the header spells it (`<u4`), for numpy's `dtype()`.
    pub descr: String,
    pub len: u64,
    /// The largest element (`None` for an empty array).
    pub max: Option<i128>,
}

/// Magic, version, a header length field of `u16::MAX` and that many bytes: no version 1.0
/// header is longer, so a head this long that does not parse is no plain header.
const LONGEST_HEADER: usize = 10 + u16::MAX as usize;

/// Follows a file's bytes as they are read: its header first, then the data's largest value.
#[derive(Default)]
struct ArrayReader {
    /// The first bytes, kept until the header parses or cannot.
    head: Vec<u8>,
    state: ReaderState,
    /// Bytes of the data region seen so far.
    data_seen: u64,
    /// The first bytes of an element that a chunk cut.
    carry: Vec<u8>,
    max: Option<i128>,
}

#[derive(Default)]
enum ReaderState {
    #[default]
    Head,
    /// A plain header; the data is `len * element.size` bytes from its offset.
    Data { header: PlainHeader, data_len: u64 },
    /// Not a plain array.
    Other,
}

/// The state after `header`: its data follows (or, for a length no file can hold, nothing
/// will be read as an array).
fn data_state(header: PlainHeader) -> ReaderState {
    match header.len.checked_mul(header.element.size as u64) {
        Some(data_len) => ReaderState::Data { header, data_len },
        None => ReaderState::Other,
    }
}

impl ArrayReader {
    fn feed(&mut self, chunk: &[u8]) {
        let mut rest = chunk;
        if let ReaderState::Head = self.state {
            // Usually the first chunk holds the whole header: no copy of it then.
            if self.head.is_empty() {
                if let Some(header) = parse_plain_header(chunk) {
                    self.state = data_state(header);
                    self.data(&chunk[header.data_offset..]);
                    return;
                }
            }
            let take = rest.len().min(LONGEST_HEADER - self.head.len());
            self.head.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            let Some(header) = parse_plain_header(&self.head) else {
                if self.head.len() == LONGEST_HEADER {
                    self.state = ReaderState::Other;
                }
                return;
            };
            self.state = data_state(header);
            let head = std::mem::take(&mut self.head);
            self.data(&head[header.data_offset..]);
        }
        self.data(rest);
    }

    /// Take the data bytes of `bytes`, which follow those already seen.
    fn data(&mut self, bytes: &[u8]) {
        let ReaderState::Data { header, data_len } = self.state else {
            return;
        };
        let wanted = usize::try_from(data_len - self.data_seen).unwrap_or(usize::MAX);
        let mut bytes = &bytes[..bytes.len().min(wanted)];
        self.data_seen += bytes.len() as u64;
        let size = header.element.size;
        if !self.carry.is_empty() {
            let missing = (size - self.carry.len()).min(bytes.len());
            self.carry.extend_from_slice(&bytes[..missing]);
            bytes = &bytes[missing..];
            if self.carry.len() < size {
                return;
            }
            self.max = self.max.max(max_value(&self.carry, header.element));
            self.carry.clear();
        }
        let whole = bytes.len() - bytes.len() % size;
        self.max = self.max.max(max_value(&bytes[..whole], header.element));
        self.carry.extend_from_slice(&bytes[whole..]);
    }

    fn finish(self) -> Option<ArrayFigures> {
        match self.state {
            ReaderState::Data { header, data_len } if self.data_seen == data_len => {
                Some(ArrayFigures {
                    descr: header.descr().to_string(),
                    len: header.len,
                    max: self.max,
                })
            }
            _ => None,
        }
    }
}

/// Read the file at `path` once: its size, SHA-256 and, for a plain integer `.npy`, its
/// figures. An error (naming the path) if it cannot be read.
pub fn scan_file(path: &Path) -> Result<FileScan> {
    let mut reader = ArrayReader::default();
    let (size, sha256) = file_digest_with(path, &mut |chunk| reader.feed(chunk))?;
    Ok(FileScan {
        size,
        sha256,
        array: reader.finish(),
    })
}

/// [`scan_file`] of every path, in parallel on the current rayon pool; each result in the
/// path's slot, so one unreadable file does not hide the others.
pub fn scan_files(paths: &[PathBuf]) -> Vec<Result<FileScan>> {
    paths.par_iter().map(|path| scan_file(path)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::npy::{header, write_npy, HeaderStyle};
    use crate::tokenize::write::file_digest;

    #[test]
    fn size_and_digest_of_known_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("abc.txt");
        std::fs::write(&path, b"abc").unwrap();
        let scan = scan_file(&path).unwrap();
        assert_eq!(scan.size, 3);
        // SHA-256("abc"), FIPS 180-2's first example.
        assert_eq!(
            scan.sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(scan.array, None, "not an array");
    }

    #[test]
    fn an_array_gives_its_type_length_and_largest_value() {
        let dir = tempfile::tempdir().unwrap();
        let tokens = dir.path().join("tokens.npy");
        write_npy::<u32>(&tokens, &[5, 34_691, 0, 7]).unwrap();
        let scan = scan_file(&tokens).unwrap();
        assert_eq!(
            (scan.size, scan.sha256.clone()),
            file_digest(&tokens).unwrap()
        );
        let figures = scan.array.unwrap();
        assert_eq!(
            (figures.descr.as_str(), figures.len, figures.max),
            ("<u4", 4, Some(34_691))
        );
        // numpy.save's header, a signed big-endian type.
        let signed = dir.path().join("signed.npy");
        let mut bytes = header(HeaderStyle::Numpy, ">i2", 3).to_vec();
        for value in [-5i16, -2, -9] {
            bytes.extend(value.to_be_bytes());
        }
        std::fs::write(&signed, bytes).unwrap();
        let figures = scan_file(&signed).unwrap().array.unwrap();
        assert_eq!((figures.descr.as_str(), figures.max), (">i2", Some(-2)));
    }

    #[test]
    fn an_empty_array_has_no_largest_value() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("inst_len.npy");
        write_npy::<u64>(&path, &[]).unwrap();
        let figures = scan_file(&path).unwrap().array.unwrap();
        assert_eq!(
            (figures.descr.as_str(), figures.len, figures.max),
            ("<u8", 0, None)
        );
    }

    #[test]
    fn a_truncated_or_unusual_array_has_no_figures() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.npy");
        write_npy::<u64>(&path, &[1, 2, 3]).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        let scan = scan_file(&path).unwrap();
        assert_eq!((scan.size, scan.array), (bytes.len() as u64 - 1, None));
        let floats = String::from_utf8_lossy(&bytes).replace("<u8", "<f8");
        std::fs::write(&path, floats.as_bytes()).unwrap();
        assert_eq!(scan_file(&path).unwrap().array, None);
        // Bytes past the data are allowed, as numpy allows them.
        let mut longer = bytes.clone();
        longer.push(0xff);
        std::fs::write(&path, longer).unwrap();
        assert_eq!(scan_file(&path).unwrap().array.unwrap().max, Some(3));
    }

    #[test]
    fn chunks_cutting_the_header_and_elements_give_the_same_figures() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.npy");
        let values: Vec<u64> = (0..50).map(|i| (i * 7919) % 1000).collect();
        write_npy::<u64>(&path, &values).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        for step in [1, 3, 7, 64, 127, 1000] {
            let mut reader = ArrayReader::default();
            for chunk in bytes.chunks(step) {
                reader.feed(chunk);
            }
            let figures = reader.finish().unwrap();
            assert_eq!((figures.len, figures.max), (50, Some(975)), "step {step}");
        }
    }

    #[test]
    fn a_missing_file_is_an_error_in_its_slot_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let present = dir.path().join("a.npy");
        write_npy::<u32>(&present, &[1]).unwrap();
        let missing = dir.path().join("missing.npy");
        let results = crate::tokenize::encode::thread_pool(Some(2))
            .unwrap()
            .install(|| scan_files(&[present.clone(), missing.clone(), present]));
        assert_eq!(results.len(), 3);
        assert!(results[0].is_ok() && results[2].is_ok());
        let error = results[1].as_ref().unwrap_err().to_string();
        assert!(error.starts_with(&missing.display().to_string()), "{error}");
    }
}
