//! Python buffers (`bytes`, numpy arrays, Arrow buffers, mapped files) read by the bindings as
//! Rust slices without a copy, and new `bytes` written in place.

use pyo3::buffer::{Element, PyBuffer};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3::{ffi, Bound};

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

/// A new `bytes` of `len` bytes and its memory, not initialised (nor zeroed, as
/// `PyBytes::new_with` does: a second pass over megabytes of text).
///
/// # Safety
/// The caller writes every byte of the slice before the `bytes` is returned to Python or
/// read, and drops it unseen otherwise.
pub(super) unsafe fn uninitialised_bytes<'py>(
    py: Python<'py>,
    len: usize,
) -> PyResult<(Bound<'py, PyBytes>, &'py mut [u8])> {
    let pointer = ffi::PyBytes_FromStringAndSize(std::ptr::null(), len as ffi::Py_ssize_t);
    let bytes = Bound::from_owned_ptr_or_err(py, pointer)?.cast_into_unchecked::<PyBytes>();
    let memory = std::slice::from_raw_parts_mut(ffi::PyBytes_AsString(pointer).cast(), len);
    Ok((bytes, memory))
}

/// A new `bytes` of `len` bytes, every one written by `fill` without the GIL. An error of
/// `fill` is raised and the unfinished `bytes` dropped unseen.
pub(super) fn filled_bytes<'py>(
    py: Python<'py>,
    len: usize,
    fill: impl FnOnce(&mut [u8]) -> PyResult<()> + Send,
) -> PyResult<Bound<'py, PyBytes>> {
    // SAFETY: `fill` writes every byte before the `bytes` is returned; on its error the
    // `bytes` is dropped here.
    let (bytes, memory) = unsafe { uninitialised_bytes(py, len)? };
    py.detach(|| fill(memory))?;
    Ok(bytes)
}
