//! Bindings of contamination and duplicates: the `NgramIndex` class, `normalized_words`,
//! `word_counts`, `duplicate_keys` and the `DuplicateIndex` class (rust_tokenizer/src/ngram/).

use pyo3::prelude::*;

use rayon::prelude::*;

use super::errors::to_py_err;
use std::path::PathBuf;

use crate::error::IoContext;

use crate::ngram::duplicates::{row_keys, DuplicateIndex as CoreDuplicates};
use crate::ngram::files::{scan_file, scan_files, FileOutcome};
use crate::ngram::index::{Indexed, NgramIndex as CoreIndex, DEFAULT_MIN_WORDS, DEFAULT_N};
use crate::ngram::normalize;

/// A scan's answer for one text: `(set, item, start, end, windows)` of its overlap, if any.
type ScanHit = Option<(u32, u32, usize, usize, u32)>;

/// A hit row of a scanned file: `(row, field, set, item, start, end, windows, span)`.
type FileHit = (u64, u8, u32, u32, usize, usize, u32, String);
/// A scanned file for Python: `(rows, hits, repeated)`.
type FileResult = (u64, Vec<FileHit>, Vec<(u64, u32)>);

fn file_result(outcome: FileOutcome) -> FileResult {
    let hits = outcome
        .hits
        .into_iter()
        .map(|h| {
            let m = h.hit;
            let origin = m.origin;
            (
                h.row,
                h.field,
                origin.set,
                origin.item,
                m.start,
                m.end,
                m.windows,
                h.span,
            )
        })
        .collect();
    (outcome.rows, hits, outcome.duplicates)
}

/// A hashed word-n-gram index of evaluation items.
#[pyclass(module = "hrm_assets._core")]
pub(super) struct NgramIndex {
    pub(super) inner: CoreIndex,
}

#[pymethods]
impl NgramIndex {
    #[new]
    #[pyo3(signature = (n = DEFAULT_N, min_words = DEFAULT_MIN_WORDS))]
    fn new(py: Python<'_>, n: usize, min_words: usize) -> PyResult<Self> {
        let inner = CoreIndex::new(n, min_words).map_err(|err| to_py_err(py, err))?;
        Ok(Self { inner })
    }

    #[getter]
    fn n(&self) -> usize {
        self.inner.n()
    }

    #[getter]
    fn min_words(&self) -> usize {
        self.inner.min_words()
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// Index `texts` as items `first_item, first_item + 1, ...` of evaluation set `set`.
    /// Returns `(windows, whole, too_short)`: items indexed as n-word windows, indexed whole
    /// (shorter than n) and not indexed (fewer than `min_words` words).
    #[pyo3(signature = (set, texts, first_item = 0))]
    fn add(
        &mut self,
        py: Python<'_>,
        set: u32,
        texts: Vec<String>,
        first_item: u32,
    ) -> (u64, u64, u64) {
        let inner = &mut self.inner;
        py.detach(|| {
            let mut counts = (0, 0, 0);
            for (offset, text) in texts.iter().enumerate() {
                match inner.add(set, first_item + offset as u32, text) {
                    Indexed::Windows(_) => counts.0 += 1,
                    Indexed::Whole(_) => counts.1 += 1,
                    Indexed::TooShort(_) => counts.2 += 1,
                }
            }
            counts
        })
    }

    /// For each text, `None` or `(set, item, start, end, windows)`: the evaluation item of its
    /// first matching window, the character span covering every matching window, and how many
    /// windows match. Runs in parallel without the GIL.
    fn scan(&self, py: Python<'_>, texts: Vec<String>) -> Vec<ScanHit> {
        let inner = &self.inner;
        py.detach(|| {
            inner
                .scan_all(&texts)
                .into_iter()
                .map(|hit| {
                    hit.map(|hit| {
                        (
                            hit.origin.set,
                            hit.origin.item,
                            hit.start,
                            hit.end,
                            hit.windows,
                        )
                    })
                })
                .collect()
        })
    }

    /// Both passes over the cleaned file `path` (JSONL or Parquet) in one read, in parallel
    /// without the GIL: returns `(rows, hits, repeated)`. `hits` are the rows whose instruction
    /// (field 0) or else response (field 1) overlaps the index, as `(row, field, set, item,
    /// start, end, windows, span)` (`span`: the matched text, at most `max_span_chars`
    /// characters). With `duplicates`, the rows are recorded there as `source` and `repeated`
    /// holds `(row, first source)` of each row seen before. Rows count from 1.
    #[pyo3(signature = (path, duplicates = None, source = 0, batch_rows = 8192, max_span_chars = 300))]
    #[allow(clippy::type_complexity)]
    fn scan_file(
        &self,
        py: Python<'_>,
        path: PathBuf,
        duplicates: Option<PyRefMut<'_, DuplicateIndex>>,
        source: u32,
        batch_rows: usize,
        max_span_chars: usize,
    ) -> PyResult<FileResult> {
        let inner = &self.inner;
        let mut duplicates = duplicates;
        let dup = duplicates.as_deref_mut().map(|d| &mut d.inner);
        let outcome = py
            .detach(|| scan_file(inner, dup, source, &path, batch_rows, max_span_chars))
            .map_err(|err| to_py_err(py, err))?;
        Ok(file_result(outcome))
    }

    /// [`NgramIndex.scan_file`] of each of `paths` (the source of `paths[i]` being
    /// `sources[i]`), files in parallel; the rows are recorded in `duplicates` in the order of
    /// `paths`, as one file after the other would record them. The first file that fails, in
    /// that order, raises.
    #[pyo3(signature = (paths, sources, duplicates = None, batch_rows = 8192, max_span_chars = 300))]
    fn scan_files(
        &self,
        py: Python<'_>,
        paths: Vec<PathBuf>,
        sources: Vec<u32>,
        duplicates: Option<PyRefMut<'_, DuplicateIndex>>,
        batch_rows: usize,
        max_span_chars: usize,
    ) -> PyResult<Vec<FileResult>> {
        if paths.len() != sources.len() {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "{} paths but {} sources",
                paths.len(),
                sources.len()
            )));
        }
        let files: Vec<(PathBuf, u32)> = paths.into_iter().zip(sources).collect();
        let inner = &self.inner;
        let mut duplicates = duplicates;
        let dup = duplicates.as_deref_mut().map(|d| &mut d.inner);
        let outcomes = py
            .detach(|| scan_files(inner, dup, &files, batch_rows, max_span_chars))
            .map_err(|err| to_py_err(py, err))?;
        Ok(outcomes.into_iter().map(file_result).collect())
    }
}

/// The words of `text` after the normalization (lowercased runs of alphanumeric characters).
#[pyfunction]
fn normalized_words(text: &str) -> Vec<String> {
    normalize::normalized_words(text)
}

/// How many words each text has after the normalization (in parallel, without the GIL): what
/// decides how an evaluation item is indexed, without building the index.
#[pyfunction]
fn word_counts(py: Python<'_>, texts: Vec<String>) -> Vec<usize> {
    py.detach(|| {
        texts
            .par_iter()
            .with_min_len(64)
            .map(|text| {
                let mut words = 0;
                normalize::for_each_word(text, |_| words += 1);
                words
            })
            .collect()
    })
}

/// The exact-duplicate key (64 bits) of each row `(instructions[i], responses[i])`.
#[pyfunction]
fn duplicate_keys(
    py: Python<'_>,
    instructions: Vec<String>,
    responses: Vec<String>,
) -> PyResult<Vec<u64>> {
    if instructions.len() != responses.len() {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "{} instructions but {} responses",
            instructions.len(),
            responses.len()
        )));
    }
    Ok(py.detach(|| row_keys(&instructions, &responses)))
}

/// Duplicate keys seen so far and the source (a number) that first had each.
#[pyclass(module = "hrm_assets._core")]
struct DuplicateIndex {
    inner: CoreDuplicates,
}

#[pymethods]
impl DuplicateIndex {
    #[new]
    fn new() -> Self {
        Self {
            inner: CoreDuplicates::new(),
        }
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// Record `keys` of `source`; for each, the source that had it first (`source` itself for
    /// a repeat within it) or `None` for a new row.
    fn add(&mut self, py: Python<'_>, source: u32, keys: Vec<u64>) -> Vec<Option<u32>> {
        let inner = &mut self.inner;
        py.detach(|| inner.add(source, &keys))
    }

    /// Record the keys of a tokenized folder's duplicate-key sidecar (`duplicate_keys.u64`, a
    /// little-endian u64 a row) as rows of `source`; returns `(row, first source)` of each row
    /// that repeats an earlier one (rows from 1). `OSError` if it cannot be read, `ValueError`
    /// if its size is not a multiple of 8.
    fn add_keys_file(
        &mut self,
        py: Python<'_>,
        source: u32,
        path: PathBuf,
    ) -> PyResult<Vec<(u64, u32)>> {
        let inner = &mut self.inner;
        let bytes = py
            .detach(|| std::fs::read(&path).at(&path))
            .map_err(|err| to_py_err(py, err))?;
        if bytes.len() % 8 != 0 {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "{}: {} bytes, not a whole number of 8-byte keys",
                path.display(),
                bytes.len()
            )));
        }
        Ok(py.detach(|| {
            let keys: Vec<u64> = bytes
                .chunks_exact(8)
                .map(|key| u64::from_le_bytes(key.try_into().expect("8 bytes")))
                .collect();
            inner
                .add(source, &keys)
                .into_iter()
                .zip(1u64..)
                .filter_map(|(first, row)| first.map(|first| (row, first)))
                .collect()
        }))
    }
}

pub(super) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<NgramIndex>()?;
    module.add_class::<DuplicateIndex>()?;
    module.add_function(wrap_pyfunction!(normalized_words, module)?)?;
    module.add_function(wrap_pyfunction!(duplicate_keys, module)?)?;
    module.add_function(wrap_pyfunction!(word_counts, module)?)?;
    module.add("NGRAM_DEFAULT_N", DEFAULT_N)?;
    module.add("NGRAM_DEFAULT_MIN_WORDS", DEFAULT_MIN_WORDS)?;
    Ok(())
}
