//! Bindings of tokenization: the `Encoder` class (tokenize files into data_io's folders) and
//! the names of a tokenized folder's files.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::errors::to_py_err;
use super::ngram::NgramIndex;
use super::progress::ThrottledProgress;
use crate::error::Error;
use crate::ngram::observe::{RowObserver, KEYS_FILE, SCAN_FILE, SCAN_FORMAT};
use crate::storage::{Location, ObjectStores};
use crate::tokenize::encode::{
    thread_pool, Encoder as CoreEncoder, EngineChoice, DEFAULT_BATCH_ROWS,
};
use crate::tokenize::frame::FramingSpec;
use crate::tokenize::write::{
    tokenize_files, tokenize_files_observed, FileJob, ARRAY_FILES, MANIFEST_FILE, MANIFEST_FORMAT,
    METADATA_FILE, OWNER_MARKER, TOKENIZED_KIND,
};
use crate::tokenize::FORMAT_VERSION;

/// Texts whose ids become Python lists between two offers of the GIL to other threads.
const CONVERSION_CHUNK: usize = 256;
/// Characters of a hit row's text kept in the scan sidecar (as `NgramIndex.scan_file` keeps).
const MAX_SPAN_CHARS: usize = 300;

/// A tokenizer (`tokenizer.json`) with data_io's framing tokens, ready to encode files.
#[pyclass(module = "hrm_assets._core", frozen)]
struct Encoder {
    inner: Arc<CoreEncoder>,
}

#[pymethods]
impl Encoder {
    /// `engine`: "auto" (the fast engine when the tokenizer is of its family), "fast" (an error
    /// if it is not) or "reference" (the `tokenizers` crate).
    #[new]
    #[pyo3(signature = (tokenizer_path, boq, eoq, eoa, conditions, engine = "auto"))]
    fn new(
        py: Python<'_>,
        tokenizer_path: PathBuf,
        boq: String,
        eoq: String,
        eoa: String,
        conditions: BTreeMap<String, String>,
        engine: &str,
    ) -> PyResult<Self> {
        let spec = FramingSpec {
            boq,
            eoq,
            eoa,
            conditions,
        };
        let engine: EngineChoice = engine.parse().map_err(|err| to_py_err(py, err))?;
        let encoder = py
            .detach(|| CoreEncoder::from_file_with_engine(&tokenizer_path, &spec, engine))
            .map_err(|err| to_py_err(py, err))?;
        Ok(Encoder {
            inner: Arc::new(encoder),
        })
    }

    /// The engine in use: "fast" or "reference".
    #[getter]
    fn engine(&self) -> &'static str {
        self.inner.engine().name()
    }

    /// Why the reference engine is in use; `None` when the fast one is.
    #[getter]
    fn fallback_reason(&self) -> Option<String> {
        self.inner.fallback_reason().map(str::to_string)
    }

    /// Vocabulary size including added tokens.
    #[getter]
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }

    /// The framing ids: `{"boq": id, "eoq": id, "eoa": id, "conditions": {tag: id}}`.
    #[getter]
    fn framing_ids<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let framing = self.inner.framing();
        let ids = PyDict::new(py);
        ids.set_item("boq", framing.boq)?;
        ids.set_item("eoq", framing.eoq)?;
        ids.set_item("eoa", framing.eoa)?;
        ids.set_item("conditions", framing.tags.clone())?;
        Ok(ids)
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// Token ids of each text (no automatic special tokens; special-token strings are text).
    #[pyo3(signature = (texts, num_threads = None))]
    fn encode_texts<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<String>,
        num_threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        let encoder = &self.inner;
        let ids = py
            .detach(|| thread_pool(num_threads)?.install(|| encoder.encode_texts(&texts)))
            .map_err(|err| to_py_err(py, err))?;
        // Making the Python ints needs the GIL and can take longer than encoding: offer it to
        // other threads between chunks rather than hold it for the whole list.
        let lists = PyList::empty(py);
        for chunk in ids.chunks(CONVERSION_CHUNK) {
            for text_ids in chunk {
                lists.append(PyList::new(py, text_ids)?)?;
            }
            py.detach(|| ());
        }
        Ok(lists)
    }

    /// Tokenize one cleaned file into the folder `output_dir`, replacing it atomically.
    ///
    /// `metadata_json` is a JSON object written as the folder's `metadata.json`, with `rows`,
    /// `tokens`, `text_bytes` and `nulls` added; `manifest.json` records each array's size and
    /// SHA-256. Either path may be an `s3://bucket/key` URL (see `tokenize_files`). Returns
    /// `{"rows", "tokens", "text_bytes", "nulls", "seconds"}`.
    #[pyo3(signature = (input_path, output_dir, metadata_json, num_threads = None, batch_rows = DEFAULT_BATCH_ROWS, storage_options = None))]
    #[allow(clippy::too_many_arguments)]
    fn tokenize_file<'py>(
        &self,
        py: Python<'py>,
        input_path: PathBuf,
        output_dir: PathBuf,
        metadata_json: &str,
        num_threads: Option<usize>,
        batch_rows: usize,
        storage_options: Option<HashMap<String, String>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let metadata: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(metadata_json).map_err(|err| {
                PyValueError::new_err(format!("metadata_json must be a JSON object: {err}"))
            })?;
        let job = file_job(py, input_path, output_dir, metadata)?;
        let stores = object_stores(py, storage_options)?;
        let encoder = &self.inner;
        let started = Instant::now();
        let stats = py
            .detach(|| {
                thread_pool(num_threads)?.install(|| {
                    let mut results =
                        tokenize_files(encoder, vec![job], &stores, batch_rows, &|_| {});
                    results.pop().expect("one result per job")
                })
            })
            .map_err(|err| to_py_err(py, err))?;
        let result = PyDict::new(py);
        result.set_item("rows", stats.rows)?;
        result.set_item("tokens", stats.tokens)?;
        result.set_item("text_bytes", stats.text_bytes)?;
        result.set_item("nulls", stats.nulls)?;
        result.set_item("seconds", started.elapsed().as_secs_f64())?;
        Ok(result)
    }

    /// Tokenize many cleaned files into their folders in one call, several files at once,
    /// with one durable sync for the batch (see `tokenize::write::tokenize_files`).
    ///
    /// `jobs` are `(input_path, output_dir, metadata_json)`; either path may be an
    /// `s3://bucket/key` URL, reached through `storage_options` (object_store
    /// `AmazonS3ConfigKey` names) over the AWS environment. Returns one item per job, in order:
    /// `{"rows", "tokens", "text_bytes", "nulls"}`, or the exception that job raised (not raised
    /// here, so one bad file does not hide the others). `progress(bytes)` receives input bytes
    /// of finished files, at most every 200 ms and once at the end.
    ///
    /// With `observe`, every row of each job is also keyed for duplicates and, with
    /// `scan_index` (an `NgramIndex`), scanned for contamination in the same read; the outcome
    /// is written into the folder (a remote one: published with it) as the sidecars
    /// `contamination.json` (recording `scan_label`, a JSON value) and `duplicate_keys.u64`,
    /// which no array or manifest covers.
    #[pyo3(signature = (jobs, num_threads = None, batch_rows = DEFAULT_BATCH_ROWS, progress = None, storage_options = None, observe = false, scan_index = None, scan_label = None))]
    #[allow(clippy::too_many_arguments)]
    fn tokenize_files<'py>(
        &self,
        py: Python<'py>,
        jobs: Vec<(PathBuf, PathBuf, String)>,
        num_threads: Option<usize>,
        batch_rows: usize,
        progress: Option<Py<PyAny>>,
        storage_options: Option<HashMap<String, String>>,
        observe: bool,
        scan_index: Option<PyRef<'py, NgramIndex>>,
        scan_label: Option<&str>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let label: serde_json::Value = match scan_label {
            None => serde_json::Value::Null,
            Some(text) => serde_json::from_str(text)
                .map_err(|err| PyValueError::new_err(format!("scan_label must be JSON: {err}")))?,
        };
        let observer = observe.then(|| RowObserver {
            index: scan_index.as_deref().map(|index| &index.inner),
            label,
            max_span_chars: MAX_SPAN_CHARS,
        });
        let jobs = jobs
            .into_iter()
            .map(|(input, target, metadata_json)| {
                let metadata = serde_json::from_str(&metadata_json).map_err(|err| {
                    PyValueError::new_err(format!(
                        "{}: metadata_json must be a JSON object: {err}",
                        input.display()
                    ))
                })?;
                file_job(py, input, target, metadata)
            })
            .collect::<PyResult<Vec<FileJob>>>()?;
        let stores = object_stores(py, storage_options)?;
        let encoder = &self.inner;
        let reporter = std::sync::Mutex::new(ThrottledProgress::new(progress.as_ref()));
        let results = py.detach(|| {
            let pool = thread_pool(num_threads)?;
            Ok::<_, Error>(pool.install(|| {
                tokenize_files_observed(
                    encoder,
                    jobs,
                    &stores,
                    batch_rows,
                    &|bytes| {
                        reporter.lock().unwrap().add(bytes);
                    },
                    observer.as_ref(),
                )
            }))
        });
        let results = results.map_err(|err| to_py_err(py, err))?;
        reporter.into_inner().unwrap().finish(py, true)?;
        results
            .into_iter()
            .map(|result| match result {
                Ok(stats) => {
                    let item = PyDict::new(py);
                    item.set_item("rows", stats.rows)?;
                    item.set_item("tokens", stats.tokens)?;
                    item.set_item("text_bytes", stats.text_bytes)?;
                    item.set_item("nulls", stats.nulls)?;
                    Ok(item.into_any())
                }
                Err(err) => Ok(to_py_err(py, err).into_value(py).into_bound(py).into_any()),
            })
            .collect()
    }
}

/// A job from the paths Python gave: each a local path or an `s3://` URL (`ValueError` for a
/// malformed URL).
fn file_job(
    py: Python<'_>,
    input: PathBuf,
    target: PathBuf,
    metadata: serde_json::Map<String, serde_json::Value>,
) -> PyResult<FileJob> {
    Ok(FileJob {
        input: Location::parse(&input).map_err(|err| to_py_err(py, err))?,
        target: Location::parse(&target).map_err(|err| to_py_err(py, err))?,
        metadata,
    })
}

/// The stores for `s3://` locations, configured by `options` over the AWS environment
/// (`ValueError` naming an unknown option).
fn object_stores(
    py: Python<'_>,
    options: Option<HashMap<String, String>>,
) -> PyResult<ObjectStores> {
    let options = options.unwrap_or_default();
    ObjectStores::new(
        options
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str())),
    )
    .map_err(|err| to_py_err(py, err))
}

/// Add the class and the constants of tokenized folders to `module`.
pub(super) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Encoder>()?;
    module.add("FORMAT_VERSION", FORMAT_VERSION)?;
    module.add("OWNER_MARKER", OWNER_MARKER)?;
    module.add("METADATA_FILE", METADATA_FILE)?;
    module.add("MANIFEST_FILE", MANIFEST_FILE)?;
    module.add("MANIFEST_FORMAT", MANIFEST_FORMAT)?;
    module.add("TOKENIZED_KIND", TOKENIZED_KIND)?;
    module.add("ARRAY_FILES", ARRAY_FILES.to_vec())?;
    module.add("DEFAULT_BATCH_ROWS", DEFAULT_BATCH_ROWS)?;
    module.add("SCAN_SIDECAR_FILE", SCAN_FILE)?;
    module.add("SCAN_SIDECAR_FORMAT", SCAN_FORMAT)?;
    module.add("KEYS_SIDECAR_FILE", KEYS_FILE)?;
    Ok(())
}
