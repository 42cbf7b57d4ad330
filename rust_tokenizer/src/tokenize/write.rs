//! A tokenized folder, written atomically: everything goes into a temporary sibling
//! `.tmp-<name>.<pid>.<unique>` (arrays, `metadata.json`, the ownership marker), which is then
//! renamed into place. A reader sees the old complete folder or the new one, never a mix; a
//! crash leaves only a `.tmp-` sibling (the same convention as Python's `hrm_assets.common.atomic`).
//!
//! The staged folder also gets `manifest.json` (size and SHA-256 of each array, the format of
//! Python's `hrm_assets.common.manifest`) before the rename, so a folder in place always carries the
//! fingerprint of its own bytes.
//!
//! Staged folders are written unsynced; [`tokenize_files`] encodes a batch of files at once,
//! makes all of their staged folders durable with one call (`durable::sync_folders`), renames
//! them and then syncs each parent directory once, so the batch costs a few syncs, not eight
//! per file.
//!
//! A job's input or target may also be an object on S3-compatible storage (`s3://...`): the
//! input is fetched and the folder staged locally, then published as `tokenize::remote`
//! describes (manifest deleted first, written last), with the same bytes.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use rayon::prelude::*;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::error::{Error, IoContext, Result};
use crate::ngram::observe::{FileObservation, RowObserver};
use crate::npy::{hex_digest, NpyWriter};
use crate::storage::{Location, ObjectStores, ObjectUrl};
use crate::tokenize::durable::{sync_dir, sync_folders};
use crate::tokenize::encode::{EncodeStats, Encoder, TokenArrays, TokenSink};
use crate::tokenize::read::{RowReader, SourceDigest};
use crate::tokenize::remote;

pub const TMP_PREFIX: &str = ".tmp-";
/// Present in every folder this tool writes; only such folders are ever pruned.
pub const OWNER_MARKER: &str = ".hrm-data";
pub const METADATA_FILE: &str = "metadata.json";
/// Size and SHA-256 of every array of the folder (see `manifest_json`).
pub const MANIFEST_FILE: &str = "manifest.json";
/// The `format` field of `manifest.json`; Python's `hrm_assets.common.manifest.MANIFEST_FORMAT`.
pub const MANIFEST_FORMAT: &str = "hrm-data-manifest/1";
/// The `kind` field of a tokenized folder's `manifest.json`: which command wrote the folder, so
/// that no other command takes it for its own output (`hrm_assets.common.manifest`).
pub const TOKENIZED_KIND: &str = "tokenized";
pub const ARRAY_FILES: [&str; 5] = [
    "tokens.npy",
    "inst_start.npy",
    "inst_len.npy",
    "resp_start.npy",
    "resp_len.npy",
];
const MARKER_TEXT: &str =
    "Written by hrm-data's tokenizer, which may replace or prune this folder.\n";

/// A staging directory that becomes `target` on `commit`, and is removed if dropped before.
pub struct StagedDir {
    staged: PathBuf,
    target: PathBuf,
    committed: bool,
}

fn unique_suffix() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_nanos())
        .unwrap_or(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{}.{nanos}.{count}", std::process::id())
}

fn file_name(path: &Path) -> Result<String> {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .ok_or_else(|| Error::Config(format!("{}: not a folder name", path.display())))
}

fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

fn remove_any(path: &Path) -> std::io::Result<()> {
    if fs::symlink_metadata(path)?.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    }
}

impl StagedDir {
    pub fn create(target: &Path) -> Result<Self> {
        let name = file_name(target)?;
        let parent = parent_of(target);
        fs::create_dir_all(parent).at(parent)?;
        let staged = parent.join(format!("{TMP_PREFIX}{name}.{}", unique_suffix()));
        fs::create_dir(&staged).at(&staged)?;
        Ok(StagedDir {
            staged,
            target: target.to_path_buf(),
            committed: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.staged
    }

    /// Move the staged folder to the target. An existing target is first renamed aside (a
    /// directory cannot be renamed over a non-empty one), then deleted. The staged files must
    /// already be durable; the rename is made durable by syncing the parent afterwards.
    pub fn commit(mut self) -> Result<()> {
        let parent = parent_of(&self.target).to_path_buf();
        let retired = if fs::symlink_metadata(&self.target).is_ok() {
            let name = file_name(&self.target)?;
            let aside = parent.join(format!("{TMP_PREFIX}retired-{name}.{}", unique_suffix()));
            fs::rename(&self.target, &aside).at(&self.target)?;
            Some(aside)
        } else {
            None
        };
        if let Err(err) = fs::rename(&self.staged, &self.target) {
            if let Some(aside) = &retired {
                let _ = fs::rename(aside, &self.target);
            }
            return Err(err).at(&self.target);
        }
        self.committed = true;
        if let Some(aside) = retired {
            // The new folder is in place; failing to delete the old one only leaves a `.tmp-`.
            let _ = remove_any(&aside);
        }
        Ok(())
    }
}

impl Drop for StagedDir {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_dir_all(&self.staged);
        }
    }
}

/// Streams the five arrays of a tokenized folder into `.npy` files.
pub struct NpyFolderWriter {
    tokens: NpyWriter<u32>,
    inst_start: NpyWriter<u64>,
    inst_len: NpyWriter<u64>,
    resp_start: NpyWriter<u64>,
    resp_len: NpyWriter<u64>,
}

impl NpyFolderWriter {
    pub fn create(dir: &Path) -> Result<Self> {
        let [tokens, inst_start, inst_len, resp_start, resp_len] = ARRAY_FILES.map(|n| dir.join(n));
        Ok(NpyFolderWriter {
            tokens: NpyWriter::create(&tokens)?,
            inst_start: NpyWriter::create(&inst_start)?,
            inst_len: NpyWriter::create(&inst_len)?,
            resp_start: NpyWriter::create(&resp_start)?,
            resp_len: NpyWriter::create(&resp_len)?,
        })
    }

    pub fn finish(self) -> Result<()> {
        self.tokens.finish()?;
        self.inst_start.finish()?;
        self.inst_len.finish()?;
        self.resp_start.finish()?;
        self.resp_len.finish()?;
        Ok(())
    }
}

impl TokenSink for NpyFolderWriter {
    fn append(&mut self, arrays: &TokenArrays) -> Result<()> {
        self.tokens.append(&arrays.tokens)?;
        self.inst_start.append(&arrays.inst_start)?;
        self.inst_len.append(&arrays.inst_len)?;
        self.resp_start.append(&arrays.resp_start)?;
        self.resp_len.append(&arrays.resp_len)
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    File::create(path).at(path)?.write_all(bytes).at(path)
}

thread_local! {
    /// Each thread's read buffer for [`file_digest_with`]: a fresh 1 MiB per file was zeroed
    /// and page-faulted in for every array of every folder (five per folder, most of them
    /// small).
    static DIGEST_BUFFER: RefCell<Vec<u8>> = RefCell::new(vec![0u8; DIGEST_CHUNK]);
}

/// Size and lowercase hex SHA-256 of a file's bytes, read in 1 MiB chunks.
pub fn file_digest(path: &Path) -> Result<(u64, String)> {
    file_digest_with(path, &mut |_| {})
}

/// The chunk [`file_digest`] reads at a time.
const DIGEST_CHUNK: usize = 1 << 20;

/// [`file_digest`], also handing each chunk to `inspect` as it is read (in order, of any
/// length), so that one read of the file serves the digest and whatever else needs its bytes.
/// `inspect` must not itself call a digest function (the thread's buffer is in use).
pub fn file_digest_with(path: &Path, inspect: &mut dyn FnMut(&[u8])) -> Result<(u64, String)> {
    DIGEST_BUFFER.with_borrow_mut(|buffer| {
        let mut file = File::open(path).at(path)?;
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        loop {
            let read = file.read(buffer).at(path)?;
            if read == 0 {
                break;
            }
            hasher.update(&buffer[..read]);
            inspect(&buffer[..read]);
            size += read as u64;
        }
        Ok((size, hex_digest(hasher)))
    })
}

/// The bytes of a tokenized folder's `manifest.json` for the files `names` of `dir` (hashed in
/// parallel on the current rayon pool):
/// `{"files":{name:{"sha256":hex,"size":n}},"format":...,"kind":"tokenized"}`, compact with
/// sorted keys, so the same arrays always give the same manifest.
pub fn manifest_json(dir: &Path, names: &[&str]) -> Result<Vec<u8>> {
    let digests = names
        .par_iter()
        .map(|name| file_digest(&dir.join(name)).map(|digest| (name.to_string(), digest)))
        .collect::<Result<Vec<_>>>()?;
    let files: BTreeMap<String, Value> = digests
        .into_iter()
        .map(|(name, (size, sha256))| (name, json!({"sha256": sha256, "size": size})))
        .collect();
    let manifest = json!({"files": files, "format": MANIFEST_FORMAT, "kind": TOKENIZED_KIND});
    Ok(serde_json::to_vec(&manifest).expect("a JSON map always serialises"))
}

/// One file of a batch: the cleaned file, its tokenized folder and the metadata to record.
pub struct FileJob {
    pub input: Location,
    pub target: Location,
    pub metadata: Map<String, Value>,
}

/// Tokenize `input` into the folder `target` (replaced atomically), on the current rayon pool.
///
/// `metadata` is written as `metadata.json` (compact, keys sorted) after gaining `rows`,
/// `tokens`, `text_bytes` (UTF-8 bytes of the rows' text) and `nulls` (Parquet nulls read as
/// empty strings). The folder also gets
/// `manifest.json` (computed from the arrays as written) and the ownership marker.
/// On error nothing at `target` changes.
pub fn tokenize_to_folder(
    encoder: &Encoder,
    input: &Path,
    target: &Path,
    metadata: Map<String, Value>,
    batch_rows: usize,
) -> Result<EncodeStats> {
    let job = FileJob {
        input: Location::Local(input.to_path_buf()),
        target: Location::Local(target.to_path_buf()),
        metadata,
    };
    let stores = ObjectStores::new([])?;
    let mut results = tokenize_files(encoder, vec![job], &stores, batch_rows, &|_| {});
    results.pop().expect("one result per job")
}

/// A job's folder once encoded: staged beside a local target, or already published.
enum Written {
    Staged(StagedDir, EncodeStats),
    Published(EncodeStats),
}

/// Tokenize every job as [`tokenize_to_folder`] does, several files at once on the current
/// rayon pool (largest first, so small files fill the cores around large ones), then make the
/// written folders durable together and rename each into place. `finished(bytes)` is called
/// from the worker threads with the input size of each file once its folder is staged.
///
/// Remote inputs and targets (`s3://`) go through `stores`; a remote folder is published as
/// soon as it is encoded (no sync: a stored object is durable).
///
/// Returns one result per job, in the order given; a failing job leaves its target as it was
/// (a remote one at worst without its manifest, i.e. absent) and does not stop the others.
pub fn tokenize_files(
    encoder: &Encoder,
    jobs: Vec<FileJob>,
    stores: &ObjectStores,
    batch_rows: usize,
    finished: &(dyn Fn(u64) + Sync),
) -> Vec<Result<EncodeStats>> {
    tokenize_files_observed(encoder, jobs, stores, batch_rows, finished, None)
}

/// [`tokenize_files`], with `observer` also scanning every row of each job in the same read,
/// its sidecars (`ngram::observe`) staged with the folder (and published with a remote one).
/// The arrays, `metadata.json` and `manifest.json` are the same bytes either way.
pub fn tokenize_files_observed(
    encoder: &Encoder,
    jobs: Vec<FileJob>,
    stores: &ObjectStores,
    batch_rows: usize,
    finished: &(dyn Fn(u64) + Sync),
    observer: Option<&RowObserver<'_>>,
) -> Vec<Result<EncodeStats>> {
    let sizes = input_sizes(&jobs, stores);
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&index| std::cmp::Reverse(sizes[index]));
    let mut written: Vec<(usize, Result<Written>)> = order
        .into_par_iter()
        .map(|index| {
            let result = write_job(encoder, &jobs[index], stores, batch_rows, observer);
            finished(sizes[index]);
            (index, result)
        })
        .collect();
    written.sort_by_key(|(index, _)| *index);
    let written: Vec<Result<Written>> = written.into_iter().map(|(_, result)| result).collect();

    let dirs: Vec<&Path> = written
        .iter()
        .filter_map(|result| match result {
            Ok(Written::Staged(dir, _)) => Some(dir.path()),
            _ => None,
        })
        .collect();
    let synced = sync_folders(&dirs);
    let results: Vec<Result<EncodeStats>> = written
        .into_iter()
        .map(|result| match result? {
            Written::Published(stats) => Ok(stats),
            // On a failed sync nothing is renamed: the staged folders are removed as they drop.
            Written::Staged(dir, stats) => match &synced {
                Ok(()) => dir.commit().map(|()| stats),
                Err(err) => Err(err.replicate()),
            },
        })
        .collect();
    let mut parents: Vec<&Path> = jobs
        .iter()
        .filter_map(|job| match &job.target {
            Location::Local(target) => Some(parent_of(target)),
            Location::Remote(_) => None,
        })
        .collect();
    parents.sort();
    parents.dedup();
    if synced.is_ok() {
        for parent in parents {
            sync_dir(parent);
        }
    }
    results
}

/// Input bytes of each job (0 where unknown): the file's size, or the object's (HEAD requests
/// for all remote inputs at once).
fn input_sizes(jobs: &[FileJob], stores: &ObjectStores) -> Vec<u64> {
    let remote: Vec<&ObjectUrl> = jobs
        .iter()
        .filter_map(|job| match &job.input {
            Location::Remote(url) => Some(url),
            Location::Local(_) => None,
        })
        .collect();
    let mut remote_sizes = if remote.is_empty() {
        Vec::new()
    } else {
        remote::object_sizes(stores, &remote)
    }
    .into_iter();
    jobs.iter()
        .map(|job| match &job.input {
            Location::Local(path) => fs::metadata(path).map_or(0, |meta| meta.len()),
            Location::Remote(_) => remote_sizes.next().flatten().unwrap_or(0),
        })
        .collect()
}

/// Encode one job: into a staging folder beside a local target (not yet synced or renamed),
/// or into a local staging folder that is then published to a remote target and removed.
fn write_job(
    encoder: &Encoder,
    job: &FileJob,
    stores: &ObjectStores,
    batch_rows: usize,
    observer: Option<&RowObserver<'_>>,
) -> Result<Written> {
    match &job.target {
        Location::Local(target) => {
            let staged = StagedDir::create(target)?;
            let stats = write_folder(encoder, job, stores, staged.path(), batch_rows, observer)?;
            Ok(Written::Staged(staged, stats))
        }
        Location::Remote(folder) => {
            // Never committed: removed when it drops, published or not.
            let staged = StagedDir::create(&std::env::temp_dir().join(folder.name()))?;
            // Its sidecars are staged with it and published beside its objects.
            let stats = write_folder(encoder, job, stores, staged.path(), batch_rows, observer)?;
            remote::publish_folder(stores, staged.path(), folder)?;
            Ok(Written::Published(stats))
        }
    }
}

/// Write a job's whole folder (arrays, metadata, manifest, marker) into the empty `dir`.
fn write_folder(
    encoder: &Encoder,
    job: &FileJob,
    stores: &ObjectStores,
    dir: &Path,
    batch_rows: usize,
    observer: Option<&RowObserver<'_>>,
) -> Result<EncodeStats> {
    let mut arrays = NpyFolderWriter::create(dir)?;
    let mut observed = FileObservation::default();
    let observing = observer.map(|observer| (observer, &mut observed));
    let stats = match &job.input {
        Location::Local(path) => {
            let rows = RowReader::open(path, batch_rows)?;
            encoder.encode_rows_observed(path, rows, &mut arrays, observing)?
        }
        Location::Remote(url) => {
            let rows = remote::open_rows(stores, url, batch_rows)?;
            encoder.encode_rows_observed(&url.as_path_buf(), rows, &mut arrays, observing)?
        }
    };
    arrays.finish()?;
    if let Some(observer) = observer {
        observer.write(dir, &observed)?;
    }
    check_source_unchanged(job, &stats.source)?;
    let mut metadata = job.metadata.clone();
    metadata.insert("rows".into(), stats.rows.into());
    metadata.insert("tokens".into(), stats.tokens.into());
    metadata.insert("text_bytes".into(), stats.text_bytes.into());
    metadata.insert("nulls".into(), stats.nulls.into());
    let json = serde_json::to_vec(&Value::Object(metadata)).expect("a JSON map always serialises");
    write_file(&dir.join(METADATA_FILE), &json)?;
    let manifest = manifest_json(dir, &ARRAY_FILES)?;
    write_file(&dir.join(MANIFEST_FILE), &manifest)?;
    write_file(&dir.join(OWNER_MARKER), MARKER_TEXT.as_bytes())?;
    Ok(stats)
}

/// Refuse a folder whose input was not, byte for byte, the file the caller hashed to decide
/// (`source_sha256` and `source_size` in the job's metadata, when it records them): a file
/// rewritten while it was encoded (`cp`, `rsync --inplace`: truncated, then refilled) may have
/// been read half empty, and a folder recording the whole file's hash would then be skipped as
/// current for ever. Nothing is written; the next run sees the file as it then is.
fn check_source_unchanged(job: &FileJob, read: &SourceDigest) -> Result<()> {
    let recorded_sha256 = job.metadata.get("source_sha256").and_then(Value::as_str);
    let recorded_size = job.metadata.get("source_size").and_then(Value::as_u64);
    let (Some(sha256), Some(size)) = (recorded_sha256, recorded_size) else {
        return Ok(());
    };
    let read_sha256 = read.sha256_hex();
    if read_sha256 == sha256 && read.size == size {
        return Ok(());
    }
    let name = match &job.input {
        Location::Local(path) => path.clone(),
        Location::Remote(url) => url.as_path_buf(),
    };
    Err(Error::file(
        &name,
        format!(
            "changed while it was tokenized: {} bytes (SHA-256 {read_sha256}) were encoded, but \
             {size} bytes (SHA-256 {sha256}) were hashed when the run began; nothing was \
             written: run again once the file is no longer being written",
            read.size
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::npy::{header, HeaderStyle, HEADER_LEN};
    use crate::tokenize::encode::tests::{jsonl, word_spec, word_tokenizer};
    use crate::tokenize::encode::thread_pool;

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn read_u64s(path: &Path) -> Vec<u64> {
        let bytes = fs::read(path).unwrap();
        bytes[HEADER_LEN..]
            .chunks(8)
            .map(|chunk| u64::from_le_bytes(chunk.try_into().unwrap()))
            .collect()
    }

    #[test]
    fn staged_dir_replaces_target_and_cleans_up() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("out");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("old.txt"), "old").unwrap();

        let staged = StagedDir::create(&target).unwrap();
        assert!(staged
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(".tmp-out."));
        fs::write(staged.path().join("new.txt"), "new").unwrap();
        staged.commit().unwrap();
        assert_eq!(entries(&target), ["new.txt"]);
        assert_eq!(entries(root.path()), ["out"]);

        let dropped = StagedDir::create(&target).unwrap();
        fs::write(dropped.path().join("half.txt"), "x").unwrap();
        drop(dropped);
        assert_eq!(entries(root.path()), ["out"]);
        assert_eq!(entries(&target), ["new.txt"]);
    }

    #[test]
    fn folder_has_arrays_metadata_and_marker() {
        let root = tempfile::tempdir().unwrap();
        let input = jsonl(
            root.path(),
            "in.jsonl",
            &[("cot", "two", "five"), ("", "three", "")],
        );
        let target = root.path().join("out").join("in.jsonl");
        let encoder = Encoder::new(word_tokenizer(), &word_spec()).unwrap();
        let mut metadata = Map::new();
        metadata.insert("source_size".into(), 7.into());
        let pool = thread_pool(Some(2)).unwrap();
        let stats = pool
            .install(|| tokenize_to_folder(&encoder, &input, &target, metadata, 1))
            .unwrap();
        assert_eq!((stats.rows, stats.tokens), (2, 10));

        let mut expected: Vec<String> = ARRAY_FILES.iter().map(|s| s.to_string()).collect();
        expected.extend([
            OWNER_MARKER.to_string(),
            METADATA_FILE.to_string(),
            MANIFEST_FILE.to_string(),
        ]);
        expected.sort();
        assert_eq!(entries(&target), expected);
        assert_eq!(entries(root.path().join("out").as_path()), ["in.jsonl"]);

        let tokens = fs::read(target.join("tokens.npy")).unwrap();
        assert_eq!(
            &tokens[..HEADER_LEN],
            &header(HeaderStyle::NdarrayNpy, "<u4", 10)
        );
        assert_eq!(read_u64s(&target.join("inst_start.npy")), [0, 6]);
        assert_eq!(read_u64s(&target.join("resp_len.npy")), [2, 1]);
        let meta = fs::read_to_string(target.join(METADATA_FILE)).unwrap();
        assert_eq!(
            meta,
            r#"{"nulls":0,"rows":2,"source_size":7,"text_bytes":15,"tokens":10}"#
        );

        let manifest: Value =
            serde_json::from_slice(&fs::read(target.join(MANIFEST_FILE)).unwrap()).unwrap();
        assert_eq!(manifest["format"], MANIFEST_FORMAT);
        assert_eq!(manifest["kind"], TOKENIZED_KIND);
        let files = manifest["files"].as_object().unwrap();
        assert_eq!(files.len(), ARRAY_FILES.len());
        for name in ARRAY_FILES {
            let bytes = fs::read(target.join(name)).unwrap();
            let sha256: String = Sha256::digest(&bytes)
                .iter()
                .map(|byte| format!("{byte:02x}"))
                .collect();
            assert_eq!(files[name]["size"], bytes.len() as u64, "{name}");
            assert_eq!(files[name]["sha256"], sha256, "{name}");
        }
    }

    #[test]
    fn a_file_that_differs_from_the_one_hashed_fails_and_writes_nothing() {
        let root = tempfile::tempdir().unwrap();
        let input = jsonl(root.path(), "in.jsonl", &[("cot", "two", "five")]);
        let (size, sha256) = file_digest(&input).unwrap();
        let target = root.path().join("out").join("in.jsonl");
        let encoder = Encoder::new(word_tokenizer(), &word_spec()).unwrap();
        let pool = thread_pool(Some(2)).unwrap();
        let recorded = |size: u64, sha256: &str| {
            let mut metadata = Map::new();
            metadata.insert("source_size".into(), size.into());
            metadata.insert("source_sha256".into(), sha256.into());
            metadata
        };
        // Hashed whole, then read after `cp` truncated it: what was encoded is not what was
        // hashed.
        let whole = recorded(size, &sha256);
        fs::write(&input, b"").unwrap();
        let err = pool
            .install(|| tokenize_to_folder(&encoder, &input, &target, whole, 1))
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("changed while it was tokenized: 0 bytes"),
            "{err}"
        );
        assert!(!root.path().join("out").join("in.jsonl").exists());
        // The bytes hashed are the bytes encoded: written, recording them.
        let empty = recorded(0, &format!("{:x}", Sha256::digest(b"")));
        let stats = pool
            .install(|| tokenize_to_folder(&encoder, &input, &target, empty, 1))
            .unwrap();
        assert_eq!((stats.rows, stats.source.size), (0, 0));
        assert!(target.join(MANIFEST_FILE).is_file());
    }

    #[test]
    fn digest_of_known_bytes() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("abc");
        fs::write(&path, b"abc").unwrap();
        let (size, hex) = file_digest(&path).unwrap();
        assert_eq!(size, 3);
        // FIPS 180-2 test vector.
        assert_eq!(
            hex,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let manifest = manifest_json(root.path(), &["abc"]).unwrap();
        assert_eq!(
            String::from_utf8(manifest).unwrap(),
            format!(
                r#"{{"files":{{"abc":{{"sha256":"{hex}","size":3}}}},"format":"{MANIFEST_FORMAT}","kind":"{TOKENIZED_KIND}"}}"#
            )
        );
    }

    #[test]
    fn a_batch_keeps_job_order_and_one_bad_file_spares_the_others() {
        let root = tempfile::tempdir().unwrap();
        let small = jsonl(root.path(), "small.jsonl", &[("cot", "two", "five")]);
        let bad = jsonl(root.path(), "bad.jsonl", &[("bad", "x", "y")]);
        let big = jsonl(
            root.path(),
            "big.jsonl",
            &[
                ("cot", "two", "five"),
                ("", "three", ""),
                ("cot", "five", "two"),
            ],
        );
        let out = root.path().join("out");
        let jobs = [&small, &bad, &big]
            .into_iter()
            .map(|input| FileJob {
                input: Location::Local(input.clone()),
                target: Location::Local(out.join(input.file_name().unwrap())),
                metadata: Map::new(),
            })
            .collect();
        let stores = ObjectStores::new([]).unwrap();
        let encoder = Encoder::new(word_tokenizer(), &word_spec()).unwrap();
        let finished = std::sync::atomic::AtomicU64::new(0);
        let results = thread_pool(Some(2)).unwrap().install(|| {
            tokenize_files(&encoder, jobs, &stores, 1, &|bytes| {
                finished.fetch_add(bytes, Ordering::Relaxed);
            })
        });
        assert_eq!(results.len(), 3);
        assert_eq!(results[0].as_ref().unwrap().rows, 1);
        assert!(matches!(results[1], Err(Error::Row { row: 1, .. })));
        assert_eq!(results[2].as_ref().unwrap().rows, 3);
        assert_eq!(entries(&out), ["big.jsonl", "small.jsonl"]);
        let sizes: u64 = [&small, &bad, &big]
            .iter()
            .map(|path| fs::metadata(path).unwrap().len())
            .sum();
        assert_eq!(finished.into_inner(), sizes);
    }

    #[test]
    fn failure_leaves_the_old_folder_untouched() {
        let root = tempfile::tempdir().unwrap();
        let input = jsonl(
            root.path(),
            "in.jsonl",
            &[("cot", "two", "five"), ("bad", "x", "y")],
        );
        let out = root.path().join("out");
        let target = out.join("in.jsonl");
        fs::create_dir_all(&target).unwrap();
        fs::write(target.join("keep.txt"), "previous run").unwrap();
        let encoder = Encoder::new(word_tokenizer(), &word_spec()).unwrap();
        let pool = thread_pool(Some(2)).unwrap();
        let err = pool
            .install(|| tokenize_to_folder(&encoder, &input, &target, Map::new(), 1))
            .unwrap_err();
        assert!(matches!(err, Error::Row { row: 2, .. }), "{err}");
        assert_eq!(entries(&out), ["in.jsonl"]);
        assert_eq!(entries(&target), ["keep.txt"]);
    }
}
