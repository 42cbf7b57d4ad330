//! The SHA-256 of a set of the crate's source files, by relative path and content: what a
//! stage's code version is made of on the Rust side. Compiled twice, into `build.rs` (which
//! bakes the digests into the library) and into the library's tests (which recompute them from
//! the files on disk), so the formula is written once.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Every `.rs` file under `parts` (files or folders, relative to `crate_root`), sorted by path.
pub fn source_files(crate_root: &Path, parts: &[&str]) -> io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for part in parts {
        collect_rust_files(&crate_root.join(part), &mut files)?;
    }
    files.sort();
    files.dedup();
    Ok(files)
}

fn collect_rust_files(path: &Path, files: &mut Vec<PathBuf>) -> io::Result<()> {
    if path.is_dir() {
        for entry in fs::read_dir(path)? {
            collect_rust_files(&entry?.path(), files)?;
        }
    } else if path.extension().is_some_and(|extension| extension == "rs") {
        files.push(path.to_path_buf());
    } else if !path.exists() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{}: no such source file or folder", path.display()),
        ));
    }
    Ok(())
}

/// Hex SHA-256 over each file's path (relative to `crate_root`, `/`-separated), length and bytes.
pub fn sources_sha256(crate_root: &Path, parts: &[&str]) -> io::Result<String> {
    let mut hasher = Sha256::new();
    for file in source_files(crate_root, parts)? {
        let relative = file.strip_prefix(crate_root).unwrap_or(&file);
        let name = relative
            .components()
            .map(|component| component.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        let bytes = fs::read(&file)?;
        hasher.update(name.as_bytes());
        hasher.update([0]);
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect())
}

/// The sources that decide the bytes of a sampled folder's epoch arrays: the draw, span table,
/// token copy, the `.npy` writers, and the bindings that hand them their arguments.
pub const SAMPLE_SOURCES: &[&str] = &[
    "src/sample",
    "src/npy",
    "src/python/sample.rs",
    "src/python/npy.rs",
];
