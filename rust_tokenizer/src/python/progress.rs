//! Progress callbacks from work running without the GIL.

use std::time::Instant;

use pyo3::prelude::*;

/// The shortest time between two progress reports to Python.
const PROGRESS_INTERVAL: std::time::Duration = std::time::Duration::from_millis(200);

/// Counts of work done, handed to a Python `progress(count)` at most every `PROGRESS_INTERVAL`
/// (each call takes the GIL, which the caller's other threads are using meanwhile). The first
/// exception the callback raises is kept and stops the work; [`ThrottledProgress::finish`]
/// raises it, or reports what is left.
pub(super) struct ThrottledProgress<'a> {
    callback: Option<&'a Py<PyAny>>,
    unreported: u64,
    last_report: Instant,
    error: Option<PyErr>,
}

impl<'a> ThrottledProgress<'a> {
    pub(super) fn new(callback: Option<&'a Py<PyAny>>) -> Self {
        ThrottledProgress {
            callback,
            unreported: 0,
            last_report: Instant::now(),
            error: None,
        }
    }

    /// Count `done` more (without the GIL); answers whether to go on.
    pub(super) fn add(&mut self, done: u64) -> bool {
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
    pub(super) fn finish(self, py: Python<'_>, succeeded: bool) -> PyResult<()> {
        if let Some(err) = self.error {
            return Err(err);
        }
        if let (Some(callback), true, true) = (self.callback, succeeded, self.unreported > 0) {
            callback.call1(py, (self.unreported,))?;
        }
        Ok(())
    }
}
