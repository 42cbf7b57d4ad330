//! GSM8K's rule (`hrm_assets/cleaning/sources/gsm8k.py`, `clean_gsm8k`) in one pass over the
//! Arrow buffers of a batch's `question` and `answer` columns.
//!
//! A record gives the row `(question.strip(), answer.split("#### ")[-1].strip())` when its
//! answer splits into exactly two pieces; otherwise, in the order Python's attribute look-ups
//! and the check meet them:
//! - a null answer is malformed (`None.split`), whatever the question;
//! - an answer that does not split in two is skipped with its number of pieces;
//! - a null question is malformed (`None.strip`).
//!
//! `str.split(sep)` cuts at non-overlapping occurrences found left to right, so an answer has
//! one piece more than such occurrences. The separator is ASCII and UTF-8 never uses ASCII
//! bytes inside a character, so the occurrences are found on the bytes. Stripping removes
//! exactly the characters `str.isspace()` holds for ([`is_python_whitespace`]), a character at
//! a time from each end; it stops at bytes that are not UTF-8, so they stay in the row and the
//! engine's UTF-8 check names the raw file, row and field as for any other source.

use std::ops::Range;

use crate::text_lines::{is_ascii_text, is_python_whitespace};

/// The separator before an answer's final answer.
pub const ANSWER_SEPARATOR: &[u8] = b"#### ";

/// An Arrow validity bitmap: bit `offset + i` is set when value `i` is not null.
#[derive(Debug, Clone, Copy)]
pub struct Validity<'a> {
    pub bits: &'a [u8],
    pub offset: usize,
}

/// One Arrow `string` column: `offsets` (rows + 1, int32) into `data`, nulls in `validity`
/// (None: no nulls).
#[derive(Debug, Clone, Copy)]
pub struct StringColumn<'a> {
    pub offsets: &'a [i32],
    pub data: &'a [u8],
    pub validity: Option<Validity<'a>>,
}

impl StringColumn<'_> {
    fn rows(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Offsets that never decrease and stay inside `data`, a bitmap covering every row:
    /// else the column is not one Arrow array.
    fn check(&self, name: &str) -> Result<(), String> {
        let bad_offsets = self.offsets.is_empty()
            || self.offsets[0] < 0
            || self.offsets.windows(2).any(|pair| pair[0] > pair[1])
            || *self.offsets.last().unwrap() as usize > self.data.len();
        if bad_offsets {
            return Err(format!("{name}: offsets out of order or outside the data"));
        }
        if let Some(validity) = self.validity {
            if validity.bits.len() * 8 < validity.offset + self.rows() {
                return Err(format!("{name}: validity bitmap shorter than the column"));
            }
        }
        Ok(())
    }

    fn is_null(&self, row: usize) -> bool {
        self.validity.is_some_and(|validity| {
            let bit = validity.offset + row;
            validity.bits[bit / 8] >> (bit % 8) & 1 == 0
        })
    }

    /// The byte range of value `row` in `data`.
    fn range(&self, row: usize) -> Range<usize> {
        self.offsets[row] as usize..self.offsets[row + 1] as usize
    }
}

/// What the rule made of a batch: the records giving a row with the byte ranges of their
/// instruction (in the question data) and response (in the answer data), and the records
/// skipped, by reason, all as positions in the batch (ascending).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Gsm8kRows {
    pub records: Vec<i64>,
    pub instructions: Vec<Range<usize>>,
    pub responses: Vec<Range<usize>>,
    pub malformed: Vec<i64>,
    pub bad_answers: Vec<i64>,
    /// The number of pieces of each of `bad_answers`.
    pub pieces: Vec<i64>,
    /// Every record gives a row and no question loses a character to the strip: the
    /// instruction column is the question column as it is, no copy needed.
    pub questions_unchanged: bool,
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The first `#` of `bytes` at or after `from`, eight bytes at a time (the bit trick of
/// `text_lines::line_end_bits`: exact for the lowest flagged byte).
fn next_hash(bytes: &[u8], mut from: usize) -> Option<usize> {
    while from + 8 <= bytes.len() {
        let word = u64::from_le_bytes(bytes[from..from + 8].try_into().unwrap());
        let hashes = word ^ (ONES * u64::from(b'#'));
        let bits = hashes.wrapping_sub(ONES) & !hashes & HIGHS;
        if bits != 0 {
            return Some(from + bits.trailing_zeros() as usize / 8);
        }
        from += 8;
    }
    (from..bytes.len()).find(|&index| bytes[index] == b'#')
}

/// How many pieces `text.split("#### ")` gives, and where the last piece starts.
pub fn answer_pieces(text: &[u8]) -> (usize, usize) {
    let (mut pieces, mut last) = (1, 0);
    let mut from = 0;
    while let Some(at) = next_hash(text, from) {
        if text[at..].starts_with(ANSWER_SEPARATOR) {
            pieces += 1;
            last = at + ANSWER_SEPARATOR.len();
            from = last;
        } else {
            from = at + 1;
        }
    }
    (pieces, last)
}

/// The UTF-8 character `text` starts with and its length; None when it does not start with
/// one.
fn first_char(text: &[u8]) -> Option<(char, usize)> {
    let length = match text.first()? {
        0x00..=0x7F => 1,
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => return None,
    };
    let character = std::str::from_utf8(text.get(..length)?)
        .ok()?
        .chars()
        .next()?;
    Some((character, length))
}

/// The UTF-8 character `text` ends with and its length; None when it does not end with one.
fn last_char(text: &[u8]) -> Option<(char, usize)> {
    let start = (text.len().saturating_sub(4)..text.len())
        .rev()
        .find(|&index| text[index] & 0xC0 != 0x80)?;
    // From a byte that is not a continuation byte, valid UTF-8 to the end is one character.
    let character = std::str::from_utf8(&text[start..]).ok()?.chars().next()?;
    Some((character, text.len() - start))
}

/// The part of `text[range]` that `str.strip()` leaves, as a range of `text`.
pub fn stripped(text: &[u8], range: Range<usize>) -> Range<usize> {
    let (mut start, mut end) = (range.start, range.end);
    if start == end || (is_ascii_text(text[start]) && is_ascii_text(text[end - 1])) {
        return range;
    }
    while let Some((character, length)) = first_char(&text[start..end]) {
        if !is_python_whitespace(character) {
            break;
        }
        start += length;
    }
    while let Some((character, length)) = last_char(&text[start..end]) {
        if !is_python_whitespace(character) {
            break;
        }
        end -= length;
    }
    start..end
}

/// How many records ahead the pass asks for the bytes it reads first (both ends of a question,
/// the start of an answer): the columns were decoded a while ago, out of the cache, and a
/// question is read only at its two ends, a pattern the hardware does not prefetch.
const PREFETCH_ROWS: usize = 8;

/// Ask the CPU to bring the cache line of `data[at]` in (nothing if `at` is outside `data`).
fn prefetch(data: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if at < data.len() {
        // SAFETY: a prefetch only hints the cache; the address is inside `data`.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(data.as_ptr().add(at).cast());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (data, at);
}

/// GSM8K's rule on one batch's `question` and `answer` columns. An error: the columns are not
/// Arrow string arrays of the same length.
pub fn gsm8k_rows(question: &StringColumn, answer: &StringColumn) -> Result<Gsm8kRows, String> {
    question.check("question")?;
    answer.check("answer")?;
    if question.rows() != answer.rows() {
        return Err(format!(
            "question has {} rows, answer {}",
            question.rows(),
            answer.rows()
        ));
    }
    let rows = answer.rows();
    let mut out = Gsm8kRows {
        records: Vec::with_capacity(rows),
        instructions: Vec::with_capacity(rows),
        responses: Vec::with_capacity(rows),
        ..Gsm8kRows::default()
    };
    let mut unchanged = true;
    for row in 0..rows {
        if row + PREFETCH_ROWS < rows {
            let ahead = question.range(row + PREFETCH_ROWS);
            prefetch(question.data, ahead.start);
            prefetch(question.data, ahead.end.wrapping_sub(1));
            prefetch(answer.data, answer.range(row + PREFETCH_ROWS).start);
        }
        let position = row as i64;
        if answer.is_null(row) {
            out.malformed.push(position);
            continue;
        }
        let text = answer.range(row);
        let (pieces, last) = answer_pieces(&answer.data[text.clone()]);
        if pieces != 2 {
            out.bad_answers.push(position);
            out.pieces.push(pieces as i64);
            continue;
        }
        if question.is_null(row) {
            out.malformed.push(position);
            continue;
        }
        let whole = question.range(row);
        let instruction = stripped(question.data, whole.clone());
        unchanged &= instruction == whole;
        out.records.push(position);
        out.instructions.push(instruction);
        out.responses
            .push(stripped(answer.data, text.start + last..text.end));
    }
    out.questions_unchanged = unchanged && out.records.len() == rows;
    Ok(out)
}

/// Bytes of the Arrow buffers of `ranges` of some data as a `string` column: (int32 offsets,
/// data).
pub fn string_column_sizes(ranges: &[Range<usize>]) -> (usize, usize) {
    let text = ranges.iter().map(|range| range.len()).sum();
    ((ranges.len() + 1) * 4, text)
}

/// The little-endian int32 offsets of `ranges` as a `string` column, into `out` of the size
/// [`string_column_sizes`] gives (the text is a batch's, under 2 GiB as its own offsets are).
pub fn write_string_offsets(ranges: &[Range<usize>], out: &mut [u8]) {
    let mut end = 0i32;
    out[..4].copy_from_slice(&end.to_le_bytes());
    for (slot, range) in out[4..].chunks_exact_mut(4).zip(ranges) {
        end += range.len() as i32;
        slot.copy_from_slice(&end.to_le_bytes());
    }
}

/// The bytes of `ranges` of `data` back to back, into `out` of the size
/// [`string_column_sizes`] gives.
pub fn write_string_data(data: &[u8], ranges: &[Range<usize>], out: &mut [u8]) {
    let mut end = 0;
    for range in ranges {
        out[end..end + range.len()].copy_from_slice(&data[range.clone()]);
        end += range.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every character `str.isspace()` holds for (from CPython's `_PyUnicode_IsWhitespace`).
    const PYTHON_WHITESPACE: &[char] = &[
        '\t', '\n', '\x0b', '\x0c', '\r', '\x1c', '\x1d', '\x1e', '\x1f', ' ', '\u{85}', '\u{a0}',
        '\u{1680}', '\u{2000}', '\u{2001}', '\u{2002}', '\u{2003}', '\u{2004}', '\u{2005}',
        '\u{2006}', '\u{2007}', '\u{2008}', '\u{2009}', '\u{200a}', '\u{2028}', '\u{2029}',
        '\u{202f}', '\u{205f}', '\u{3000}',
    ];

    /// A record as the row path sees it: None for a null.
    type Record<'a> = (Option<&'a str>, Option<&'a str>);

    /// What `clean_gsm8k` does with a record, written with Rust's `str` methods: `split`
    /// with a string pattern cuts at non-overlapping matches left to right as Python's does.
    #[derive(Debug, PartialEq, Eq)]
    enum Outcome {
        Row(String, String),
        Malformed,
        Pieces(usize),
    }

    fn reference((question, answer): Record) -> Outcome {
        let strip = |text: &str| text.trim_matches(PYTHON_WHITESPACE).to_string();
        let Some(answer) = answer else {
            return Outcome::Malformed;
        };
        let pieces: Vec<&str> = answer.split("#### ").collect();
        if pieces.len() != 2 {
            return Outcome::Pieces(pieces.len());
        }
        match question {
            None => Outcome::Malformed,
            Some(question) => Outcome::Row(strip(question), strip(pieces[1])),
        }
    }

    /// An Arrow string column's buffers (offsets, data, validity bytes) of `values`.
    fn buffers(values: &[Option<&[u8]>]) -> (Vec<i32>, Vec<u8>, Vec<u8>) {
        let (mut offsets, mut data) = (vec![0i32], Vec::new());
        let mut bits = vec![0u8; values.len().div_ceil(8)];
        for (row, value) in values.iter().enumerate() {
            if let Some(value) = value {
                data.extend_from_slice(value);
                bits[row / 8] |= 1 << (row % 8);
            }
            offsets.push(data.len() as i32);
        }
        (offsets, data, bits)
    }

    /// The rule's outcome a record, from [`gsm8k_rows`] on the columns of `records`.
    fn outcomes(questions: &[Option<&[u8]>], answers: &[Option<&[u8]>]) -> Vec<Outcome> {
        let (q_offsets, q_data, q_bits) = buffers(questions);
        let (a_offsets, a_data, a_bits) = buffers(answers);
        let question = StringColumn {
            offsets: &q_offsets,
            data: &q_data,
            validity: Some(Validity {
                bits: &q_bits,
                offset: 0,
            }),
        };
        let answer = StringColumn {
            offsets: &a_offsets,
            data: &a_data,
            validity: Some(Validity {
                bits: &a_bits,
                offset: 0,
            }),
        };
        let rows = gsm8k_rows(&question, &answer).unwrap();
        let mut outcomes: Vec<Option<Outcome>> = (0..answers.len()).map(|_| None).collect();
        let text = |data: &[u8], range: &Range<usize>| {
            String::from_utf8(data[range.clone()].to_vec()).unwrap()
        };
        for (index, &record) in rows.records.iter().enumerate() {
            outcomes[record as usize] = Some(Outcome::Row(
                text(&q_data, &rows.instructions[index]),
                text(&a_data, &rows.responses[index]),
            ));
        }
        for &record in &rows.malformed {
            outcomes[record as usize] = Some(Outcome::Malformed);
        }
        for (&record, &pieces) in rows.bad_answers.iter().zip(&rows.pieces) {
            outcomes[record as usize] = Some(Outcome::Pieces(pieces as usize));
        }
        outcomes.into_iter().map(Option::unwrap).collect()
    }

    fn one(question: Option<&str>, answer: Option<&str>) -> Outcome {
        outcomes(&[question.map(str::as_bytes)], &[answer.map(str::as_bytes)]).remove(0)
    }

    #[test]
    fn pieces_are_python_s_split() {
        for (answer, pieces) in [
            ("", 1),
            ("#### ", 2),
            ("#### #### ", 3),
            ("########## ", 2),
            ("#####  ", 2),
            ("###  # ### #", 1),
            ("a #### b #### c", 3),
            ("####", 1),
            ("#### 5", 2),
            ("a####  b", 2),
        ] {
            assert_eq!(answer_pieces(answer.as_bytes()).0, pieces, "{answer:?}");
            assert_eq!(answer.split("#### ").count(), pieces, "{answer:?}");
        }
        assert_eq!(
            one(Some(" q "), Some("########## 42 ")),
            Outcome::Row("q".into(), "42".into())
        );
    }

    #[test]
    fn nulls_are_met_in_python_s_order() {
        assert_eq!(one(None, None), Outcome::Malformed);
        assert_eq!(one(Some("q"), None), Outcome::Malformed);
        // The answer is split before the question is stripped.
        assert_eq!(one(None, Some("no separator")), Outcome::Pieces(1));
        assert_eq!(one(None, Some("w #### 1")), Outcome::Malformed);
    }

    #[test]
    fn stripping_removes_python_s_whitespace_only() {
        assert_eq!(
            one(
                Some("\u{85}\u{a0}\x1c\x1f q \u{2028}\u{3000}"),
                Some("w\n####  \u{200b}7\u{feff}\u{202f}\t")
            ),
            // U+200B (zero width space) and U+FEFF are not whitespace for Python.
            Outcome::Row("q".into(), "\u{200b}7\u{feff}".into())
        );
        assert_eq!(
            one(Some(" \u{3000} "), Some("#### \u{2029}")),
            Outcome::Row(String::new(), String::new())
        );
    }

    #[test]
    fn bytes_that_are_not_utf8_stay_in_the_row() {
        let (question, answer): (&[u8], &[u8]) = (b" \xff q \xe2\x80", b"#### \x80\xe2\x80\xa8 ");
        let (q_offsets, q_data, _) = buffers(&[Some(question)]);
        let (a_offsets, a_data, _) = buffers(&[Some(answer)]);
        let column = |offsets, data| StringColumn {
            offsets,
            data,
            validity: None,
        };
        let rows = gsm8k_rows(&column(&q_offsets, &q_data), &column(&a_offsets, &a_data)).unwrap();
        assert_eq!(&q_data[rows.instructions[0].clone()], b"\xff q \xe2\x80");
        // U+2028 is stripped; the stray continuation byte before it is not.
        assert_eq!(&a_data[rows.responses[0].clone()], b"\x80");
    }

    #[test]
    fn questions_are_unchanged_only_when_every_record_keeps_all_of_its_question() {
        let unchanged = |questions: &[Option<&[u8]>], answers: &[Option<&[u8]>]| {
            let (q_offsets, q_data, q_bits) = buffers(questions);
            let (a_offsets, a_data, a_bits) = buffers(answers);
            let column = |offsets, data, bits| StringColumn {
                offsets,
                data,
                validity: Some(Validity { bits, offset: 0 }),
            };
            gsm8k_rows(
                &column(&q_offsets, &q_data, &q_bits),
                &column(&a_offsets, &a_data, &a_bits),
            )
            .unwrap()
            .questions_unchanged
        };
        let two: &[Option<&[u8]>] = &[Some(b"#### 1"), Some(b" #### 2 ")];
        assert!(unchanged(&[Some(b"q?"), Some(b"")], two));
        assert!(unchanged(&[], &[]));
        assert!(!unchanged(&[Some(b"q?"), Some(b"q\xc2\xa0")], two));
        assert!(!unchanged(&[Some(b"q?"), None], two));
        assert!(!unchanged(
            &[Some(b"q?"), Some(b"q")],
            &[Some(b"#### 1"), Some(b"2")]
        ));
        assert!(!unchanged(
            &[Some(b"q?"), Some(b"q")],
            &[Some(b"#### 1"), None]
        ));
    }

    #[test]
    fn a_validity_bitmap_may_start_inside_a_byte() {
        let (offsets, data, _) = buffers(&[Some(b"#### 1"), Some(b"#### 2"), Some(b"#### 3")]);
        let questions = buffers(&[Some(b"a"), Some(b"b"), Some(b"c")]);
        // Bits 3, 4, 5: valid, null, valid.
        let bits = [0b0010_1000u8];
        let answer = StringColumn {
            offsets: &offsets,
            data: &data,
            validity: Some(Validity {
                bits: &bits,
                offset: 3,
            }),
        };
        let question = StringColumn {
            offsets: &questions.0,
            data: &questions.1,
            validity: None,
        };
        let rows = gsm8k_rows(&question, &answer).unwrap();
        assert_eq!((rows.records, rows.malformed), (vec![0, 2], vec![1]));
    }

    #[test]
    fn columns_that_are_not_arrow_arrays_are_errors() {
        let data = b"abc";
        let column = |offsets: &'static [i32]| StringColumn {
            offsets,
            data,
            validity: None,
        };
        assert!(gsm8k_rows(&column(&[0, 2, 1]), &column(&[0, 1, 2])).is_err());
        assert!(gsm8k_rows(&column(&[0, 4]), &column(&[0, 1])).is_err());
        assert!(gsm8k_rows(&column(&[0, 1]), &column(&[0, 1, 2])).is_err());
        let short = StringColumn {
            validity: Some(Validity {
                bits: &[0xFF],
                offset: 7,
            }),
            ..column(&[0, 1, 2])
        };
        assert!(gsm8k_rows(&short, &column(&[0, 1, 2])).is_err());
    }

    #[test]
    fn a_column_is_arrow_s_string_layout() {
        let data = "ab é".as_bytes();
        let ranges = [0..2, 2..2, 3..5];
        let (offset_bytes, data_bytes) = string_column_sizes(&ranges);
        assert_eq!((offset_bytes, data_bytes), (16, 4));
        let (mut offsets, mut out) = (vec![0xAA; offset_bytes], vec![0; data_bytes]);
        write_string_offsets(&ranges, &mut offsets);
        write_string_data(data, &ranges, &mut out);
        let offsets: Vec<i32> = offsets
            .chunks(4)
            .map(|chunk| i32::from_le_bytes(chunk.try_into().unwrap()))
            .collect();
        assert_eq!(offsets, [0, 2, 2, 4]);
        assert_eq!(out, "abé".as_bytes());
    }

    /// Questions; answers are built of pieces the separator overlaps with.
    const TEXT: &str = "[# \t\n\x0b\x1c\x1fab1\u{85}\u{a0}\u{2028}\u{3000}\u{e9}\u{1f600}]{0,16}";
    const ANSWER: &str =
        "(#### |#|##|###|[ \t\n\x1c\x1f\u{85}\u{a0}\u{2028}\u{3000}]|[a1\u{e9}\u{1f600}]){0,10}";

    proptest::proptest! {
        #[test]
        fn records_get_the_reference_s_outcome(
            records in proptest::collection::vec(
                (proptest::option::weighted(0.9, TEXT), proptest::option::weighted(0.9, ANSWER)),
                0..12,
            ),
        ) {
            let questions: Vec<Option<&[u8]>> =
                records.iter().map(|(q, _)| q.as_deref().map(str::as_bytes)).collect();
            let answers: Vec<Option<&[u8]>> =
                records.iter().map(|(_, a)| a.as_deref().map(str::as_bytes)).collect();
            let expected: Vec<Outcome> = records
                .iter()
                .map(|(q, a)| reference((q.as_deref(), a.as_deref())))
                .collect();
            proptest::prop_assert_eq!(outcomes(&questions, &answers), expected);
        }

        #[test]
        fn separators_are_counted_as_python_splits(text in "(#|#### | |a){0,16}") {
            let (pieces, last) = answer_pieces(text.as_bytes());
            let split: Vec<&str> = text.split("#### ").collect();
            proptest::prop_assert_eq!(pieces, split.len());
            proptest::prop_assert_eq!(&text[last..], *split.last().unwrap());
        }
    }
}
