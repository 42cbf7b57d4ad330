//! Bindings of the shared `.npy` code: reading a plain header.

use std::path::PathBuf;

use pyo3::prelude::*;

use super::errors::to_py_err;
use crate::npy::read_plain_header;

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

/// Add `read_npy_header` to `module`.
pub(super) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(read_npy_header, module)?)?;
    Ok(())
}
