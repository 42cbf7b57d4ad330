//! Binding of GSM8K's rule on Arrow buffers (`rust_tokenizer/src/gsm8k_answers.rs`):
//! `gsm8k_rows`.

use std::ops::Range;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::buffers::contiguous_slice;
use crate::gsm8k_answers::{
    gsm8k_rows as core_gsm8k_rows, string_column_sizes, write_string_data, write_string_offsets,
    StringColumn, Validity,
};

/// A `string` column's buffers from Python: int32 offsets (rows + 1), data, and the validity
/// bitmap with the bit of its first row, or None.
type ColumnBuffers = (PyBuffer<i32>, PyBuffer<u8>, Option<PyBuffer<u8>>, usize);

fn column<'a>(buffers: &'a ColumnBuffers, name: &str) -> PyResult<StringColumn<'a>> {
    let (offsets, data, validity, bit) = buffers;
    Ok(StringColumn {
        offsets: contiguous_slice(offsets, &format!("{name} offsets"))?,
        data: contiguous_slice(data, &format!("{name} data"))?,
        validity: validity
            .as_ref()
            .map(|bits| {
                Ok::<_, PyErr>(Validity {
                    bits: contiguous_slice(bits, &format!("{name} validity"))?,
                    offset: *bit,
                })
            })
            .transpose()?,
    })
}

/// `values` as little-endian int64 bytes.
fn int64_bytes<'py>(py: Python<'py>, values: &[i64]) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, values.len() * 8, |out| {
        for (slot, value) in out.chunks_exact_mut(8).zip(values) {
            slot.copy_from_slice(&value.to_le_bytes());
        }
        Ok(())
    })
}

/// The `string` column of `ranges` of `data`: its offsets and its text, each written once
/// into a new `bytes` (the text without the GIL).
fn string_column<'py>(
    py: Python<'py>,
    data: &[u8],
    ranges: &[Range<usize>],
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let (offset_bytes, data_bytes) = string_column_sizes(ranges);
    let offsets = PyBytes::new_with(py, offset_bytes, |out| {
        write_string_offsets(ranges, out);
        Ok(())
    })?;
    let text = PyBytes::new_with(py, data_bytes, |out| {
        py.detach(|| write_string_data(data, ranges, out));
        Ok(())
    })?;
    Ok((offsets, text))
}

/// GSM8K's rule on a batch's `question` and `answer` columns, each given as the buffers of an
/// Arrow `string` array: (int32 offsets, rows + 1; data; validity bitmap or None; the bitmap's
/// bit of row 0). A record gives the row `(question.strip(), answer.split("#### ")[-1].strip())`
/// when its answer splits in two; a null answer, or a null question with such an answer, is
/// malformed; another answer is skipped with its number of pieces. Returns `(records,
/// instruction_offsets, instructions, response_offsets, responses, malformed, bad_answers,
/// pieces)`: positions in the batch and counts as int64 bytes, the two columns as Arrow `string`
/// buffers (int32 offsets, data); the instruction's are None when every record gives its row
/// and the strip leaves every question whole (the question column is the instruction column).
/// Buffers that are not one Arrow array are a ValueError.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn gsm8k_rows<'py>(
    py: Python<'py>,
    question: ColumnBuffers,
    answer: ColumnBuffers,
) -> PyResult<(
    Bound<'py, PyBytes>,
    Option<Bound<'py, PyBytes>>,
    Option<Bound<'py, PyBytes>>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
)> {
    let (questions, answers) = (column(&question, "question")?, column(&answer, "answer")?);
    let rows = py
        .detach(|| core_gsm8k_rows(&questions, &answers))
        .map_err(PyValueError::new_err)?;
    let (instruction_offsets, instructions) = if rows.questions_unchanged {
        (None, None)
    } else {
        let (offsets, text) = string_column(py, questions.data, &rows.instructions)?;
        (Some(offsets), Some(text))
    };
    let (response_offsets, responses) = string_column(py, answers.data, &rows.responses)?;
    Ok((
        int64_bytes(py, &rows.records)?,
        instruction_offsets,
        instructions,
        response_offsets,
        responses,
        int64_bytes(py, &rows.malformed)?,
        int64_bytes(py, &rows.bad_answers)?,
        int64_bytes(py, &rows.pieces)?,
    ))
}

/// Add GSM8K's rule to `module`.
pub(super) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(gsm8k_rows, module)?)?;
    Ok(())
}
