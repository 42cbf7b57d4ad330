//! Binding of the JSON lines of text columns (`rust_tokenizer/src/jsonl.rs`): `json_lines`,
//! and `JsonLines`, the same lines encoded into one buffer that a writer reuses batch after
//! batch and hands to a file's `write` without a copy.

use std::ffi::{c_int, c_void};

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::buffers::contiguous_slice;
use super::errors::to_py_err;
use crate::jsonl::{json_lines as core_json_lines, json_lines_into, TextColumn};

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
    let columns = text_columns(&keys, &offsets, &data, &valid)?;
    let lines = py
        .detach(|| core_json_lines(&columns))
        .map_err(|err| to_py_err(py, err))?;
    Ok(PyBytes::new(py, &lines))
}

/// The core's columns over the Python buffers, one item of each list per column.
fn text_columns<'a>(
    keys: &'a [String],
    offsets: &'a [PyBuffer<i64>],
    data: &'a [PyBuffer<u8>],
    valid: &'a [Option<PyBuffer<u8>>],
) -> PyResult<Vec<TextColumn<'a>>> {
    if offsets.len() != keys.len() || data.len() != keys.len() || valid.len() != keys.len() {
        return Err(PyValueError::new_err(
            "keys, offsets, data and valid must have one item per column",
        ));
    }
    let mut columns = Vec::with_capacity(keys.len());
    for (index, key) in keys.iter().enumerate() {
        columns.push(TextColumn {
            key,
            offsets: contiguous_slice(&offsets[index], "offsets")?,
            data: contiguous_slice(&data[index], "data")?,
            valid: valid[index]
                .as_ref()
                .map(|buffer| contiguous_slice(buffer, "valid"))
                .transpose()?,
        });
    }
    Ok(columns)
}

/// The JSON lines of one batch at a time in a buffer kept from batch to batch (its pages
/// touched once, not mapped and zeroed again for every batch), read through the buffer
/// protocol: `file.write(lines)` writes them without a copy. `encode` refuses to change the
/// lines while a view of them is held.
#[pyclass(module = "hrm_assets._core")]
struct JsonLines {
    lines: Vec<u8>,
    views: usize,
}

#[pymethods]
impl JsonLines {
    #[new]
    fn new() -> Self {
        Self {
            lines: Vec::new(),
            views: 0,
        }
    }

    /// Encode the rows of the text columns as `json_lines` does, replacing the lines held;
    /// returns their length in bytes.
    fn encode(
        &mut self,
        py: Python<'_>,
        keys: Vec<String>,
        offsets: Vec<PyBuffer<i64>>,
        data: Vec<PyBuffer<u8>>,
        valid: Vec<Option<PyBuffer<u8>>>,
    ) -> PyResult<usize> {
        if self.views > 0 {
            return Err(PyBufferError::new_err(
                "the JSON lines are still viewed: release the view before encoding again",
            ));
        }
        let columns = text_columns(&keys, &offsets, &data, &valid)?;
        let lines = &mut self.lines;
        py.detach(|| json_lines_into(&columns, lines))
            .map_err(|err| to_py_err(py, err))?;
        Ok(self.lines.len())
    }

    fn __len__(&self) -> usize {
        self.lines.len()
    }

    /// A read-only view of the lines (bytes, format "B"), which holds this object.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        if view.is_null() {
            return Err(PyBufferError::new_err("no view to fill"));
        }
        let mut this = slf.borrow_mut();
        let (pointer, length) = (this.lines.as_ptr(), this.lines.len() as ffi::Py_ssize_t);
        // SAFETY: `view` is the interpreter's; the lines stay where they are while any view
        // is held (`encode` refuses, and they are dropped only with this object, which the
        // view references). PyBuffer_FillInfo refuses a writable view and sets the rest.
        let filled = unsafe {
            ffi::PyBuffer_FillInfo(view, slf.as_ptr(), pointer as *mut c_void, length, 1, flags)
        };
        if filled != 0 {
            return Err(PyErr::fetch(slf.py()));
        }
        this.views += 1;
        Ok(())
    }

    unsafe fn __releasebuffer__(&mut self, _view: *mut ffi::Py_buffer) {
        self.views -= 1;
    }
}

/// Add the JSON lines function and class to `module`.
pub(super) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(json_lines, module)?)?;
    module.add_class::<JsonLines>()?;
    Ok(())
}
