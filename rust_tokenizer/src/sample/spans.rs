//! The sampler's span table: every task's four span arrays back to back as int64, read in one
//! call. The span rule itself (rows back to back within and covering a task's tokens) is
//! checked on this table by the caller, `hrm_assets/sampling/span_table.py`, its one statement.
//!
//! Only plain arrays are read here: a version 1.0 header describing a 1-D integer array, as
//! `numpy.save` writes it or as data_io's tokenizer (and ours) write it with `ndarray-npy`; anything else (another header, a missing or short file, a task whose arrays differ
//! in length) makes [`read_span_table`] answer `None`, and the caller reads the tasks its own
//! way, which also names the problem.

use std::path::PathBuf;

use crate::npy::{parse_plain_header, IntType};
use crate::sample::concat::cast;
use crate::sample::epoch_draw::FIELDS;

/// The rows of every task, field by field.
#[derive(Debug, PartialEq, Eq)]
pub struct SpanTable {
    /// One column per field, every task's rows back to back (unsigned 64-bit values past
    /// `i64::MAX` come out negative, as a numpy int64 view shows them).
    pub columns: [Vec<i64>; FIELDS],
    /// Rows of each task.
    pub rows: Vec<u64>,
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

/// Read `folder/<field>.npy` for every folder and field (`fields` in the table's order:
/// `inst_start`, `inst_len`, `resp_start`, `resp_len`). `progress` receives the number of folders read since its last call and answers
/// whether to go on (`false` ends the read with `None`).
pub fn read_span_table(
    folders: &[PathBuf],
    fields: &[&str; FIELDS],
    progress: &mut dyn FnMut(usize) -> bool,
) -> Option<SpanTable> {
    let mut columns: [Vec<i64>; FIELDS] = Default::default();
    let mut rows = Vec::with_capacity(folders.len());
    let mut scratch = Vec::new();
    for folder in folders {
        let mut lengths = [0u64; FIELDS];
        for ((column, name), length) in columns.iter_mut().zip(fields).zip(&mut lengths) {
            let bytes = std::fs::read(folder.join(format!("{name}.npy"))).ok()?;
            *length = append_array(&bytes, column, &mut scratch)?;
        }
        if lengths.iter().any(|&length| length != lengths[0]) {
            return None;
        }
        rows.push(lengths[0]);
        if !progress(1) {
            return None;
        }
    }
    Some(SpanTable { columns, rows })
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

    fn read(folders: &[PathBuf]) -> Option<SpanTable> {
        read_span_table(folders, &FIELD_NAMES, &mut |_| true)
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
    fn tasks_are_read_back_to_back() {
        let dir = tempfile::tempdir().unwrap();
        let folders: Vec<PathBuf> = (0..4).map(|i| dir.path().join(format!("t{i}"))).collect();
        // Task 1 has no rows; task 3's response ends past any token count: the table only
        // reads, the caller's rule (span_table.py) judges.
        write_task(&folders[0], [&[0, 5], &[2, 1], &[2, 6], &[3, 4]]);
        write_task(&folders[1], [&[], &[], &[], &[]]);
        write_task(&folders[2], [&[0], &[3], &[3], &[4]]);
        write_task(&folders[3], [&[0], &[1], &[1], &[10]]);
        let mut seen = 0;
        let table = read_span_table(&folders, &FIELD_NAMES, &mut |n| {
            seen += n;
            true
        })
        .unwrap();
        assert_eq!(seen, 4);
        assert_eq!(table.rows, [2, 0, 1, 1]);
        assert_eq!(table.columns[0], [0, 5, 0, 0]);
        assert_eq!(table.columns[3], [3, 4, 4, 10]);
        assert_eq!(read(&folders[..2]).unwrap().rows, [2, 0]);
    }

    #[test]
    fn unusual_or_missing_files_leave_the_reading_to_the_caller() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("t");
        write_task(&folder, [&[0], &[1], &[1], &[1]]);
        assert!(read(std::slice::from_ref(&folder)).is_some());
        write_npy::<u64>(&folder.join("resp_len.npy"), &[1, 1]).unwrap();
        assert!(
            read(std::slice::from_ref(&folder)).is_none(),
            "lengths differ"
        );
        std::fs::remove_file(folder.join("resp_len.npy")).unwrap();
        assert!(read(std::slice::from_ref(&folder)).is_none(), "missing");
        std::fs::write(folder.join("resp_len.npy"), b"not an array").unwrap();
        assert!(read(&[folder]).is_none(), "not .npy");
    }
}
