//! Both passes over a cleaned file in one read: every row's instruction and response scanned
//! against the index, and its duplicate key recorded, a batch at a time in parallel. The rows
//! are read by the tokenizer's reader ([`crate::tokenize::read::RowReader`]: JSONL or Parquet,
//! errors naming the file, row and field).

use std::path::Path;

use rayon::prelude::*;

use super::duplicates::{DuplicateIndex, RowKey};
use super::index::{Match, NgramIndex, Scratch};
use crate::tokenize::read::{Row, RowReader};
use crate::Result;

/// A row whose instruction (`field` 0) or, failing that, response (`field` 1) overlaps the
/// index; `span` is the text of the match's span, cut to `max_span_chars` characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowHit {
    pub row: u64,
    pub field: u8,
    pub hit: Match,
    pub span: String,
}

/// One file's outcome: its rows, the rows hit, and the rows repeating an earlier row (with the
/// source that had it first).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FileOutcome {
    pub rows: u64,
    pub hits: Vec<RowHit>,
    pub duplicates: Vec<(u64, u32)>,
}

fn span_text(text: &str, hit: &Match, max_chars: usize) -> String {
    text.chars()
        .skip(hit.start)
        .take((hit.end - hit.start).min(max_chars))
        .collect()
}

/// A file's outcome before its duplicate keys are recorded: `(row, key)` of every row when
/// keyed.
type Scanned = (FileOutcome, Vec<(u64, u64)>);

/// Record `keys` of `source` in `duplicates` (in row order), filling `outcome.duplicates`.
fn record_keys(
    outcome: &mut FileOutcome,
    keys: &[(u64, u64)],
    duplicates: &mut DuplicateIndex,
    source: u32,
) {
    let values: Vec<u64> = keys.iter().map(|(_, key)| *key).collect();
    for ((row, _), first) in keys.iter().zip(duplicates.add(source, &values)) {
        if let Some(first) = first {
            outcome.duplicates.push((*row, first));
        }
    }
}

/// Scan `path` against `index`; with `duplicates`, record its rows there as `source`.
pub fn scan_file(
    index: &NgramIndex,
    duplicates: Option<&mut DuplicateIndex>,
    source: u32,
    path: &Path,
    batch_rows: usize,
    max_span_chars: usize,
) -> Result<FileOutcome> {
    let keyed = duplicates.is_some();
    let (mut outcome, keys) = read_and_scan(index, keyed, path, batch_rows, max_span_chars)?;
    if let Some(duplicates) = duplicates {
        record_keys(&mut outcome, &keys, duplicates, source);
    }
    Ok(outcome)
}

/// [`scan_file`] of each `(path, source)`, files in parallel (and the rows of each); the
/// duplicate keys are recorded afterwards in the order of `files`, so the first copy of a row
/// is the same as with one file after the other. The first file that fails (in that order)
/// is the error.
pub fn scan_files(
    index: &NgramIndex,
    mut duplicates: Option<&mut DuplicateIndex>,
    files: &[(std::path::PathBuf, u32)],
    batch_rows: usize,
    max_span_chars: usize,
) -> Result<Vec<FileOutcome>> {
    let keyed = duplicates.is_some();
    let scanned: Vec<Result<Scanned>> = files
        .par_iter()
        .with_max_len(1)
        .map(|(path, _)| read_and_scan(index, keyed, path, batch_rows, max_span_chars))
        .collect();
    let mut outcomes = Vec::with_capacity(files.len());
    for (result, (_, source)) in scanned.into_iter().zip(files) {
        let (mut outcome, keys) = result?;
        if let Some(duplicates) = duplicates.as_deref_mut() {
            record_keys(&mut outcome, &keys, duplicates, *source);
        }
        outcomes.push(outcome);
    }
    Ok(outcomes)
}

/// One row's hit (its instruction looked at before its response) and, when `keyed`, its
/// duplicate key (0 otherwise), from one normalization of each field.
pub fn scan_row(
    index: &NgramIndex,
    keyed: bool,
    row: &Row,
    scratch: &mut Scratch,
    max_span_chars: usize,
) -> (Option<RowHit>, u64) {
    let mut key = RowKey::START;
    let mut hit = index
        .scan_keyed(&row.instruction, scratch, &mut key)
        .map(|hit| (0u8, hit, &row.instruction));
    let mut key = key.separated();
    let response = index.scan_keyed(&row.response, scratch, &mut key);
    if hit.is_none() {
        hit = response.map(|hit| (1u8, hit, &row.response));
    }
    let hit = hit.map(|(field, hit, text)| RowHit {
        row: row.number,
        field,
        span: span_text(text, &hit, max_span_chars),
        hit,
    });
    (hit, if keyed { key.finish() } else { 0 })
}

/// [`scan_row`] of every row of a batch, in parallel on the current rayon pool.
pub fn scan_rows(
    index: &NgramIndex,
    keyed: bool,
    rows: &[Row],
    max_span_chars: usize,
) -> Vec<(Option<RowHit>, u64)> {
    rows.par_iter()
        .with_min_len(32)
        .map_init(Scratch::default, |scratch, row| {
            scan_row(index, keyed, row, scratch, max_span_chars)
        })
        .collect()
}

fn read_and_scan(
    index: &NgramIndex,
    keyed: bool,
    path: &Path,
    batch_rows: usize,
    max_span_chars: usize,
) -> Result<Scanned> {
    let mut reader = RowReader::open(path, batch_rows)?;
    let mut outcome = FileOutcome::default();
    let mut keys = Vec::new();
    // The next batch is read while this one is scanned (rayon::join), so reading, which is
    // sequential, overlaps the parallel scan.
    let mut current = reader.next_batch()?;
    while let Some(batch) = current {
        let scan_batch = || scan_rows(index, keyed, &batch, max_span_chars);
        let (scanned, next) = rayon::join(scan_batch, || reader.next_batch());
        current = next?;
        outcome.rows += batch.len() as u64;
        if keyed {
            keys.extend(
                batch
                    .iter()
                    .zip(&scanned)
                    .map(|(row, (_, key))| (row.number, *key)),
            );
        }
        outcome
            .hits
            .extend(scanned.into_iter().filter_map(|(hit, _)| hit));
    }
    Ok((outcome, keys))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_read_gives_hits_and_duplicates() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rows.jsonl");
        let question = "Janet's ducks lay 16 eggs per day and she eats three for breakfast";
        let rows = [
            ("Tell me a joke.", "No."),
            (question, "18"),
            ("tell me a JOKE", "no"),
            (
                "Q",
                "As asked: janet s ducks lay 16 eggs per day and she eats three for it",
            ),
        ];
        let text: String = rows
            .iter()
            .map(|(i, r)| {
                format!(
                    "{{\"condition\":\"direct\",\"instruction\":{},\"response\":{}}}\n",
                    serde_json::to_string(i).unwrap(),
                    serde_json::to_string(r).unwrap()
                )
            })
            .collect();
        std::fs::write(&path, text).unwrap();
        let mut index = NgramIndex::new(13, 8).unwrap();
        index.add(2, 5, question);
        let mut duplicates = DuplicateIndex::new();
        duplicates.add(
            9,
            &[super::super::duplicates::row_key("Tell me a joke", "No")],
        );
        let outcome = scan_file(&index, Some(&mut duplicates), 1, &path, 2, 20).unwrap();
        assert_eq!(outcome.rows, 4);
        assert_eq!(outcome.duplicates, [(1, 9), (3, 9)]);
        let found: Vec<(u64, u8, u32)> = outcome
            .hits
            .iter()
            .map(|hit| (hit.row, hit.field, hit.hit.origin.item))
            .collect();
        assert_eq!(found, [(2, 0, 5), (4, 1, 5)]);
        assert_eq!(outcome.hits[0].span, "Janet's ducks lay 16");
        // The same file twice, in parallel: the second copy repeats every row of the first.
        let mut again = DuplicateIndex::new();
        let both = [(path.clone(), 0), (path.clone(), 1)];
        let outcomes = scan_files(&index, Some(&mut again), &both, 2, 20).unwrap();
        assert_eq!(outcomes[0].duplicates, [(3, 0)]);
        assert_eq!(outcomes[1].duplicates, [(1, 0), (2, 0), (3, 0), (4, 0)]);
        assert_eq!(outcomes[1].hits, outcome.hits);
        let missing = dir.path().join("bad.jsonl");
        std::fs::write(
            &missing,
            "{\"condition\":\"direct\",\"instruction\":\"q\"}\n",
        )
        .unwrap();
        let error = scan_file(&index, None, 0, &missing, 8, 20).unwrap_err();
        assert!(error.to_string().contains("bad.jsonl"), "{error}");
        let files = [(path.clone(), 0), (missing.clone(), 0)];
        let error = scan_files(&index, None, &files, 8, 20).unwrap_err();
        assert!(error.to_string().contains("bad.jsonl"), "{error}");
    }
}
