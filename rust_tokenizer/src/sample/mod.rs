//! Sampling: the parts of data_io's sampler that run here, on tokenized folders.
//!
//! [`spans`] reads every task's span arrays into one checked table, [`philox`] is numpy's
//! `Generator(Philox)` (state in, state out), [`epoch_draw`] draws the epochs with it and writes
//! their `epoch_<n>/` arrays, [`concat`] copies every task's tokens into one `tokens.npy`, and
//! [`gather`] copies rows' byte ranges back to back (for the exports).

pub mod concat;
pub mod epoch_draw;
pub mod gather;
pub mod philox;
pub mod spans;

/// SHA-256 of the sources that decide a sampled folder's epoch bytes (`SAMPLE_SOURCES` in
/// `build_support/source_digest.rs`), computed by `build.rs` when the library is compiled: part
/// of the sampled asset's code version (`hrm_assets/sampling/datacard/code_version.py`).
pub const SOURCE_SHA256: &str = env!("HRM_SAMPLE_SOURCE_SHA256");

#[cfg(test)]
#[path = "../../build_support/source_digest.rs"]
mod source_digest;

#[cfg(test)]
mod source_digest_tests {
    use super::source_digest;
    use std::path::Path;

    #[test]
    fn baked_digest_is_the_digest_of_the_sources_on_disk() {
        let crate_root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let on_disk = source_digest::sources_sha256(crate_root, source_digest::SAMPLE_SOURCES)
            .expect("hashing the sources");
        assert_eq!(super::SOURCE_SHA256, on_disk);
    }

    #[test]
    fn the_digest_covers_every_sampling_module() {
        let crate_root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let files = source_digest::source_files(crate_root, source_digest::SAMPLE_SOURCES)
            .expect("listing the sources");
        for module in ["concat", "epoch_draw", "gather", "mod", "philox", "spans"] {
            let path = crate_root.join("src/sample").join(format!("{module}.rs"));
            assert!(files.contains(&path), "{} is not hashed", path.display());
        }
        assert!(files.contains(&crate_root.join("src/npy/mod.rs")));
    }

    #[test]
    fn a_missing_source_part_is_an_error() {
        let crate_root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let error = source_digest::sources_sha256(crate_root, &["src/no_such_module"])
            .expect_err("a missing part");
        assert!(error.to_string().contains("src/no_such_module"));
    }
}
