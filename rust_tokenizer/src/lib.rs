//! hrm-data's Rust core, which maturin builds into the Python module `hrm_assets._core`. It is
//! grouped as the pipeline is:
//!
//! - [`tokenize`]: cleaned JSONL/Parquet rows to data_io's tokenized folders (read, encode,
//!   frame, write, durable, remote);
//! - [`storage`]: local paths and `s3://` objects (Apache Arrow's `object_store`), the IO runtime;
//! - [`sample`]: the sampler's Philox draw, its `epoch_<n>/` arrays, span table and token copy;
//! - [`npy`]: the `.npy` headers, element types and writers both stages use;
//! - [`ngram`]: contamination with evaluation sets (hashed word n-grams) and exact duplicates;
//! - [`gsm8k_answers`]: GSM8K's rule (the final answer after `#### `, both texts stripped) on
//!   the Arrow buffers of a batch's text columns;
//! - [`jsonl`]: cleaned rows as data_io's JSON lines (orjson's bytes), built from text columns;
//! - [`text_lines`]: a text file's lines as Python's text mode and `str.strip()` give them,
//!   paired as question and answer into text columns (dmmath);
//! - [`grouped_rows`]: the cleaning engine's rows grouped by output file, written to a spill
//!   file or memory straight from a batch's text columns and gathered back joined;
//! - [`scan`]: one read of each file of an output folder for its checks (size, SHA-256 and a
//!   plain array's length and largest value);
//! - [`error`]: the one error type.
//!
//! These are plain Rust, tested with `cargo test`. The PyO3 layer (`python`, compiled only with
//! the `pyo3` feature) has one binding module per stage that converts types and delegates here.

pub mod error;
pub mod grouped_rows;
pub mod gsm8k_answers;
pub mod jsonl;
pub mod ngram;
pub mod npy;
pub mod sample;
pub mod scan;
pub mod storage;
pub mod text_lines;
pub mod tokenize;

#[cfg(feature = "pyo3")]
mod python;

pub use error::{Error, Result};
