//! The PyO3 layer: the Python module `hrm_assets._core` over the plain-Rust core, one binding
//! module per stage, as the HF `tokenizers` bindings are. A binding converts Python values to
//! the core's types and back, runs the core's work without the GIL (`py.detach`) and maps its
//! errors to Python exceptions ([`errors`]); the logic stays in the core.
//!
//! - [`tokenize`] binds the `Encoder` class and the file names of a tokenized folder;
//! - [`sample`] binds `philox_permutation`, `write_epoch_arrays`, `read_span_columns` and
//!   `concatenate_token_arrays`;
//! - [`npy`] binds `read_npy_header` and `scan_arrays` (the files of output folders, read once
//!   for their checks);
//! - [`ngram`] binds `NgramIndex`, `DuplicateIndex`, `normalized_words` and `duplicate_keys`
//!   (contamination and duplicates);
//! - [`gsm8k_answers`] binds `gsm8k_rows` (GSM8K's rule on a batch's Arrow buffers);
//! - [`jsonl`] binds `json_lines` and `JsonLines` (cleaned JSONL written from text columns);
//! - [`grouped_rows`] binds `spill_groups`, `memory_groups` and `gather_groups` (the
//!   cleaning engine's rows grouped by output file, stored and gathered back);
//! - [`text_lines`] binds `question_answer_lines` (a text block's stripped lines, paired).
//!
//! `hrm_assets/_core.pyi` states every name and signature for Python (checked against the
//! compiled module by `tests/project/test_extension_stub.py`).

use pyo3::prelude::*;

mod buffers;
mod errors;
mod grouped_rows;
mod gsm8k_answers;
mod jsonl;
mod ngram;
mod npy;
mod progress;
mod sample;
mod text_lines;
mod tokenize;

#[pymodule]
fn _core(module: &Bound<'_, PyModule>) -> PyResult<()> {
    tokenize::register(module)?;
    sample::register(module)?;
    npy::register(module)?;
    ngram::register(module)?;
    jsonl::register(module)?;
    gsm8k_answers::register(module)?;
    grouped_rows::register(module)?;
    text_lines::register(module)?;
    Ok(())
}
