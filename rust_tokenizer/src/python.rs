//! The PyO3 face of the core: one class, `Encoder`. It converts types, releases the GIL around
//! all heavy work and maps errors to Python exceptions:
//! - a bad row -> `hrm_assets.cleaning.rows.RowError` (a `ValueError` naming file, row and field), the
//!   same exception the Python reader raises;
//! - an unreadable file or a bad configuration -> `ValueError`;
//! - IO failures -> `OSError` (`FileNotFoundError`, `PermissionError` where they apply).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyPermissionError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::error::Error;
use crate::npy::read_plain_header;
use crate::npy::IntType;
use crate::sample::concat::{concatenate_tokens, TokenSource};
use crate::sample::epoch_draw::{write_epochs, RowTable, TaskRows, FIELDS};
use crate::sample::philox::{Philox, PhiloxState};
use crate::sample::spans::read_span_table;
use crate::tokenize::encode::{
    thread_pool, Encoder as CoreEncoder, EngineChoice, DEFAULT_BATCH_ROWS,
};
use crate::tokenize::frame::FramingSpec;
use crate::tokenize::write::{
    tokenize_files, tokenize_to_folder, FileJob, ARRAY_FILES, MANIFEST_FILE, MANIFEST_FORMAT,
    METADATA_FILE, OWNER_MARKER,
};

fn to_py_err(py: Python<'_>, err: Error) -> PyErr {
    let message = err.to_string();
    match err {
        Error::Row {
            path,
            row,
            field,
            problem,
        } => {
            let row_error = py
                .import("hrm_assets.cleaning.rows")
                .and_then(|module| module.getattr("RowError"))
                .and_then(|class| class.call1((path.display().to_string(), row, field, problem)));
            match row_error {
                Ok(instance) => PyErr::from_value(instance),
                Err(_) => PyValueError::new_err(message),
            }
        }
        Error::File { .. } | Error::Config(_) => PyValueError::new_err(message),
        Error::Io { path, source } => match source.raw_os_error() {
            // OSError(errno, strerror, filename), as Python's own IO raises it: the subclass
            // follows errno (FileNotFoundError, ...) and `filename` names the file.
            Some(code) => {
                let strerror = py
                    .import("os")
                    .and_then(|os| os.call_method1("strerror", (code,)))
                    .and_then(|text| text.extract::<String>())
                    .unwrap_or_else(|_| source.to_string());
                PyOSError::new_err((code, strerror, path.display().to_string()))
            }
            None => match source.kind() {
                std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(message),
                std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(message),
                _ => PyOSError::new_err(message),
            },
        },
    }
}

/// The shortest time between two progress reports to Python.
const PROGRESS_INTERVAL: std::time::Duration = std::time::Duration::from_millis(200);

/// Counts of work done, handed to a Python `progress(count)` at most every `PROGRESS_INTERVAL`
/// (each call takes the GIL, which the caller's other threads are using meanwhile). The first
/// exception the callback raises is kept and stops the work; [`ThrottledProgress::finish`]
/// raises it, or reports what is left.
struct ThrottledProgress<'a> {
    callback: Option<&'a Py<PyAny>>,
    unreported: u64,
    last_report: Instant,
    error: Option<PyErr>,
}

impl<'a> ThrottledProgress<'a> {
    fn new(callback: Option<&'a Py<PyAny>>) -> Self {
        ThrottledProgress {
            callback,
            unreported: 0,
            last_report: Instant::now(),
            error: None,
        }
    }

    /// Count `done` more (without the GIL); answers whether to go on.
    fn add(&mut self, done: u64) -> bool {
        self.unreported += done;
        let Some(callback) = self.callback else {
            return true;
        };
        if self.error.is_some() || self.last_report.elapsed() < PROGRESS_INTERVAL {
            return self.error.is_none();
        }
        self.error = Python::attach(|py| callback.call1(py, (self.unreported,)).err());
        self.unreported = 0;
        self.last_report = Instant::now();
        self.error.is_none()
    }

    /// After the work: the callback's exception if it raised one, else (when the work
    /// `succeeded`) a last report of the counts not yet reported.
    fn finish(self, py: Python<'_>, succeeded: bool) -> PyResult<()> {
        if let Some(err) = self.error {
            return Err(err);
        }
        if let (Some(callback), true, true) = (self.callback, succeeded, self.unreported > 0) {
            callback.call1(py, (self.unreported,))?;
        }
        Ok(())
    }
}

/// Texts whose ids become Python lists between two offers of the GIL to other threads.
const CONVERSION_CHUNK: usize = 256;

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
    /// SHA-256. Returns `{"rows", "tokens", "text_bytes", "nulls", "seconds"}`.
    #[pyo3(signature = (input_path, output_dir, metadata_json, num_threads = None, batch_rows = DEFAULT_BATCH_ROWS))]
    fn tokenize_file<'py>(
        &self,
        py: Python<'py>,
        input_path: PathBuf,
        output_dir: PathBuf,
        metadata_json: &str,
        num_threads: Option<usize>,
        batch_rows: usize,
    ) -> PyResult<Bound<'py, PyDict>> {
        let metadata: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(metadata_json).map_err(|err| {
                PyValueError::new_err(format!("metadata_json must be a JSON object: {err}"))
            })?;
        let encoder = &self.inner;
        let started = Instant::now();
        let stats = py
            .detach(|| {
                thread_pool(num_threads)?.install(|| {
                    tokenize_to_folder(encoder, &input_path, &output_dir, metadata, batch_rows)
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
    /// `jobs` are `(input_path, output_dir, metadata_json)`. Returns one item per job, in
    /// order: `{"rows", "tokens", "text_bytes", "nulls"}`, or the exception that job raised (not raised here, so
    /// one bad file does not hide the others). `progress(bytes)` receives input bytes of
    /// finished files, at most every 200 ms and once at the end.
    #[pyo3(signature = (jobs, num_threads = None, batch_rows = DEFAULT_BATCH_ROWS, progress = None))]
    fn tokenize_files<'py>(
        &self,
        py: Python<'py>,
        jobs: Vec<(PathBuf, PathBuf, String)>,
        num_threads: Option<usize>,
        batch_rows: usize,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let jobs = jobs
            .into_iter()
            .map(|(input, target, metadata_json)| {
                let metadata = serde_json::from_str(&metadata_json).map_err(|err| {
                    PyValueError::new_err(format!(
                        "{}: metadata_json must be a JSON object: {err}",
                        input.display()
                    ))
                })?;
                Ok(FileJob {
                    input,
                    target,
                    metadata,
                })
            })
            .collect::<PyResult<Vec<FileJob>>>()?;
        let encoder = &self.inner;
        let reporter = std::sync::Mutex::new(ThrottledProgress::new(progress.as_ref()));
        let results = py.detach(|| {
            let pool = thread_pool(num_threads)?;
            Ok::<_, Error>(pool.install(|| {
                tokenize_files(encoder, jobs, batch_rows, &|bytes| {
                    reporter.lock().unwrap().add(bytes);
                })
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

/// Write `header`, then every source's elements cast to `dtype` (a numpy type string; low
/// bits kept, as numpy's unsafe cast), into `destination`, fsynced. `sources` are
/// `(path, numpy type string, element count, data offset)`. `progress(elements)` receives the
/// elements hashed since its last call, at most every 200 ms and once at the end; an exception
/// it raises stops the copy and propagates. Returns `(largest source value or None, sha256 hex, size in bytes)`.
#[pyfunction]
#[pyo3(signature = (destination, header, sources, dtype, workers = 2, block_elements = 1 << 19, progress = None))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn concatenate_token_arrays(
    py: Python<'_>,
    destination: PathBuf,
    header: Vec<u8>,
    sources: Vec<(PathBuf, String, u64, u64)>,
    dtype: &str,
    workers: usize,
    block_elements: usize,
    progress: Option<Py<PyAny>>,
) -> PyResult<(Option<i128>, String, u64)> {
    let parse = |sources: Vec<(PathBuf, String, u64, u64)>| -> crate::Result<Vec<TokenSource>> {
        sources
            .into_iter()
            .map(|(path, descr, count, data_offset)| {
                Ok(TokenSource {
                    element: IntType::parse(&descr)?,
                    path,
                    count,
                    data_offset,
                })
            })
            .collect()
    };
    let sources = parse(sources).map_err(|err| to_py_err(py, err))?;
    let target = IntType::parse(dtype).map_err(|err| to_py_err(py, err))?;
    let mut report = ThrottledProgress::new(progress.as_ref());
    let result = py.detach(|| {
        concatenate_tokens(
            &destination,
            &header,
            &sources,
            target,
            workers,
            block_elements,
            &mut |elements| report.add(elements),
        )
    });
    // An exception in the callback stopped the copy: it is raised rather than the stop.
    report.finish(py, result.is_ok())?;
    let done = result.map_err(|err| to_py_err(py, err))?;
    Ok((done.max_id, done.sha256, done.size))
}

/// numpy's `Philox.state` as plain values: `(counter, key, buffer, buffer_pos, has_uint32,
/// uinteger)`.
type PhiloxTuple = ([u64; 4], [u64; 2], [u64; 4], usize, bool, u32);

fn philox_from(state: PhiloxTuple) -> PyResult<Philox> {
    let (counter, key, buffer, buffer_pos, has_uint32, uinteger) = state;
    if buffer_pos > 4 {
        return Err(PyValueError::new_err(format!(
            "Philox buffer_pos must be at most 4, not {buffer_pos}"
        )));
    }
    Ok(Philox::from_state(PhiloxState {
        counter,
        key,
        buffer,
        buffer_pos,
        has_uint32,
        uinteger,
    }))
}

fn philox_tuple(rng: &Philox) -> PhiloxTuple {
    let state = rng.state();
    (
        state.counter,
        state.key,
        state.buffer,
        state.buffer_pos,
        state.has_uint32,
        state.uinteger,
    )
}

/// `Generator(Philox).permutation(n)` from numpy's Philox state; returns the permutation and
/// the state after it.
#[pyfunction]
fn philox_permutation(state: PhiloxTuple, n: usize) -> PyResult<(Vec<u64>, PhiloxTuple)> {
    let mut rng = philox_from(state)?;
    let permutation = rng.permutation(n);
    Ok((permutation, philox_tuple(&rng)))
}

/// The memory of a C-contiguous int64 array, borrowed for as long as `buffer` is held.
fn int64_slice<'a>(buffer: &'a PyBuffer<i64>, name: &str) -> PyResult<&'a [i64]> {
    if !buffer.is_c_contiguous() {
        return Err(PyValueError::new_err(format!(
            "{name} must be C-contiguous"
        )));
    }
    // SAFETY: PyBuffer checked the element type and alignment; the buffer keeps the memory
    // alive, and the caller does not change these arrays while the call runs.
    Ok(unsafe { std::slice::from_raw_parts(buffer.buf_ptr().cast::<i64>(), buffer.item_count()) })
}

/// Draw `epochs` epochs as data_io does (`rust_tokenizer/src/sample/epoch_draw.rs`) from numpy's Philox
/// state, and write `output_dir/epoch_<n>/<field>.npy` (int64, fsynced) for each
/// `(field, values)` of `fields`, every array one value per kept row. `lengths` are the rows'
/// tokens; `tasks` are `(rows, rows_per_epoch)` in table order; `hits` (int64, writable) gets
/// each row's draw count added. `progress()` is called after each epoch; an exception it raises
/// stops the draw. Returns `(tokens per epoch, [(relative path, size, sha256)], Philox state)`.
#[pyfunction]
#[pyo3(signature = (output_dir, fields, lengths, tasks, epochs, state, hits, progress = None))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn write_epoch_arrays(
    py: Python<'_>,
    output_dir: PathBuf,
    fields: Vec<(String, PyBuffer<i64>)>,
    lengths: PyBuffer<i64>,
    tasks: Vec<(u64, u64)>,
    epochs: usize,
    state: PhiloxTuple,
    hits: PyBuffer<i64>,
    progress: Option<Py<PyAny>>,
) -> PyResult<(Vec<i64>, Vec<(String, u64, String)>, PhiloxTuple)> {
    let mut rng = philox_from(state)?;
    let columns = fields
        .iter()
        .map(|(name, values)| Ok((name.as_str(), int64_slice(values, name)?)))
        .collect::<PyResult<Vec<_>>>()?;
    let columns: [(&str, &[i64]); FIELDS] = columns.try_into().map_err(|columns: Vec<_>| {
        PyValueError::new_err(format!("{FIELDS} fields expected, got {}", columns.len()))
    })?;
    let tasks: Vec<TaskRows> = tasks
        .into_iter()
        .map(|(rows, per_epoch)| TaskRows { rows, per_epoch })
        .collect();
    let table = RowTable {
        fields: columns,
        lengths: int64_slice(&lengths, "lengths")?,
        tasks: &tasks,
    };
    if hits.readonly() {
        return Err(PyValueError::new_err("hits must be writable"));
    }
    let hits_len = int64_slice(&hits, "hits")?.len();
    // SAFETY: as in `int64_slice`; `hits` is writable and is no other argument's memory.
    let hits = unsafe { std::slice::from_raw_parts_mut(hits.buf_ptr().cast::<i64>(), hits_len) };
    let mut callback_error: Option<PyErr> = None;
    let result = py.detach(|| {
        let mut report = || {
            let Some(callback) = &progress else {
                return true;
            };
            callback_error = Python::attach(|py| callback.call0(py).err());
            callback_error.is_none()
        };
        write_epochs(&output_dir, &table, epochs, &mut rng, hits, &mut report)
    });
    if let Some(err) = callback_error {
        return Err(err);
    }
    let done = result.map_err(|err| to_py_err(py, err))?;
    let written = done
        .written
        .into_iter()
        .map(|array| (array.relative, array.size, array.sha256))
        .collect();
    Ok((done.tokens, written, philox_tuple(&rng)))
}

/// Every folder's `<field>.npy` for the four span `fields`, back to back as int64, checked
/// against each folder's token count (`rust_tokenizer/src/sample/spans.rs`). Returns `(four bytes
/// objects of int64 values, rows per folder, first inconsistent folder or None)`, or None when
/// some file is not a plain `numpy.save` array or a folder's arrays differ in length (the
/// caller reads those its own way). `progress(folders)` gets the folders read since its last
/// call, at most every 200 ms and once at the end.
#[pyfunction]
#[pyo3(signature = (folders, fields, token_counts, progress = None))]
#[allow(clippy::type_complexity)]
fn read_span_columns<'py>(
    py: Python<'py>,
    folders: Vec<PathBuf>,
    fields: Vec<String>,
    token_counts: Vec<u64>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Option<(Vec<Bound<'py, PyBytes>>, Vec<u64>, Option<usize>)>> {
    let names: [&str; FIELDS] = fields
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .try_into()
        .map_err(|_| PyValueError::new_err(format!("{FIELDS} fields expected")))?;
    if folders.len() != token_counts.len() {
        return Err(PyValueError::new_err("one token count per folder expected"));
    }
    let mut report = ThrottledProgress::new(progress.as_ref());
    let table = py.detach(|| {
        read_span_table(&folders, &names, &token_counts, &mut |folders| {
            report.add(folders as u64)
        })
    });
    report.finish(py, table.is_some())?;
    let Some(table) = table else {
        return Ok(None);
    };
    let columns = table
        .columns
        .iter()
        .map(|column| {
            PyBytes::new_with(py, column.len() * 8, |bytes| {
                for (slot, value) in bytes.chunks_exact_mut(8).zip(column) {
                    slot.copy_from_slice(&value.to_ne_bytes());
                }
                Ok(())
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok(Some((columns, table.rows, table.first_inconsistent)))
}

/// The header of the `.npy` file at `path`: `(descr, fortran_order, shape, data_offset)`, when
/// it is a plain 1-D integer header as `numpy.save` or `ndarray-npy` write them
/// (`rust_tokenizer/src/npy/`); `None` for any other header, which numpy's own parser reads.
/// Raises `OSError` (with errno and filename) if the file cannot be read.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn read_npy_header(
    py: Python<'_>,
    path: PathBuf,
) -> PyResult<Option<(String, bool, (u64,), usize)>> {
    let header = py
        .detach(|| read_plain_header(&path))
        .map_err(|err| to_py_err(py, err))?;
    Ok(header.map(|header| {
        (
            header.descr().to_string(),
            false,
            (header.len,),
            header.data_offset,
        )
    }))
}

#[pymodule]
fn _core(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Encoder>()?;
    module.add_function(wrap_pyfunction!(concatenate_token_arrays, module)?)?;
    module.add_function(wrap_pyfunction!(philox_permutation, module)?)?;
    module.add_function(wrap_pyfunction!(write_epoch_arrays, module)?)?;
    module.add_function(wrap_pyfunction!(read_span_columns, module)?)?;
    module.add_function(wrap_pyfunction!(read_npy_header, module)?)?;
    module.add("FORMAT_VERSION", crate::tokenize::FORMAT_VERSION)?;
    module.add("OWNER_MARKER", OWNER_MARKER)?;
    module.add("METADATA_FILE", METADATA_FILE)?;
    module.add("MANIFEST_FILE", MANIFEST_FILE)?;
    module.add("MANIFEST_FORMAT", MANIFEST_FORMAT)?;
    module.add("ARRAY_FILES", ARRAY_FILES.to_vec())?;
    module.add("DEFAULT_BATCH_ROWS", DEFAULT_BATCH_ROWS)?;
    Ok(())
}
