//! Core errors as Python exceptions:
//! - a bad row -> `hrm_assets.cleaning.rows.RowError` (a `ValueError` naming file, row and
//!   field), the same exception the Python reader raises;
//! - an unreadable file or a bad configuration -> `ValueError`;
//! - IO failures -> `OSError` with errno and filename (`FileNotFoundError`, `PermissionError`
//!   where they apply);
//! - object-store failures -> `PermissionError` (credentials refused), `FileNotFoundError` (no
//!   such object or bucket), `OSError` otherwise; the message names the bucket (and key), and
//!   `filename` is the URL.

use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyPermissionError, PyValueError};
use pyo3::prelude::*;

use crate::error::{Error, RemoteKind};

/// The Python exception for `err`.
pub(super) fn to_py_err(py: Python<'_>, err: Error) -> PyErr {
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
        // OSError(errno, strerror, url), as for a local file: `filename` is the URL, and str()
        // reads "[Errno 13] access denied to bucket 'b', key 'k' ...: 's3://b/k'".
        Error::Remote {
            url,
            kind,
            message: strerror,
            ..
        } => match kind {
            RemoteKind::PermissionDenied => {
                PyPermissionError::new_err((libc::EACCES, strerror, url))
            }
            RemoteKind::NotFound | RemoteKind::NoSuchBucket => {
                PyFileNotFoundError::new_err((libc::ENOENT, strerror, url))
            }
            RemoteKind::Other => PyOSError::new_err((libc::EIO, strerror, url)),
        },
    }
}
