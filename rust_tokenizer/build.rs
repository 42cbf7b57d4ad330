//! Bakes the SHA-256 of the sampler's Rust sources into the library (`HRM_SAMPLE_SOURCE_SHA256`,
//! read by `sample::SOURCE_SHA256`), so that the sampled asset's code version changes with any
//! edit that can change the epochs' bytes, not only with Python edits.

#[path = "build_support/source_digest.rs"]
mod source_digest;

use std::path::Path;

fn main() {
    let crate_root = Path::new(env!("CARGO_MANIFEST_DIR"));
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build_support");
    for part in source_digest::SAMPLE_SOURCES {
        // A folder: cargo rescans everything under it.
        println!("cargo:rerun-if-changed={part}");
    }
    let digest = source_digest::sources_sha256(crate_root, source_digest::SAMPLE_SOURCES)
        .expect("hashing the sampler's sources");
    println!("cargo:rustc-env=HRM_SAMPLE_SOURCE_SHA256={digest}");
}
