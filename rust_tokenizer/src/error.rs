//! One error type for the core, split by who has to act: bad input data (fix the file), bad
//! configuration (fix the arguments) or an IO failure (fix the machine).

use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// One row of a cleaned file is malformed. Rows count from 1 (the JSONL line number, or the
    /// Parquet row index + 1); row 0 means the file as a whole (e.g. a missing column).
    #[error("{}", RowDisplay { path, row: *row, field: field.as_deref(), problem })]
    Row {
        path: PathBuf,
        row: u64,
        field: Option<&'static str>,
        problem: String,
    },
    /// A file cannot be read as a cleaned file at all (corrupt Parquet, unsupported type).
    #[error("{}: {problem}", path.display())]
    File { path: PathBuf, problem: String },
    /// The tokenizer or the framing tokens are unusable.
    #[error("{0}")]
    Config(String),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// An object store refused or failed a request on `url` (`s3://bucket/key`).
    #[error("{url}: {message}")]
    Remote {
        url: String,
        bucket: String,
        kind: RemoteKind,
        message: String,
    },
}

/// What went wrong with an object-store request, as far as the caller can act on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteKind {
    /// The object does not exist.
    NotFound,
    /// The bucket does not exist.
    NoSuchBucket,
    /// Credentials missing, wrong or not allowed (403, InvalidAccessKeyId, SignatureDoesNotMatch).
    PermissionDenied,
    /// Anything else: network, server errors after retries, protocol.
    Other,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn row(
        path: &Path,
        row: u64,
        field: Option<&'static str>,
        problem: impl Into<String>,
    ) -> Self {
        Error::Row {
            path: path.to_path_buf(),
            row,
            field,
            problem: problem.into(),
        }
    }

    pub fn file(path: &Path, problem: impl Into<String>) -> Self {
        Error::File {
            path: path.to_path_buf(),
            problem: problem.into(),
        }
    }

    /// The same error again (for a failure shared by several jobs); an IO error keeps its
    /// errno, so Python still raises the matching `OSError` subclass.
    pub fn replicate(&self) -> Self {
        match self {
            Error::Row {
                path,
                row,
                field,
                problem,
            } => Error::row(path, *row, *field, problem.clone()),
            Error::File { path, problem } => Error::file(path, problem.clone()),
            Error::Config(message) => Error::Config(message.clone()),
            Error::Io { path, source } => Error::Io {
                path: path.clone(),
                source: match source.raw_os_error() {
                    Some(code) => std::io::Error::from_raw_os_error(code),
                    None => std::io::Error::new(source.kind(), source.to_string()),
                },
            },
            Error::Remote {
                url,
                bucket,
                kind,
                message,
            } => Error::Remote {
                url: url.clone(),
                bucket: bucket.clone(),
                kind: *kind,
                message: message.clone(),
            },
        }
    }
}

/// Attach the path an IO error happened on, since `std::io::Error` does not carry it.
pub trait IoContext<T> {
    fn at(self, path: &Path) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, path: &Path) -> Result<T> {
        self.map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })
    }
}

/// The same wording as Python's `hrm_assets.cleaning.rows.RowError`, so both readers report alike.
struct RowDisplay<'a> {
    path: &'a Path,
    row: u64,
    field: Option<&'a str>,
    problem: &'a str,
}

impl fmt::Display for RowDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: row {}", self.path.display(), self.row)?;
        if let Some(field) = self.field {
            write!(f, ", field '{field}'")?;
        }
        write!(f, ": {}", self.problem)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_error_names_file_row_and_field() {
        let err = Error::row(
            Path::new("a/b.jsonl"),
            7,
            Some("response"),
            "expected a string, got null",
        );
        assert_eq!(
            err.to_string(),
            "a/b.jsonl: row 7, field 'response': expected a string, got null"
        );
        let err = Error::row(Path::new("x.jsonl"), 3, None, "malformed JSON");
        assert_eq!(err.to_string(), "x.jsonl: row 3: malformed JSON");
    }

    #[test]
    fn replicated_io_error_keeps_errno_and_path() {
        let err = std::fs::File::open("/definitely/not/here")
            .at(Path::new("/definitely/not/here"))
            .unwrap_err();
        let again = err.replicate();
        assert_eq!(again.to_string(), err.to_string());
        assert!(matches!(again, Error::Io { ref source, .. } if source.raw_os_error() == Some(2)));
    }

    #[test]
    fn io_error_names_path() {
        let err = std::fs::File::open("/definitely/not/here").at(Path::new("/definitely/not/here"));
        let text = err.unwrap_err().to_string();
        assert!(text.starts_with("/definitely/not/here: "), "{text}");
    }
}
