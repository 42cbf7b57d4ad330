//! Binding of the JSON lines of text columns (`rust_tokenizer/src/jsonl.rs`): `json_lines`.

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::errors::to_py_err;
use crate::jsonl::{json_lines as core_json_lines, TextColumn};

/// The memory of a C-contiguous buffer, borrowed for as long as `buffer` is held.
fn slice_of<'a, T: pyo3::buffer::Element>(
    buffer: &'a PyBuffer<T>,
    what: &str,
) -> PyResult<&'a [T]> {
    if !buffer.is_c_contiguous() {
        return Err(PyValueError::new_err(format!(
            "{what} must be C-contiguous"
        )));
    }
    // SAFETY: PyBuffer checked the element type and alignment; the buffer keeps the memory
    // alive for the call, and the caller does not change it while the call runs.
    Ok(unsafe { std::slice::from_raw_parts(buffer.buf_ptr().cast::<T>(), buffer.item_count()) })
}

/// The rows of the text columns as JSON lines, byte for byte orjson's
/// `dumps({key: value, ...}) + b"\n"` a row, keys in `keys` order, without the GIL. Column `i`
/// is `offsets[i]` (int64, rows + 1, Arrow's layout) into the bytes `data[i]`; `valid[i]`
/// (uint8, one a row, 0: null) or None. A bad shape or text that is not UTF-8 is a ValueError
/// naming the column and row.
#[pyfunction]
fn json_lines<'py>(
    py: Python<'py>,
    keys: Vec<String>,
    offsets: Vec<PyBuffer<i64>>,
    data: Vec<PyBuffer<u8>>,
    valid: Vec<Option<PyBuffer<u8>>>,
) -> PyResult<Bound<'py, PyBytes>> {
    if offsets.len() != keys.len() || data.len() != keys.len() || valid.len() != keys.len() {
        return Err(PyValueError::new_err(
            "keys, offsets, data and valid must have one item per column",
        ));
    }
    let mut columns = Vec::with_capacity(keys.len());
    for (index, key) in keys.iter().enumerate() {
        columns.push(TextColumn {
            key,
            offsets: slice_of(&offsets[index], "offsets")?,
            data: slice_of(&data[index], "data")?,
            valid: valid[index]
                .as_ref()
                .map(|buffer| slice_of(buffer, "valid"))
                .transpose()?,
        });
    }
    let lines = py
        .detach(|| core_json_lines(&columns))
        .map_err(|err| to_py_err(py, err))?;
    Ok(PyBytes::new(py, &lines))
}

/// Add the JSON lines function to `module`.
pub(super) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(json_lines, module)?)?;
    Ok(())
}
