//! Tokenization: a cleaned JSONL/Parquet file to one of data_io's tokenized folders.
//!
//! [`read`] yields rows in batches, [`encode`] turns their texts into ids (with the fast engine
//! where it applies), [`frame`] adds data_io's framing tokens, [`write`] streams the arrays into
//! a staged folder and renames it into place, and [`durable`] syncs a batch of folders at once.
//! [`remote`] fetches cleaned objects and publishes folders on object storage (`s3://`).

pub mod durable;
pub mod encode;
pub mod frame;
pub mod read;
pub mod remote;
pub mod write;

/// Bumped whenever the bytes written for the same input, tokenizer and framing could change, so
/// that data versions (and the incremental skip) notice.
pub const FORMAT_VERSION: &str = "2";
