//! The sampler's span table: every task's four span arrays back to back as int64, read and
//! checked in one call.
//!
//! Only plain arrays are read here: a version 1.0 header describing a 1-D integer array, as
//! `numpy.save` writes it or as data_io's tokenizer (and ours) write it with `ndarray-npy`; anything else (another header, a missing or short file, a task whose arrays differ
//! in length) makes [`read_span_table`] answer `None`, and the caller reads the tasks its own
//! way, which also names the problem.

use std::path::PathBuf;

use crate::npy::{parse_plain_header, IntType};
use crate::sample::concat::cast;
use crate::sample::epoch_draw::FIELDS;

/// The rows of every task, field by field, and where they fail data_io's consistency rules.
#[derive(Debug, PartialEq, Eq)]
pub struct SpanTable {
    /// One column per field, every task's rows back to back (unsigned 64-bit values past
    /// `i64::MAX` come out negative, as a numpy int64 view shows them).
    pub columns: [Vec<i64>; FIELDS],
    /// Rows of each task.
    pub rows: Vec<u64>,
    /// The first task whose spans are not all within its tokens (negative values, values or
    /// span ends past its token count) or do not cover exactly its token count.
    pub first_inconsistent: Option<usize>,
}

/// The array's values as int64 appended to `column`, or `None` if it is not a plain array
/// (or shorter than its header says). `scratch` holds the values' bytes on the way.
fn append_array(bytes: &[u8], column: &mut Vec<i64>, scratch: &mut Vec<u8>) -> Option<u64> {
    let header = parse_plain_header(bytes)?;
    let count = usize::try_from(header.len).ok()?;
    let size = count.checked_mul(header.element.size)?;
    let data = bytes.get(header.data_offset..header.data_offset.checked_add(size)?)?;
    // numpy's cast to int64: sign- or zero-extended, unsigned values past i64::MAX wrapped.
    scratch.resize(count * INT64.size, 0);
    cast(data, header.element, INT64, scratch);
    column.extend(
        scratch
            .chunks_exact(INT64.size)
            .map(|value| i64::from_le_bytes(value.try_into().expect("8 bytes"))),
    );
    Some(header.len)
}

const INT64: IntType = IntType {
    signed: true,
    size: 8,
    big_endian: false,
};

/// Whether rows `rows` of `columns` (`inst_start`, `inst_len`, `resp_start`, `resp_len`) lie
/// within `tokens` tokens and cover exactly that many.
fn consistent(columns: &[Vec<i64>; FIELDS], rows: std::ops::Range<usize>, tokens: u64) -> bool {
    let limit = i128::from(tokens);
    let mut covered = 0i128;
    for row in rows {
        let [inst_start, inst_len, resp_start, resp_len] =
            [0, 1, 2, 3].map(|field| i128::from(columns[field][row]));
        let in_range = [inst_start, inst_len, resp_start, resp_len]
            .iter()
            .all(|&value| (0..=limit).contains(&value));
        if !in_range || inst_start + inst_len > limit || resp_start + resp_len > limit {
            return false;
        }
        covered += inst_len + resp_len;
    }
    covered == limit
}

/// Read `folder/<field>.npy` for every folder and field (`fields` in the table's order:
/// `inst_start`, `inst_len`, `resp_start`, `resp_len`) and check each task against its token
/// count. `progress` receives the number of folders read since its last call and answers
/// whether to go on (`false` ends the read with `None`).
pub fn read_span_table(
    folders: &[PathBuf],
    fields: &[&str; FIELDS],
    token_counts: &[u64],
    progress: &mut dyn FnMut(usize) -> bool,
) -> Option<SpanTable> {
    assert_eq!(
        folders.len(),
        token_counts.len(),
        "a token count per folder"
    );
    let mut columns: [Vec<i64>; FIELDS] = Default::default();
    let mut rows = Vec::with_capacity(folders.len());
    let mut scratch = Vec::new();
    let mut first_inconsistent = None;
    for (task, (folder, &tokens)) in folders.iter().zip(token_counts).enumerate() {
        let start = columns[0].len();
        let mut lengths = [0u64; FIELDS];
        for ((column, name), length) in columns.iter_mut().zip(fields).zip(&mut lengths) {
            let bytes = std::fs::read(folder.join(format!("{name}.npy"))).ok()?;
            *length = append_array(&bytes, column, &mut scratch)?;
        }
        if lengths.iter().any(|&length| length != lengths[0]) {
            return None;
        }
        rows.push(lengths[0]);
        if first_inconsistent.is_none() && !consistent(&columns, start..columns[0].len(), tokens) {
            first_inconsistent = Some(task);
        }
        if !progress(1) {
            return None;
        }
    }
    Some(SpanTable {
        columns,
        rows,
        first_inconsistent,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::npy::{header, write_npy, HeaderStyle};
    use std::path::Path;

    const FIELD_NAMES: [&str; FIELDS] = ["inst_start", "inst_len", "resp_start", "resp_len"];

    fn write_task(folder: &Path, columns: [&[u64]; FIELDS]) {
        std::fs::create_dir_all(folder).unwrap();
        for (name, values) in FIELD_NAMES.iter().zip(columns) {
            write_npy::<u64>(&folder.join(format!("{name}.npy")), values).unwrap();
        }
    }

    fn read(folders: &[PathBuf], counts: &[u64]) -> Option<SpanTable> {
        read_span_table(folders, &FIELD_NAMES, counts, &mut |_| true)
    }

    #[test]
    fn every_integer_type_is_read_as_int64() {
        let cases: [(&str, Vec<u8>, Vec<i64>); 4] = [
            ("|u1", vec![0, 255], vec![0, 255]),
            ("|i1", vec![0xff, 1], vec![-1, 1]),
            (">u2", vec![1, 2, 0, 3], vec![258, 3]),
            (
                "<u8",
                [u64::MAX, 7].iter().flat_map(|v| v.to_le_bytes()).collect(),
                vec![-1, 7],
            ),
        ];
        let mut scratch = Vec::new();
        for (descr, data, expected) in cases {
            let mut bytes = header(HeaderStyle::Numpy, descr, expected.len() as u64).to_vec();
            bytes.extend(&data);
            bytes.push(0); // bytes past the array are allowed, as numpy allows them
            let mut column = vec![5];
            let read = append_array(&bytes, &mut column, &mut scratch);
            assert_eq!(read, Some(expected.len() as u64));
            assert_eq!(column[1..], expected[..], "{descr}");
            let short = &bytes[..bytes.len() - 2];
            assert_eq!(
                append_array(short, &mut column, &mut scratch),
                None,
                "short"
            );
        }
    }

    #[test]
    fn tasks_are_read_back_to_back_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let folders: Vec<PathBuf> = (0..4).map(|i| dir.path().join(format!("t{i}"))).collect();
        // Task 0: two rows covering 10 tokens. Task 1: no rows. Task 2: covers 7 of 8 tokens.
        // Task 3: a response past the end.
        write_task(&folders[0], [&[0, 5], &[2, 1], &[2, 6], &[3, 4]]);
        write_task(&folders[1], [&[], &[], &[], &[]]);
        write_task(&folders[2], [&[0], &[3], &[3], &[4]]);
        write_task(&folders[3], [&[0], &[1], &[1], &[10]]);
        let mut seen = 0;
        let table = read_span_table(&folders, &FIELD_NAMES, &[10, 0, 8, 10], &mut |n| {
            seen += n;
            true
        })
        .unwrap();
        assert_eq!(seen, 4);
        assert_eq!(table.rows, [2, 0, 1, 1]);
        assert_eq!(table.columns[0], [0, 5, 0, 0]);
        assert_eq!(table.columns[3], [3, 4, 4, 10]);
        assert_eq!(table.first_inconsistent, Some(2));
        let consistent_only = read(&folders[..2], &[10, 0]).unwrap();
        assert_eq!(consistent_only.first_inconsistent, None);
        assert_eq!(
            read(&folders[3..], &[10]).unwrap().first_inconsistent,
            Some(0)
        );
    }

    #[test]
    fn values_out_of_range_are_inconsistent() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("t");
        for (columns, tokens) in [
            ([[u64::MAX], [1], [0], [0]], 1), // negative once viewed as int64
            ([[0], [2], [0], [0]], 1),        // a length past the token count
            ([[1 << 62], [1 << 62], [0], [0]], 1 << 62), // ends past the count
        ] {
            write_task(&folder, columns.each_ref().map(|c| c.as_slice()));
            assert_eq!(
                read(std::slice::from_ref(&folder), &[tokens])
                    .unwrap()
                    .first_inconsistent,
                Some(0)
            );
        }
    }

    #[test]
    fn unusual_or_missing_files_leave_the_reading_to_the_caller() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("t");
        write_task(&folder, [&[0], &[1], &[1], &[1]]);
        assert!(read(std::slice::from_ref(&folder), &[2]).is_some());
        write_npy::<u64>(&folder.join("resp_len.npy"), &[1, 1]).unwrap();
        assert!(
            read(std::slice::from_ref(&folder), &[2]).is_none(),
            "lengths differ"
        );
        std::fs::remove_file(folder.join("resp_len.npy")).unwrap();
        assert!(
            read(std::slice::from_ref(&folder), &[2]).is_none(),
            "missing"
        );
        std::fs::write(folder.join("resp_len.npy"), b"not an array").unwrap();
        assert!(read(&[folder], &[2]).is_none(), "not .npy");
    }
}
