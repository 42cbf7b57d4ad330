//! hrm-data's tokenization core: cleaned JSONL/Parquet rows to data_io's tokenized folders.
//!
//! Plain Rust modules (tested with `cargo test`) do the work; `python` is the thin PyO3 layer
//! that maturin builds into `hrm_assets._core`.

pub mod concat;
pub mod durable;
pub mod encode;
pub mod epochs;
pub mod error;
mod fast;
pub mod framing;
pub mod npy;
pub mod output;
pub mod philox;
pub mod reader;
pub mod spans;

#[cfg(feature = "pyo3")]
mod python;

pub use encode::{
    thread_pool, EncodeStats, Encoder, Engine, EngineChoice, TokenArrays, TokenSink,
    DEFAULT_BATCH_ROWS,
};
pub use error::{Error, Result};
pub use framing::{FramedRow, Framing, FramingSpec};
pub use output::{
    tokenize_files, tokenize_to_folder, FileJob, ARRAY_FILES, METADATA_FILE, OWNER_MARKER,
};

/// Bumped whenever the bytes written for the same input, tokenizer and framing could change, so
/// that data versions (and the incremental skip) notice.
pub const FORMAT_VERSION: &str = "2";
