//! Bindings of the shared `.npy` code: reading a plain header, and scanning the files of
//! output folders for their checks.

use std::path::PathBuf;

use pyo3::prelude::*;

use super::errors::to_py_err;
use crate::npy::read_plain_header;
use crate::scan::scan_files;
use crate::tokenize::encode::thread_pool;

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

/// Read each file of `paths` once (`rust_tokenizer/src/scan.rs`), in parallel on
/// `num_threads` threads (`None`: one per core) without the GIL. Each slot holds `(size,
/// sha256 hex, descr, length, largest value)`, the last three `None` unless the file is a
/// plain 1-D integer `.npy` with all its data (the largest value also `None` when it is
/// empty), or the `OSError` (errno and filename) its read raised.
#[pyfunction]
#[pyo3(signature = (paths, num_threads = None))]
fn scan_arrays(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    num_threads: Option<usize>,
) -> PyResult<Vec<Py<PyAny>>> {
    let scans = py
        .detach(|| match num_threads {
            // rayon's global pool, started once: a call per batch of folders starts no threads.
            None => Ok(scan_files(&paths)),
            Some(_) => thread_pool(num_threads).map(|pool| pool.install(|| scan_files(&paths))),
        })
        .map_err(|err| to_py_err(py, err))?;
    scans
        .into_iter()
        .map(|scan| match scan {
            Ok(scan) => {
                let (descr, len, max) = match scan.array {
                    Some(array) => (Some(array.descr), Some(array.len), array.max),
                    None => (None, None, None),
                };
                Ok((scan.size, scan.sha256, descr, len, max)
                    .into_pyobject(py)?
                    .into_any()
                    .unbind())
            }
            Err(err) => Ok(to_py_err(py, err).into_value(py).into_any()),
        })
        .collect()
}

/// Add `read_npy_header` and `scan_arrays` to `module`.
pub(super) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(read_npy_header, module)?)?;
    module.add_function(wrap_pyfunction!(scan_arrays, module)?)?;
    Ok(())
}
