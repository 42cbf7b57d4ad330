//! Cleaned files read from, and tokenized folders written to, S3-compatible object storage
//! (`s3://bucket/key`, see [`crate::storage`]).
//!
//! **Input.** A cleaned object is read with one GET and parsed by the same readers as a local
//! file (format by the key's extension; errors name the URL, the row and the field). JSONL is
//! parsed as it downloads (memory: a few network chunks and the reader's 1 MiB buffer), so the
//! download overlaps encoding. Parquet is fetched whole into memory first: its footer comes
//! last, and ranged reads would cost a round trip per column chunk for a reader that reads
//! every row of three columns anyway; the price is memory of the (compressed) file's size.
//!
//! **Output.** A folder `s3://bucket/prefix/<name>` is first written to a local staging folder
//! (`.tmp-<name>.*` in `std::env::temp_dir()`, i.e. `$TMPDIR`) by the local writer, so its bytes
//! (and the manifest's SHA-256s) are those a local run writes, and memory stays bounded by the
//! upload's parts whatever the input's size. It is then published in three steps:
//!
//! 1. DELETE `<folder>/manifest.json`: from here on readers treat the folder as absent;
//! 2. PUT the ownership marker `.hrm-data`, alone and first: every object the steps below
//!    leave behind, wherever a writer is killed, lies beside it, so the next run takes the
//!    folder as its own to rewrite rather than as someone else's objects in the way;
//! 3. PUT the arrays, `metadata.json` and the contamination sidecars when the folder has them
//!    (`ngram::observe`; a previous write's are deleted in step 1 when it has none),
//!    concurrently; an object larger than [`PART_SIZE`] goes up as a multipart upload of such
//!    parts, [`PARTS_IN_FLIGHT`] at a time;
//! 4. PUT `manifest.json`, last, once every other object is in place.
//!
//! A folder with a manifest is therefore complete and matches it; a failure in step 3 leaves the
//! folder without one (absent), never with a manifest over other arrays. The staging folder is
//! removed in every case. There is no sync: an object is durable once its PUT returns.
//!
//! Every object carries its SHA-256 as user metadata (`x-amz-meta-sha256`), as every object
//! Python's `hrm_assets.common.storage` writes does, so a HEAD tells its digest without a GET.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use bytes::{Buf, Bytes};
use futures_util::stream::{BoxStream, StreamExt};
use object_store::{
    Attribute, Attributes, ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart,
};
use sha2::{Digest, Sha256};
use tokio::task::JoinSet;

use crate::error::{Error, IoContext, RemoteKind, Result};
use crate::ngram::observe::{KEYS_FILE, SCAN_FILE};
use crate::npy::hex_digest;
use crate::storage::{runtime, ObjectStores, ObjectUrl};
use crate::tokenize::read::{Format, RowReader};
use crate::tokenize::write::{ARRAY_FILES, MANIFEST_FILE, METADATA_FILE, OWNER_MARKER};

/// Objects larger than this go up in parts of this size (S3 needs parts of at least 5 MiB).
pub const PART_SIZE: usize = 16 << 20;
/// Parts of one object uploaded at once: enough to fill a link, little memory (4 x 16 MiB).
pub const PARTS_IN_FLIGHT: usize = 4;

/// Rows of the cleaned object at `url` (format by the key's extension), batches of
/// `batch_rows`.
pub fn open_rows(stores: &ObjectStores, url: &ObjectUrl, batch_rows: usize) -> Result<RowReader> {
    let name = url.as_path_buf();
    match Format::of(&name)? {
        Format::Jsonl => {
            let object = ObjectReader::open(stores, url)?;
            Ok(RowReader::jsonl_from(&name, Box::new(object), batch_rows))
        }
        Format::Parquet => RowReader::parquet_from(&name, fetch_object(stores, url)?, batch_rows),
    }
}

/// An object's bytes as they arrive, as a blocking reader for the caller's (non-runtime)
/// thread: each read waits on the runtime for the next chunk of the GET's body.
pub struct ObjectReader {
    chunks: BoxStream<'static, object_store::Result<Bytes>>,
    current: Bytes,
    url: ObjectUrl,
}

impl ObjectReader {
    /// Send the GET and wait for its answer (so a missing object or a refusal is reported
    /// here, as the remote error it is); the body follows as it is read.
    pub fn open(stores: &ObjectStores, url: &ObjectUrl) -> Result<Self> {
        let store = stores.store_for(url)?;
        let object = runtime()?
            .block_on(store.get(&url.path()))
            .map_err(|err| url.error(err))?;
        Ok(ObjectReader {
            chunks: object.into_stream(),
            current: Bytes::new(),
            url: url.clone(),
        })
    }
}

impl Read for ObjectReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            let runtime = runtime().map_err(|err| std::io::Error::other(err.to_string()))?;
            match runtime.block_on(self.chunks.next()) {
                None => return Ok(0),
                Some(Ok(chunk)) => self.current = chunk,
                // The reader adds the URL; keep the kind, so Python's exception class follows.
                Some(Err(err)) => {
                    return Err(match self.url.error(err) {
                        Error::Remote { kind, message, .. } => {
                            let kind = match kind {
                                RemoteKind::NotFound | RemoteKind::NoSuchBucket => {
                                    std::io::ErrorKind::NotFound
                                }
                                RemoteKind::PermissionDenied => {
                                    std::io::ErrorKind::PermissionDenied
                                }
                                RemoteKind::Other => std::io::ErrorKind::Other,
                            };
                            std::io::Error::new(kind, message)
                        }
                        other => std::io::Error::other(other.to_string()),
                    })
                }
            }
        }
        let count = buf.len().min(self.current.len());
        buf[..count].copy_from_slice(&self.current[..count]);
        self.current.advance(count);
        Ok(count)
    }
}

/// The whole object at `url`.
pub fn fetch_object(stores: &ObjectStores, url: &ObjectUrl) -> Result<Bytes> {
    let store = stores.store_for(url)?;
    runtime()?.block_on(async {
        let object = store.get(&url.path()).await.map_err(|err| url.error(err))?;
        object.bytes().await.map_err(|err| url.error(err))
    })
}

/// HEAD requests in flight at once when sizing a batch's inputs: a corpus of thousands of
/// files is sized in a few round trips without provoking the server's throttling (503).
const HEADS_IN_FLIGHT: usize = 64;

/// The size of each object (HEAD requests, [`HEADS_IN_FLIGHT`] at a time); `None` where it
/// cannot be had (the GET that follows reports why).
pub fn object_sizes(stores: &ObjectStores, urls: &[&ObjectUrl]) -> Vec<Option<u64>> {
    let mut sizes = vec![None; urls.len()];
    let Ok(runtime) = runtime() else {
        return sizes;
    };
    runtime.block_on(async {
        let mut heads = JoinSet::new();
        let mut record = |done: Option<Result<(usize, Option<u64>), _>>| {
            if let Some(Ok((index, size))) = done {
                sizes[index] = size;
            }
        };
        for (index, url) in urls.iter().enumerate() {
            let Ok(store) = stores.store_for(url) else {
                continue;
            };
            if heads.len() >= HEADS_IN_FLIGHT {
                record(heads.join_next().await);
            }
            let path = url.path();
            heads.spawn(async move { (index, store.head(&path).await.ok().map(|meta| meta.size)) });
        }
        while !heads.is_empty() {
            record(heads.join_next().await);
        }
    });
    sizes
}

/// Publish the staged folder `dir` as `folder`, by the protocol of the module documentation.
pub fn publish_folder(stores: &ObjectStores, dir: &Path, folder: &ObjectUrl) -> Result<()> {
    let store = stores.store_for(folder)?;
    runtime()?.block_on(publish(store, dir, folder, PART_SIZE))
}

async fn publish(
    store: Arc<dyn ObjectStore>,
    dir: &Path,
    folder: &ObjectUrl,
    part_size: usize,
) -> Result<()> {
    let manifest = folder.child(MANIFEST_FILE);
    delete_if_present(&store, &manifest).await?;
    let marker_path = dir.join(OWNER_MARKER);
    let marker_bytes = fs::read(&marker_path).at(&marker_path)?;
    put_object(&store, &folder.child(OWNER_MARKER), marker_bytes).await?;
    // Sidecars travel with their folder: a previous write's must not outlive it.
    let sidecars: Vec<&str> = [SCAN_FILE, KEYS_FILE]
        .into_iter()
        .filter(|name| dir.join(name).exists())
        .collect();
    for name in [SCAN_FILE, KEYS_FILE] {
        if !sidecars.contains(&name) {
            delete_if_present(&store, &folder.child(name)).await?;
        }
    }

    // The arrays' digests are the manifest's (already computed, and the large ones must be
    // known before their upload starts); the two small files are hashed as they are read.
    let manifest_path = dir.join(MANIFEST_FILE);
    let manifest_bytes = fs::read(&manifest_path).at(&manifest_path)?;
    let array_digests = manifest_digests(&manifest_bytes, &manifest_path)?;

    // Small objects are read here and PUT concurrently by the runtime; large ones are streamed
    // from disk by this (caller's) thread, part after part, so no runtime worker blocks on disk.
    let mut small = JoinSet::new();
    let mut large = Vec::new();
    for name in ARRAY_FILES.iter().chain(&[METADATA_FILE]).chain(&sidecars) {
        let path = dir.join(name);
        let url = folder.child(name);
        if fs::metadata(&path).at(&path)?.len() > part_size as u64 {
            let digest = match array_digests.get(*name) {
                Some(digest) => digest.clone(),
                None if sidecars.contains(name) => file_sha256_hex(&path)?,
                None => {
                    return Err(Error::file(
                        &manifest_path,
                        format!("{name} is not in the manifest"),
                    ))
                }
            };
            large.push((path, url, digest));
        } else {
            let bytes = fs::read(&path).at(&path)?;
            let store = store.clone();
            small.spawn(async move { put_object(&store, &url, bytes).await });
        }
    }
    let mut first_error = None;
    for (path, url, digest) in large {
        if let Err(err) = upload_in_parts(&store, &path, &url, digest, part_size).await {
            first_error = Some(err);
            break;
        }
    }
    while let Some(done) = small.join_next().await {
        let outcome = done.unwrap_or_else(|join| {
            Err(Error::Config(format!(
                "{folder}: an upload task failed: {join}"
            )))
        });
        if let Err(err) = outcome {
            first_error.get_or_insert(err);
        }
    }
    if let Some(err) = first_error {
        return Err(err);
    }

    put_object(&store, &manifest, manifest_bytes).await
}

/// PUT `bytes` as `url` in one request, their SHA-256 as the object's user metadata.
async fn put_object(store: &Arc<dyn ObjectStore>, url: &ObjectUrl, bytes: Vec<u8>) -> Result<()> {
    let digest = sha256_hex(&bytes);
    store
        .put_opts(
            &url.path(),
            PutPayload::from(bytes),
            sha256_attributes(digest).into(),
        )
        .await
        .map(|_| ())
        .map_err(|err| url.error(err))
}

/// DELETE `url`, an object already gone being no error (some S3-compatible stores answer 404).
async fn delete_if_present(store: &Arc<dyn ObjectStore>, url: &ObjectUrl) -> Result<()> {
    match store.delete(&url.path()).await {
        Ok(()) => Ok(()),
        Err(err) => match url.error(err) {
            Error::Remote {
                kind: RemoteKind::NotFound,
                ..
            } => Ok(()),
            err => Err(err),
        },
    }
}

/// SHA-256 of a file no manifest lists (a large duplicate-key sidecar), read once.
fn file_sha256_hex(path: &Path) -> Result<String> {
    let mut hasher = Sha256::new();
    std::io::copy(&mut File::open(path).at(path)?, &mut hasher).at(path)?;
    Ok(hex_digest(hasher))
}

/// The user-metadata key of an object's SHA-256 (`x-amz-meta-sha256`), Python's
/// `hrm_assets.common.storage.SHA256_METADATA`.
pub const SHA256_METADATA: &str = "sha256";

fn sha256_attributes(hex: String) -> Attributes {
    Attributes::from_iter([(Attribute::Metadata(SHA256_METADATA.into()), hex)])
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex_digest(Sha256::new_with_prefix(bytes))
}

/// `name -> sha256` of the manifest's files (`manifest_json`'s format).
fn manifest_digests(bytes: &[u8], path: &Path) -> Result<HashMap<String, String>> {
    let manifest: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|err| Error::file(path, format!("not a manifest: {err}")))?;
    let files = manifest["files"]
        .as_object()
        .ok_or_else(|| Error::file(path, "not a manifest: no files"))?;
    Ok(files
        .iter()
        .filter_map(|(name, entry)| Some((name.clone(), entry["sha256"].as_str()?.to_string())))
        .collect())
}

/// Upload the file at `path` (of SHA-256 `sha256`) as `url` by a multipart upload: `part_size` parts read one after
/// another, [`PARTS_IN_FLIGHT`] uploading at a time. On error the upload is aborted.
async fn upload_in_parts(
    store: &Arc<dyn ObjectStore>,
    path: &Path,
    url: &ObjectUrl,
    sha256: String,
    part_size: usize,
) -> Result<()> {
    let upload = store
        .put_multipart_opts(&url.path(), sha256_attributes(sha256).into())
        .await
        .map_err(|err| url.error(err))?;
    let mut writer = WriteMultipart::new_with_chunk_size(upload, part_size);
    let sent = async {
        let mut file = File::open(path).at(path)?;
        loop {
            writer
                .wait_for_capacity(PARTS_IN_FLIGHT)
                .await
                .map_err(|err| url.error(err))?;
            let mut part = Vec::with_capacity(part_size);
            let read = (&mut file)
                .take(part_size as u64)
                .read_to_end(&mut part)
                .at(path)?;
            if read == 0 {
                return Ok(());
            }
            writer.put(Bytes::from(part));
        }
    }
    .await;
    match sent {
        Ok(()) => writer
            .finish()
            .await
            .map(|_| ())
            .map_err(|err| url.error(err)),
        Err(err) => {
            let _ = writer.abort().await;
            Err(err)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt;
    use std::ops::Range;
    use std::sync::Mutex;

    use async_trait::async_trait;
    use object_store::memory::InMemory;
    use object_store::path::Path as ObjectPath;
    use object_store::{
        CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta,
        PutMultipartOptions, PutOptions, PutResult,
    };
    use serde_json::Map;

    use crate::storage::Location;
    use crate::tokenize::encode::tests::{jsonl, word_spec, word_tokenizer};
    use crate::tokenize::encode::{thread_pool, Encoder};
    use crate::tokenize::write::{manifest_json, tokenize_files, FileJob};

    /// An in-memory store that logs every write and delete, and fails PUTs of one key.
    #[derive(Debug, Default)]
    struct Recording {
        inner: InMemory,
        log: Arc<Mutex<Vec<String>>>,
        fail_on: Option<String>,
    }

    impl fmt::Display for Recording {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "Recording")
        }
    }

    impl Recording {
        fn record(&self, what: &str, path: &ObjectPath) {
            self.log.lock().unwrap().push(format!("{what} {path}"));
        }

        fn refuses(&self, path: &ObjectPath) -> bool {
            self.fail_on
                .as_deref()
                .is_some_and(|name| path.as_ref().ends_with(name))
        }
    }

    #[async_trait]
    impl ObjectStore for Recording {
        async fn put_opts(
            &self,
            location: &ObjectPath,
            payload: PutPayload,
            opts: PutOptions,
        ) -> object_store::Result<PutResult> {
            if self.refuses(location) {
                return Err(object_store::Error::Generic {
                    store: "Recording",
                    source: "refused".into(),
                });
            }
            self.record("put", location);
            self.inner.put_opts(location, payload, opts).await
        }

        async fn put_multipart_opts(
            &self,
            location: &ObjectPath,
            opts: PutMultipartOptions,
        ) -> object_store::Result<Box<dyn MultipartUpload>> {
            self.record("multipart", location);
            self.inner.put_multipart_opts(location, opts).await
        }

        async fn get_opts(
            &self,
            location: &ObjectPath,
            options: GetOptions,
        ) -> object_store::Result<GetResult> {
            self.inner.get_opts(location, options).await
        }

        async fn get_ranges(
            &self,
            location: &ObjectPath,
            ranges: &[Range<u64>],
        ) -> object_store::Result<Vec<Bytes>> {
            self.inner.get_ranges(location, ranges).await
        }

        fn delete_stream(
            &self,
            locations: BoxStream<'static, object_store::Result<ObjectPath>>,
        ) -> BoxStream<'static, object_store::Result<ObjectPath>> {
            let log = self.log.clone();
            let logged = locations
                .map(move |location| {
                    if let Ok(path) = &location {
                        log.lock().unwrap().push(format!("delete {path}"));
                    }
                    location
                })
                .boxed();
            self.inner.delete_stream(logged)
        }

        fn list(
            &self,
            prefix: Option<&ObjectPath>,
        ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
            self.inner.list(prefix)
        }

        async fn list_with_delimiter(
            &self,
            prefix: Option<&ObjectPath>,
        ) -> object_store::Result<ListResult> {
            self.inner.list_with_delimiter(prefix).await
        }

        async fn copy_opts(
            &self,
            from: &ObjectPath,
            to: &ObjectPath,
            options: CopyOptions,
        ) -> object_store::Result<()> {
            self.inner.copy_opts(from, to, options).await
        }
    }

    fn url(text: &str) -> ObjectUrl {
        ObjectUrl::parse(text).unwrap().unwrap()
    }

    fn object(store: &Arc<Recording>, key: &str) -> Option<Vec<u8>> {
        runtime()
            .unwrap()
            .block_on(async {
                store
                    .get(&ObjectPath::from(key))
                    .await
                    .ok()?
                    .bytes()
                    .await
                    .ok()
            })
            .map(|bytes| bytes.to_vec())
    }

    fn stored_sha256(store: &Arc<Recording>, key: &str) -> String {
        let attributes = runtime()
            .unwrap()
            .block_on(store.get(&ObjectPath::from(key)))
            .unwrap()
            .attributes;
        let value = attributes.get(&Attribute::Metadata(SHA256_METADATA.into()));
        value
            .map(|value| value.as_ref().to_string())
            .unwrap_or_default()
    }

    fn put(store: &Arc<Recording>, key: &str, bytes: &[u8]) {
        let payload = PutPayload::from(bytes.to_vec());
        runtime()
            .unwrap()
            .block_on(store.inner.put(&ObjectPath::from(key), payload))
            .unwrap();
    }

    fn folder_files() -> Vec<&'static str> {
        let mut names = ARRAY_FILES.to_vec();
        names.extend([METADATA_FILE, OWNER_MARKER, MANIFEST_FILE]);
        names
    }

    /// Tokenize `input` locally into `root/local/<name>` and as `target` through `stores`.
    fn both_ways(
        root: &Path,
        input: Location,
        local_input: &Path,
        target: &str,
        stores: &ObjectStores,
    ) {
        let encoder = Encoder::new(word_tokenizer(), &word_spec()).unwrap();
        let pool = thread_pool(Some(2)).unwrap();
        let jobs = vec![
            FileJob {
                input: Location::Local(local_input.to_path_buf()),
                target: Location::Local(root.join("local").join("in.jsonl")),
                metadata: Map::new(),
            },
            FileJob {
                input,
                target: Location::Remote(url(target)),
                metadata: Map::new(),
            },
        ];
        let results = pool.install(|| tokenize_files(&encoder, jobs, stores, 1, &|_| {}));
        for result in results {
            result.unwrap();
        }
    }

    #[test]
    fn a_published_folder_has_the_local_bytes_and_its_manifest_last() {
        let root = tempfile::tempdir().unwrap();
        let input = jsonl(
            root.path(),
            "in.jsonl",
            &[("cot", "two", "five"), ("", "three", "")],
        );
        let store = Arc::new(Recording::default());
        put(&store, "cleaned/in.jsonl", &fs::read(&input).unwrap());
        put(&store, "tokenized/in.jsonl/manifest.json", b"stale");
        let stores = ObjectStores::fixed(store.clone());
        both_ways(
            root.path(),
            Location::Remote(url("s3://bucket/cleaned/in.jsonl")),
            &input,
            "s3://bucket/tokenized/in.jsonl",
            &stores,
        );
        for name in folder_files() {
            let local = fs::read(root.path().join("local/in.jsonl").join(name)).unwrap();
            let key = format!("tokenized/in.jsonl/{name}");
            assert_eq!(object(&store, &key).unwrap(), local, "{name}");
            assert_eq!(stored_sha256(&store, &key), sha256_hex(&local), "{name}");
        }
        let log = store.log.lock().unwrap().clone();
        // Written without sidecars: a previous write's are deleted with the manifest.
        // The marker goes up alone before anything else, so a kill at any later moment leaves
        // the folder's objects beside it (the next run's to rewrite, never foreign).
        assert_eq!(
            log[..4],
            [
                "delete tokenized/in.jsonl/manifest.json",
                "put tokenized/in.jsonl/.hrm-data",
                "delete tokenized/in.jsonl/contamination.json",
                "delete tokenized/in.jsonl/duplicate_keys.u64",
            ]
        );
        assert_eq!(log.last().unwrap(), "put tokenized/in.jsonl/manifest.json");
        assert_eq!(log.len(), 3 + folder_files().len(), "{log:?}");
        // The staging folder is gone.
        let staged: Vec<_> = fs::read_dir(std::env::temp_dir())
            .unwrap()
            .filter_map(|entry| entry.ok())
            .filter(|entry| {
                entry
                    .file_name()
                    .to_string_lossy()
                    .starts_with(".tmp-in.jsonl.")
            })
            .collect();
        assert!(staged.is_empty(), "{staged:?}");
    }

    #[test]
    fn large_arrays_go_up_in_parts_with_the_same_bytes() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("staged");
        fs::create_dir(&dir).unwrap();
        // Sizes around the part size: none, one, one and a bit, and exactly two parts.
        let part = 1 << 10;
        let sizes = [0usize, part, part + 7, 2 * part, 3, 1, 5];
        let names = ARRAY_FILES.iter().chain(&[METADATA_FILE, OWNER_MARKER]);
        for (index, (name, size)) in names.zip(sizes).enumerate() {
            let bytes: Vec<u8> = (0..size).map(|byte| ((byte + index) % 251) as u8).collect();
            fs::write(dir.join(name), bytes).unwrap();
        }
        fs::write(
            dir.join(MANIFEST_FILE),
            manifest_json(&dir, &ARRAY_FILES).unwrap(),
        )
        .unwrap();
        let store = Arc::new(Recording::default());
        let folder = url("s3://b/out/x");
        let dyn_store: Arc<dyn ObjectStore> = store.clone();
        runtime()
            .unwrap()
            .block_on(publish(dyn_store, &dir, &folder, part))
            .unwrap();
        for name in folder_files() {
            let key = format!("out/x/{name}");
            let local = fs::read(dir.join(name)).unwrap();
            assert_eq!(object(&store, &key).unwrap(), local, "{name}");
            assert_eq!(stored_sha256(&store, &key), sha256_hex(&local), "{name}");
        }
        let log = store.log.lock().unwrap().clone();
        assert_eq!(log.last().unwrap(), "put out/x/manifest.json");
        let multipart: Vec<&str> = log
            .iter()
            .filter_map(|line| line.strip_prefix("multipart out/x/"))
            .collect();
        assert_eq!(multipart, ["inst_len.npy", "resp_start.npy"], "{log:?}");
    }

    #[test]
    fn a_failed_upload_leaves_no_manifest_and_no_staging() {
        let root = tempfile::tempdir().unwrap();
        let input = jsonl(root.path(), "in.jsonl", &[("cot", "two", "five")]);
        let store = Arc::new(Recording {
            fail_on: Some("resp_len.npy".into()),
            ..Recording::default()
        });
        // A previous run's complete folder: it must not keep its manifest over new arrays.
        for name in folder_files() {
            put(&store, &format!("out/in.jsonl/{name}"), b"old");
        }
        let stores = ObjectStores::fixed(store.clone());
        let encoder = Encoder::new(word_tokenizer(), &word_spec()).unwrap();
        let job = FileJob {
            input: Location::Local(input),
            target: Location::Remote(url("s3://bucket/out/in.jsonl")),
            metadata: Map::new(),
        };
        let mut results = thread_pool(Some(2))
            .unwrap()
            .install(|| tokenize_files(&encoder, vec![job], &stores, 1, &|_| {}));
        let err = results.pop().unwrap().unwrap_err();
        assert!(err.to_string().contains("refused"), "{err}");
        assert_eq!(object(&store, "out/in.jsonl/manifest.json"), None);
        let log = store.log.lock().unwrap().clone();
        assert_eq!(log.first().unwrap(), "delete out/in.jsonl/manifest.json");
        assert!(!log
            .iter()
            .any(|line| line.starts_with("put") && line.ends_with(MANIFEST_FILE)));
    }

    #[test]
    fn a_streamed_object_reads_as_its_bytes_across_chunks() {
        let text = b"{\"condition\": \"cot\", \"instruction\": \"two\", \"response\": \"five\"}\n\n{\"condition\": \"\", \"instruction\": \"three\", \"response\": \"\"}\n";
        // Chunks of 1, 2, 3, ... bytes: every line break and UTF-8 byte at some boundary.
        let mut chunks = Vec::new();
        let (mut start, mut size) = (0, 1);
        while start < text.len() {
            let end = (start + size).min(text.len());
            chunks.push(Ok(Bytes::copy_from_slice(&text[start..end])));
            (start, size) = (end, size + 1);
        }
        chunks.push(Err(object_store::Error::Generic {
            store: "test",
            source: "connection reset".into(),
        }));
        let mut reader = ObjectReader {
            chunks: futures_util::stream::iter(chunks).boxed(),
            current: Bytes::new(),
            url: url("s3://b/c/in.jsonl"),
        };
        let mut read = vec![0u8; text.len()];
        reader.read_exact(&mut read).unwrap();
        assert_eq!(read, text);
        let err = reader.read(&mut [0u8; 4]).unwrap_err();
        assert!(err.to_string().contains("connection reset"), "{err}");

        let store = Arc::new(Recording::default());
        put(&store, "c/in.jsonl", text);
        let stores = ObjectStores::fixed(store);
        let mut rows = open_rows(&stores, &url("s3://b/c/in.jsonl"), 1).unwrap();
        let first = rows.next_batch().unwrap().unwrap();
        let second = rows.next_batch().unwrap().unwrap();
        assert_eq!((first[0].number, second[0].number), (1, 3));
        assert_eq!(second[0].instruction, "three");
        assert!(rows.next_batch().unwrap().is_none());
        assert!(open_rows(&stores, &url("s3://b/c/in.csv"), 1).is_err());
    }

    #[test]
    fn sizes_of_many_objects_in_windows() {
        let store = Arc::new(Recording::default());
        let count = HEADS_IN_FLIGHT * 2 + 3;
        let urls: Vec<ObjectUrl> = (0..count)
            .map(|index| url(&format!("s3://b/c/{index}.jsonl")))
            .collect();
        for (index, object) in urls.iter().enumerate().skip(1) {
            put(&store, &object.key, &vec![b'x'; index]);
        }
        let stores = ObjectStores::fixed(store);
        let sizes = object_sizes(&stores, &urls.iter().collect::<Vec<_>>());
        assert_eq!(sizes[0], None);
        for (index, size) in sizes.iter().enumerate().skip(1) {
            assert_eq!(*size, Some(index as u64));
        }
    }

    #[test]
    fn a_bad_row_in_an_object_names_its_url() {
        let root = tempfile::tempdir().unwrap();
        let input = jsonl(root.path(), "in.jsonl", &[("cot", "two", "five")]);
        let mut bytes = fs::read(&input).unwrap();
        bytes.extend_from_slice(
            b"{\"condition\": \"\", \"instruction\": null, \"response\": \"\"}\n",
        );
        let store = Arc::new(Recording::default());
        put(&store, "c/in.jsonl", &bytes);
        let stores = ObjectStores::fixed(store.clone());
        let encoder = Encoder::new(word_tokenizer(), &word_spec()).unwrap();
        let jobs = vec![
            FileJob {
                input: Location::Remote(url("s3://bkt/c/in.jsonl")),
                target: Location::Remote(url("s3://bkt/t/in.jsonl")),
                metadata: Map::new(),
            },
            FileJob {
                input: Location::Remote(url("s3://bkt/c/missing.jsonl")),
                target: Location::Local(root.path().join("out/missing.jsonl")),
                metadata: Map::new(),
            },
        ];
        let results = thread_pool(Some(2))
            .unwrap()
            .install(|| tokenize_files(&encoder, jobs, &stores, 1, &|_| {}));
        let text = results[0].as_ref().unwrap_err().to_string();
        assert_eq!(
            text,
            "s3://bkt/c/in.jsonl: row 2, field 'instruction': expected a string, got null"
        );
        assert!(matches!(
            results[1],
            Err(Error::Remote {
                kind: RemoteKind::NotFound,
                ..
            })
        ));
        assert!(store.log.lock().unwrap().is_empty());
        assert!(!root.path().join("out").join("missing.jsonl").exists());
    }
}
