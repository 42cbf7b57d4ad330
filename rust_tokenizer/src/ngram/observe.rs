//! Both passes inside tokenization's own read of a cleaned file (docs/CONTAMINATION.md, "Cost"):
//! each batch the encoder frames is also scanned against the evaluation sets' index and keyed
//! for duplicates, on the same rayon pool, and the outcome is written beside the arrays as a
//! sidecar the tokenized arrays do not depend on:
//!
//! - [`SCAN_FILE`] (`contamination.json`): the index it was scanned against (a label the caller
//!   chooses, naming the evaluation sets, their digests, `n` and `min_words`, or `null` when no
//!   index was given), the rows, the hit rows (numbered as the reader numbers them: a JSONL
//!   file's line numbers) and `row_lines`, `[line, position]` of each row whose line number
//!   first differs from its position by a new amount (after blank lines), so that a hit's
//!   position is its line minus the shift of the last such row before it;
//! - [`KEYS_FILE`] (`duplicate_keys.u64`): every row's duplicate key, little-endian, in row
//!   order.
//!
//! Neither file is listed in `manifest.json` nor is an array (`.npy`): the folder's arrays,
//! `metadata.json` and manifest are byte for byte those of a folder tokenized without them.
//! A label that no longer names the current evaluation sets makes the report rescan that file
//! (the keys stay valid): changing the evaluation sets never re-tokenizes anything.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use rayon::prelude::*;
use serde_json::{json, Value};

use super::duplicates::row_key;
use super::files::{scan_rows, RowHit};
use super::index::NgramIndex;
use crate::error::{IoContext, Result};
use crate::tokenize::read::Row;

/// The sidecar with the index label and the hit rows.
pub const SCAN_FILE: &str = "contamination.json";
/// The sidecar with every row's duplicate key.
pub const KEYS_FILE: &str = "duplicate_keys.u64";
/// The `format` field of [`SCAN_FILE`].
pub const SCAN_FORMAT: &str = "hrm-data-row-scan/1";

/// What to scan each tokenized file against: an index (or none: duplicate keys only) and the
/// label recorded with the outcome.
pub struct RowObserver<'a> {
    pub index: Option<&'a NgramIndex>,
    pub label: Value,
    pub max_span_chars: usize,
}

/// One file's rows observed so far.
#[derive(Debug, Default)]
pub struct FileObservation {
    pub rows: u64,
    pub hits: Vec<RowHit>,
    pub keys: Vec<u64>,
    /// `(line, position)` of each row after which line numbers and positions differ anew.
    pub row_lines: Vec<(u64, u64)>,
    shift: u64,
}

fn key_only(rows: &[Row]) -> Vec<u64> {
    rows.par_iter()
        .with_min_len(32)
        .map(|row| row_key(&row.instruction, &row.response))
        .collect()
}

impl RowObserver<'_> {
    /// Scan and key one batch (parallel on the current rayon pool), appending to `into`.
    pub fn observe(&self, rows: &[Row], into: &mut FileObservation) {
        for (offset, row) in rows.iter().enumerate() {
            let position = into.rows + offset as u64 + 1;
            let shift = row.number - position;
            if shift != into.shift {
                into.row_lines.push((row.number, position));
                into.shift = shift;
            }
        }
        into.rows += rows.len() as u64;
        match self.index {
            None => into.keys.extend(key_only(rows)),
            Some(index) => {
                let scanned = scan_rows(index, true, rows, self.max_span_chars);
                into.keys.reserve(scanned.len());
                for (hit, key) in scanned {
                    into.keys.push(key);
                    into.hits.extend(hit);
                }
            }
        }
    }

    /// Write the two sidecars into `dir`.
    pub fn write(&self, dir: &Path, observed: &FileObservation) -> Result<()> {
        let hits: Vec<Value> = observed
            .hits
            .iter()
            .map(|hit| {
                let found = &hit.hit;
                json!([
                    hit.row,
                    hit.field,
                    found.origin.set,
                    found.origin.item,
                    found.start,
                    found.end,
                    found.windows,
                    hit.span
                ])
            })
            .collect();
        let scan = json!({
            "format": SCAN_FORMAT,
            "index": if self.index.is_some() { self.label.clone() } else { Value::Null },
            "rows": observed.rows,
            "hits": hits,
            "row_lines": observed.row_lines,
        });
        let path = dir.join(SCAN_FILE);
        let bytes = serde_json::to_vec(&scan).expect("a JSON value always serialises");
        File::create(&path).at(&path)?.write_all(&bytes).at(&path)?;
        let path = dir.join(KEYS_FILE);
        let mut keys = BufWriter::new(File::create(&path).at(&path)?);
        for key in &observed.keys {
            keys.write_all(&key.to_le_bytes()).at(&path)?;
        }
        keys.flush().at(&path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(number: u64, instruction: &str, response: &str) -> Row {
        Row {
            number,
            condition: "direct".into(),
            instruction: instruction.into(),
            response: response.into(),
        }
    }

    #[test]
    fn keys_with_or_without_an_index_and_hits_with_one() {
        let question = "Janet's ducks lay 16 eggs per day and she eats three for breakfast";
        let rows = [row(1, "Tell me a joke.", "No."), row(2, question, "18")];
        let mut index = NgramIndex::new(13, 8).unwrap();
        index.add(0, 4, question);
        let with = RowObserver {
            index: Some(&index),
            label: json!({"sets": ["gsm8k_test"]}),
            max_span_chars: 10,
        };
        let without = RowObserver {
            index: None,
            label: Value::Null,
            max_span_chars: 10,
        };
        let (mut a, mut b) = (FileObservation::default(), FileObservation::default());
        with.observe(&rows, &mut a);
        without.observe(&rows, &mut b);
        let expected = [row_key("tell me a joke", "no"), row_key(question, "18")];
        assert_eq!(a.keys, expected);
        assert_eq!(b.keys, expected);
        assert_eq!((a.rows, b.rows), (2, 2));
        assert_eq!(a.hits.len(), 1);
        assert_eq!((a.hits[0].row, a.hits[0].hit.origin.item), (2, 4));
        assert!(b.hits.is_empty());

        let dir = tempfile::tempdir().unwrap();
        with.write(dir.path(), &a).unwrap();
        let keys = std::fs::read(dir.path().join(KEYS_FILE)).unwrap();
        assert_eq!(keys.len(), 16);
        assert_eq!(keys[8..], expected[1].to_le_bytes());
        let scan: Value =
            serde_json::from_slice(&std::fs::read(dir.path().join(SCAN_FILE)).unwrap()).unwrap();
        assert_eq!(scan["index"]["sets"][0], "gsm8k_test");
        assert_eq!(scan["rows"], 2);
        assert_eq!(scan["hits"][0][0], 2);
        assert_eq!(scan["hits"][0][7], "Janet's du");
        assert_eq!(scan["row_lines"], json!([]));
        without.write(dir.path(), &b).unwrap();
        let scan: Value =
            serde_json::from_slice(&std::fs::read(dir.path().join(SCAN_FILE)).unwrap()).unwrap();
        assert!(scan["index"].is_null());
    }

    #[test]
    fn rows_after_blank_lines_are_placed_by_position() {
        // Lines 1, 4, 5 and 9 hold rows (blank lines 2-3 and 6-8), read in two batches.
        let rows = [
            row(1, "a", "b"),
            row(4, "c", "d"),
            row(5, "e", "f"),
            row(9, "g", "h"),
        ];
        let without = RowObserver {
            index: None,
            label: Value::Null,
            max_span_chars: 10,
        };
        let mut observed = FileObservation::default();
        without.observe(&rows[..2], &mut observed);
        without.observe(&rows[2..], &mut observed);
        assert_eq!(observed.row_lines, [(4, 2), (9, 4)]);
    }
}
