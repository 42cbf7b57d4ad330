//! Bindings of sampling: the Philox permutation, the epoch draw, the span table and the copy of
//! every task's tokens into one array.

use std::path::PathBuf;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::buffers::contiguous_slice;
use super::errors::to_py_err;
use super::progress::ThrottledProgress;
use crate::npy::IntType;
use crate::sample::concat::{concatenate_tokens, TokenSource};
use crate::sample::epoch_draw::{write_epochs, RowTable, TaskRows, FIELDS};
use crate::sample::philox::{Philox, PhiloxState};
use crate::sample::spans::read_span_table;

/// Write `header`, then every source's elements cast to `dtype` (a numpy type string; low
/// bits kept, as numpy's unsafe cast), into `destination`, fsynced. `sources` are
/// `(path, numpy type string, element count, data offset)`. `progress(elements)` receives the
/// elements hashed since its last call, at most every 200 ms and once at the end; an exception
/// it raises stops the copy and propagates. Returns `(largest source value or None, sha256
/// hex, size in bytes)`.
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

/// Draw `epochs` epochs as data_io does (`rust_tokenizer/src/sample/epoch_draw.rs`) from
/// numpy's Philox state, and write `output_dir/epoch_<n>/<field>.npy` (int64, fsynced) for
/// each `(field, values)` of `fields`, every array one value per kept row. `lengths` are the
/// rows' tokens; `tasks` are `(rows, rows_per_epoch)` in table order; `hits` (int64, writable) gets
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
        .map(|(name, values)| Ok((name.as_str(), contiguous_slice(values, name)?)))
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
        lengths: contiguous_slice(&lengths, "lengths")?,
        tasks: &tasks,
    };
    if hits.readonly() {
        return Err(PyValueError::new_err("hits must be writable"));
    }
    let hits_len = contiguous_slice(&hits, "hits")?.len();
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

/// Every folder's `<field>.npy` for the four span `fields`, back to back as int64
/// (`rust_tokenizer/src/sample/spans.rs`; the caller checks them against the span rule).
/// Returns `(four bytes objects of int64 values, rows per folder)`, or None
/// when some file is not a plain 1-D integer array (as `numpy.save` or `ndarray-npy` write it)
/// or a folder's arrays differ in length (the caller reads those its own way).
/// `progress(folders)` gets the folders read since its last call, at most every 200 ms and once
/// at the end.
#[pyfunction]
#[pyo3(signature = (folders, fields, progress = None))]
#[allow(clippy::type_complexity)]
fn read_span_columns<'py>(
    py: Python<'py>,
    folders: Vec<PathBuf>,
    fields: Vec<String>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Option<(Vec<Bound<'py, PyBytes>>, Vec<u64>)>> {
    let names: [&str; FIELDS] = fields
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .try_into()
        .map_err(|_| PyValueError::new_err(format!("{FIELDS} fields expected")))?;
    let mut report = ThrottledProgress::new(progress.as_ref());
    let table =
        py.detach(|| read_span_table(&folders, &names, &mut |folders| report.add(folders as u64)));
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
    Ok(Some((columns, table.rows)))
}

/// Copy `lengths[i]` bytes of `source` from `starts[i]` to `destinations[i]` in `target`, for
/// every `i` (`rust_tokenizer/src/sample/gather.rs`), without the GIL. `source` and `target`
/// are byte buffers (`memoryview(array).cast("B")`), `target` writable; the three others
/// C-contiguous int64. A range outside either buffer is a ValueError naming it, and then
/// nothing is copied.
#[pyfunction]
fn copy_byte_ranges(
    py: Python<'_>,
    source: PyBuffer<u8>,
    target: PyBuffer<u8>,
    starts: PyBuffer<i64>,
    lengths: PyBuffer<i64>,
    destinations: PyBuffer<i64>,
) -> PyResult<()> {
    if !source.is_c_contiguous() || !target.is_c_contiguous() {
        return Err(PyValueError::new_err(
            "source and target must be C-contiguous",
        ));
    }
    if target.readonly() {
        return Err(PyValueError::new_err("target must be writable"));
    }
    let (starts, lengths, destinations) = (
        contiguous_slice(&starts, "starts")?,
        contiguous_slice(&lengths, "lengths")?,
        contiguous_slice(&destinations, "destinations")?,
    );
    // SAFETY: PyBuffer checked the item type (bytes) and contiguity; the buffers keep their
    // memory alive for the call. The caller passes a target that is not the source's memory.
    let source =
        unsafe { std::slice::from_raw_parts(source.buf_ptr().cast::<u8>(), source.item_count()) };
    let target = unsafe {
        std::slice::from_raw_parts_mut(target.buf_ptr().cast::<u8>(), target.item_count())
    };
    py.detach(|| {
        crate::sample::gather::copy_byte_ranges(source, target, starts, lengths, destinations)
    })
    .map_err(PyValueError::new_err)
}

/// Add the sampling functions to `module`.
pub(super) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("SAMPLE_SOURCE_SHA256", crate::sample::SOURCE_SHA256)?;
    module.add_function(wrap_pyfunction!(concatenate_token_arrays, module)?)?;
    module.add_function(wrap_pyfunction!(philox_permutation, module)?)?;
    module.add_function(wrap_pyfunction!(write_epoch_arrays, module)?)?;
    module.add_function(wrap_pyfunction!(read_span_columns, module)?)?;
    module.add_function(wrap_pyfunction!(copy_byte_ranges, module)?)?;
    Ok(())
}
