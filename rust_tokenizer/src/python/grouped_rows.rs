//! Binding of the cleaning engine's grouped rows (`rust_tokenizer/src/grouped_rows.rs`):
//! `spill_groups`, `memory_groups` and `gather_groups`.

use std::fs::File;
use std::mem::ManuallyDrop;
use std::os::fd::FromRawFd;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3::Bound;

use super::buffers::{contiguous_slice, filled_bytes, uninitialised_bytes};
use crate::grouped_rows::{
    check, gather_column, offset_width, GroupLayout, Groups, Stored, StoredGroup, TextChunk,
    TextColumn,
};

/// The open file of descriptor `fd`, borrowed: never closed here.
fn borrowed_file(fd: i32) -> PyResult<ManuallyDrop<File>> {
    if fd < 0 {
        return Err(PyValueError::new_err(format!(
            "{fd} is not a file descriptor"
        )));
    }
    // SAFETY: the caller holds `fd` open for the call; ManuallyDrop never closes it.
    Ok(ManuallyDrop::new(unsafe { File::from_raw_fd(fd) }))
}

/// A column's chunks, each `(offsets, data)`.
type ChunkBuffers = Vec<(PyBuffer<i64>, PyBuffer<u8>)>;

/// A gathered column: its offsets, its text and the offsets' width.
type JoinedColumn<'py> = (Bound<'py, PyBytes>, Bound<'py, PyBytes>, usize);

/// The batch's columns and groups, checked.
fn batch_groups<'a>(
    columns: &'a [ChunkBuffers],
    order: &'a Option<PyBuffer<i64>>,
    bounds: &'a PyBuffer<i64>,
) -> PyResult<(Vec<TextColumn<'a>>, Groups<'a>)> {
    let mut text_columns = Vec::with_capacity(columns.len());
    for chunks in columns {
        let mut text_chunks = Vec::with_capacity(chunks.len());
        for (offsets, data) in chunks {
            text_chunks.push(TextChunk {
                offsets: contiguous_slice(offsets, "offsets")?,
                data: contiguous_slice(data, "data")?,
            });
        }
        text_columns.push(TextColumn::new(text_chunks));
    }
    let groups = Groups {
        order: order
            .as_ref()
            .map(|order| contiguous_slice(order, "order"))
            .transpose()?,
        bounds: contiguous_slice(bounds, "bounds")?,
    };
    check(&text_columns, &groups).map_err(PyValueError::new_err)?;
    Ok((text_columns, groups))
}

/// Write the groups of a batch's text columns into the open file `fd` from `position`, one
/// after the other, without the GIL. `columns[i]` is column `i`'s chunks, each `(offsets,
/// data)`: int64 offsets (its rows + 1) into its data; group `g` is rows
/// `order[bounds[g]..bounds[g+1]]` of the chunks joined (int64; `order` None: the rows in
/// batch order). Returns the text bytes of each group's columns, group by group.
#[pyfunction]
#[pyo3(signature = (fd, position, columns, order, bounds))]
fn spill_groups(
    py: Python<'_>,
    fd: i32,
    position: u64,
    columns: Vec<ChunkBuffers>,
    order: Option<PyBuffer<i64>>,
    bounds: PyBuffer<i64>,
) -> PyResult<Vec<u64>> {
    let (columns, groups) = batch_groups(&columns, &order, &bounds)?;
    let file = borrowed_file(fd)?;
    py.detach(|| {
        let layout = GroupLayout::new(&columns, &groups);
        layout.write_at(&file, position)?;
        Ok(layout.sizes().to_vec())
    })
}

/// The groups of `spill_groups`, in a new `bytes` instead of a file, and their text sizes.
#[pyfunction]
#[pyo3(signature = (columns, order, bounds))]
fn memory_groups<'py>(
    py: Python<'py>,
    columns: Vec<ChunkBuffers>,
    order: Option<PyBuffer<i64>>,
    bounds: PyBuffer<i64>,
) -> PyResult<(Bound<'py, PyBytes>, Vec<u64>)> {
    let (columns, groups) = batch_groups(&columns, &order, &bounds)?;
    let layout = py.detach(|| GroupLayout::new(&columns, &groups));
    let block = filled_bytes(py, layout.len(), |out| {
        layout.fill(out);
        Ok(())
    })?;
    let sizes = layout.sizes().to_vec();
    Ok((block, sizes))
}

/// Where a stored group is: the descriptor of its spill file, or its memory block.
#[derive(FromPyObject)]
enum Source {
    File(i32),
    Memory(PyBuffer<u8>),
}

/// The stored groups `groups`, each `(source, position, rows, text)` (`text`: its columns'
/// text bytes, as `spill_groups` gave them), joined in order: for each of their `columns`,
/// its offsets and its text as new `bytes`, and the offsets' width (4: Arrow `string`, 8:
/// `large_string`). The text is read from the files without the GIL, straight into place.
#[pyfunction]
fn gather_groups<'py>(
    py: Python<'py>,
    groups: Vec<(Source, u64, usize, Vec<u64>)>,
    columns: usize,
) -> PyResult<Vec<JoinedColumn<'py>>> {
    let mut files = Vec::new();
    for (source, _, _, text) in &groups {
        if text.len() != columns {
            return Err(PyValueError::new_err(format!(
                "a group has the text of {} columns, not {columns}",
                text.len()
            )));
        }
        if let Source::File(fd) = source {
            files.push(borrowed_file(*fd)?);
        }
    }
    let mut stored = Vec::with_capacity(groups.len());
    let mut next_file = files.iter();
    for (source, position, rows, text) in &groups {
        let stored_in = match source {
            Source::File(_) => Stored::File(next_file.next().expect("a file per file group")),
            Source::Memory(block) => Stored::Memory(contiguous_slice(block, "a memory block")?),
        };
        stored.push(StoredGroup {
            stored: stored_in,
            position: *position,
            rows: *rows,
            text,
        });
    }
    let rows: usize = stored.iter().map(|group| group.rows).sum();
    let mut joined = Vec::with_capacity(columns);
    for column in 0..columns {
        let text: u64 = stored.iter().map(|group| group.text[column]).sum();
        let width = offset_width(text);
        // SAFETY: gather_column writes every byte of both (its offsets, rows + 1 of them, and
        // the text of every group); on its error both are dropped here, unseen.
        let (offsets, offset_memory) = unsafe { uninitialised_bytes(py, (rows + 1) * width)? };
        let (data, data_memory) = unsafe { uninitialised_bytes(py, text as usize)? };
        let stored = &stored;
        py.detach(|| gather_column(stored, column, offset_memory, data_memory))?;
        joined.push((offsets, data, width));
    }
    Ok(joined)
}

/// Add the grouped-rows functions to `module`.
pub(super) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(spill_groups, module)?)?;
    module.add_function(wrap_pyfunction!(memory_groups, module)?)?;
    module.add_function(wrap_pyfunction!(gather_groups, module)?)?;
    Ok(())
}
