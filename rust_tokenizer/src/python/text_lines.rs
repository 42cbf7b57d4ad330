//! Binding of the paired lines of a text block (`rust_tokenizer/src/text_lines.rs`):
//! `question_answer_lines`.

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3::Bound;

use super::buffers::{contiguous_slice, filled_bytes};
use crate::text_lines::{block_lines, column_sizes, write_data, write_offsets, LinePairs};

/// A `large_string` column's offsets and data, each written in place into a new `bytes`.
fn column_bytes<'py, 'v, I>(
    py: Python<'py>,
    values: impl Fn() -> I + Sync,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>
where
    I: Iterator<Item = &'v [u8]>,
{
    let (offset_bytes, data_bytes) = column_sizes(values());
    let offsets = filled_bytes(py, offset_bytes, |out| {
        write_offsets(values(), out);
        Ok(())
    })?;
    let data = filled_bytes(py, data_bytes, |out| {
        write_data(values(), out);
        Ok(())
    })?;
    Ok((offsets, data))
}

/// The question/answer pairs of the whole lines of `block` (a buffer of bytes of a UTF-8 text
/// file from where the previous block's lines ended: `bytes`, or a view of the mapped file),
/// after `pending`, the question the previous block left without an answer. Lines end as in
/// Python's text mode and are stripped as `str.strip()` does. `last`: the block ends the file. Returns the bytes of the block its
/// lines take (the rest starts the next block), its number of lines, the questions' and the
/// answers' Arrow `large_string` buffers (int64 offsets, data) and the unpaired last question
/// or None. Text that is not UTF-8 is a ValueError naming the line, counted from
/// `first_line` (the file's number of the block's first line), and the byte.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn question_answer_lines<'py>(
    py: Python<'py>,
    block: PyBuffer<u8>,
    pending: Option<&[u8]>,
    first_line: u64,
    last: bool,
) -> PyResult<(
    usize,
    usize,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Option<Bound<'py, PyBytes>>,
)> {
    let block = contiguous_slice(&block, "the block")?;
    let lines = py.detach(|| block_lines(block, last)).map_err(|error| {
        PyValueError::new_err(format!(
            "line {}, byte {}: text is not valid UTF-8",
            first_line + error.line as u64,
            error.byte + 1
        ))
    })?;
    let pairs = LinePairs::new(pending, block, &lines);
    let (question_offsets, questions) = column_bytes(py, || pairs.questions())?;
    let (answer_offsets, answers) = column_bytes(py, || pairs.answers())?;
    let unpaired = pairs.unpaired().map(|line| PyBytes::new(py, line));
    Ok((
        lines.consumed,
        lines.stripped.len(),
        question_offsets,
        questions,
        answer_offsets,
        answers,
        unpaired,
    ))
}

/// Add the paired-lines function to `module`.
pub(super) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(question_answer_lines, module)?)?;
    Ok(())
}
