//! Contamination and duplicates (docs/CONTAMINATION.md): training rows against evaluation sets.
//!
//! - [`normalize`]: the words a text is compared by (lowercased alphanumeric runs), hashed;
//! - [`index`]: the hashed word-n-gram index of the evaluation sets and the parallel scan;
//! - [`files`]: both passes over a cleaned file in one read (the tokenizer's row reader);
//! - [`observe`]: both passes inside tokenization's read, written as a sidecar of the folder;
//! - [`duplicates`]: exact-duplicate keys of (instruction, response) and the first source of
//!   each.

pub mod duplicates;
pub mod files;
pub mod index;
pub mod normalize;
pub mod observe;
#[cfg(test)]
mod timing;
