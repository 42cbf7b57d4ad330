//! Python buffers (`bytes`, numpy arrays, Arrow buffers, mapped files) read by the bindings as
//! Rust slices without a copy.

use pyo3::buffer::{Element, PyBuffer};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// The memory of a C-contiguous buffer, borrowed for as long as `buffer` is held; `what`
/// names it in the error of a buffer that is not contiguous.
pub(super) fn contiguous_slice<'a, T: Element>(
    buffer: &'a PyBuffer<T>,
    what: &str,
) -> PyResult<&'a [T]> {
    if !buffer.is_c_contiguous() {
        return Err(PyValueError::new_err(format!(
            "{what} must be C-contiguous"
        )));
    }
    // SAFETY: PyBuffer checked the element type and alignment; the buffer keeps the memory
    // alive while it is held, and callers do not change it while they read it.
    Ok(unsafe { std::slice::from_raw_parts(buffer.buf_ptr().cast::<T>(), buffer.item_count()) })
}
