//! The sampler's span table: every task's four span arrays back to back as int64, read and
//! checked in one call.
//!
//! Only plain arrays are read here: a version 1.0 header describing a 1-D integer array, as
//! `numpy.save` writes it or as data_io's tokenizer (and ours) write it with `ndarray-npy`; anything else (another header, a missing or short file, a task whose arrays differ
//! in length) makes [`read_span_table`] answer `None`, and the caller reads the tasks its own
//! way, which also names the problem.

use std::path::PathBuf;

use crate::concat::{cast, IntType};
use crate::epochs::FIELDS;

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

/// A plain `.npy` header: element type, length and where the data starts.
#[derive(Debug, PartialEq, Eq)]
struct PlainHeader {
    element: IntType,
    len: u64,
    data_offset: usize,
}

const MAGIC_V1: &[u8] = b"\x93NUMPY\x01\x00";

/// The header `numpy.save` writes for a 1-D integer array,
/// `{'descr': '<i8', 'fortran_order': False, 'shape': (N,), }`, or `ndarray-npy`'s, the same
/// without the `, ` before `}`; padded with spaces, then `\n`.
fn plain_header(bytes: &[u8]) -> Option<PlainHeader> {
    let after_magic = bytes.strip_prefix(MAGIC_V1)?;
    let header_len = u16::from_le_bytes([*after_magic.first()?, *after_magic.get(1)?]);
    let data_offset = MAGIC_V1.len() + 2 + usize::from(header_len);
    let text = bytes.get(MAGIC_V1.len() + 2..data_offset)?;
    let text = text.strip_prefix(b"{'descr': '")?;
    let quote = text.iter().position(|&byte| byte == b'\'')?;
    let element = IntType::parse(std::str::from_utf8(&text[..quote]).ok()?).ok()?;
    let text = text[quote..].strip_prefix(b"', 'fortran_order': False, 'shape': (")?;
    let digits = text.iter().take_while(|byte| byte.is_ascii_digit()).count();
    let len = std::str::from_utf8(&text[..digits]).ok()?.parse().ok()?;
    let text = text[digits..].strip_prefix(b",)")?;
    let text = text
        .strip_prefix(b", }")
        .or_else(|| text.strip_prefix(b"}"))?;
    let (newline, padding) = text.split_last()?;
    (*newline == b'\n' && padding.iter().all(|&byte| byte == b' ')).then_some(PlainHeader {
        element,
        len,
        data_offset,
    })
}

/// The array's values as int64 appended to `column`, or `None` if it is not a plain array
/// (or shorter than its header says). `scratch` holds the values' bytes on the way.
fn append_array(bytes: &[u8], column: &mut Vec<i64>, scratch: &mut Vec<u8>) -> Option<u64> {
    let header = plain_header(bytes)?;
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
    fn numpy_and_ndarray_npy_headers_are_parsed_and_others_refused() {
        for style in [HeaderStyle::Numpy, HeaderStyle::NdarrayNpy] {
            assert_eq!(
                plain_header(&header(style, "<u8", 12)),
                Some(PlainHeader {
                    element: IntType::parse("<u8").unwrap(),
                    len: 12,
                    data_offset: 128,
                }),
                "{style:?}"
            );
        }
        let plain = header(HeaderStyle::Numpy, "<u8", 12);
        // numpy 2.x's own bytes for np.save(f, np.zeros(3, ">i2")).
        let mut numpy =
            b"\x93NUMPY\x01\x00v\x00{'descr': '>i2', 'fortran_order': False, 'shape': (3,), }"
                .to_vec();
        numpy.resize(127, b' ');
        numpy.push(b'\n');
        assert_eq!(
            plain_header(&numpy).unwrap().element,
            IntType::parse(">i2").unwrap()
        );
        let swap = |from: &str, to: &str| {
            let text = String::from_utf8_lossy(&plain).replace(from, to);
            plain_header(text.as_bytes()).is_none()
        };
        assert!(swap("False", "True"), "Fortran order");
        assert!(swap("(12,)", "(3, 4)"), "two dimensions");
        assert!(swap("(12,)", "()"), "a scalar");
        assert!(swap("<u8", "<f8"), "floats");
        assert!(swap(",), }", ",),}"), "another spelling");
        let mut version_two = plain.to_vec();
        version_two[6] = 2;
        assert!(plain_header(&version_two).is_none());
        assert!(plain_header(&plain[..100]).is_none(), "a cut header");
        let mut unterminated = plain.to_vec();
        unterminated[127] = b' ';
        assert!(plain_header(&unterminated).is_none());
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
