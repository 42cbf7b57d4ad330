//! Lines of a text file as Python's text mode reads them and `str.strip()` trims them, paired
//! as question and answer (dmmath's module files; `hrm_assets/cleaning/sources/dmmath.py` binds
//! it).
//!
//! - A line ends at `\n`, `\r\n` or a lone `\r` (universal newlines). Nothing else ends one:
//!   `\v`, `\f`, `\x1c`..`\x1e`, U+0085 and U+2028 do for `str.splitlines`, not for
//!   `readlines()` in text mode. The three line ends are ASCII and UTF-8 never uses ASCII bytes
//!   inside a character, so lines are found on the bytes before any decoding.
//! - A line is stripped of exactly the characters for which `str.isspace()` holds (Rust's
//!   `char::is_whitespace` leaves `\x1c`..`\x1f` out).
//! - A file is read in blocks; a block's lines are the ones whose end is in it, and an
//!   unpaired question waits for its answer in the next block.
//!
//! The columns come out in Arrow's string layout (int64 offsets into one data buffer), written
//! straight into the caller's buffers, so Python builds its arrays without an object a line.

use std::ops::Range;

/// Whether `str.isspace()` holds for `c`: Unicode's White_Space characters and the four
/// ASCII separators `\x1c`..`\x1f`, which Python counts as whitespace too.
pub fn is_python_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t'..='\r'
            | '\x1c'..=' '
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// `text` as `str.strip()` leaves it.
pub fn strip_python_whitespace(text: &str) -> &str {
    text.trim_matches(is_python_whitespace)
}

/// Text of a block that is not UTF-8: `line` counts the block's lines from 0, `byte` the
/// line's bytes from 0 (where the bad sequence starts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidUtf8 {
    pub line: usize,
    pub byte: usize,
}

/// The whole lines of a block: each line's stripped text as a byte range of the block, and
/// how many of the block's bytes they take (the rest is a line whose end is not read yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockLines {
    pub stripped: Vec<Range<usize>>,
    pub consumed: usize,
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `word` that is `\n` or `\r`, exact for the lowest one: the
/// subtraction below borrows only out of a zero byte, so no byte before the first match is
/// flagged (a later one may be).
fn line_end_bits(word: u64) -> u64 {
    let lf = word ^ (ONES * u64::from(b'\n'));
    let cr = word ^ (ONES * u64::from(b'\r'));
    (lf.wrapping_sub(ONES) & !lf | cr.wrapping_sub(ONES) & !cr) & HIGHS
}

/// The first `\n` or `\r` of `bytes` at or after `from`.
fn next_line_end(bytes: &[u8], mut from: usize) -> Option<usize> {
    // Most bytes are text: eight at a time.
    while from + 8 <= bytes.len() {
        let word = u64::from_le_bytes(bytes[from..from + 8].try_into().unwrap());
        let bits = line_end_bits(word);
        if bits != 0 {
            return Some(from + bits.trailing_zeros() as usize / 8);
        }
        from += 8;
    }
    (from..bytes.len()).find(|&index| matches!(bytes[index], b'\n' | b'\r'))
}

/// How many bytes of `block` are whole lines: up to its last line end, except that a `\r`
/// ending a block that is not the file's `last` may be the start of `\r\n`.
fn whole_lines(block: &[u8], last: bool) -> usize {
    if last {
        return block.len();
    }
    let line_end = |bytes: &[u8]| bytes.iter().rposition(|&b| matches!(b, b'\n' | b'\r'));
    match line_end(block) {
        Some(end) if end + 1 == block.len() && block[end] == b'\r' => {
            line_end(&block[..end]).map_or(0, |end| end + 1)
        }
        Some(end) => end + 1,
        None => 0,
    }
}

/// Where the text that is not UTF-8 at byte `at` of `block` is: its line and byte.
fn invalid_at(block: &[u8], at: usize) -> InvalidUtf8 {
    let (mut line, mut start) = (0, 0);
    while let Some(end) = next_line_end(&block[..at], start) {
        let crlf = block[end] == b'\r' && block.get(end + 1) == Some(&b'\n');
        start = end + 1 + usize::from(crlf);
        line += 1;
    }
    InvalidUtf8 {
        line,
        byte: at - start,
    }
}

/// Whether `byte` starts or ends a line with something `str.strip()` keeps: ASCII that is
/// not whitespace (ASCII bytes are whole characters).
pub(crate) fn is_ascii_text(byte: u8) -> bool {
    byte.is_ascii() && !matches!(byte, b'\t'..=b'\r' | 0x1C..=b' ')
}

/// The stripped part of the line `start..end` of `text`.
fn stripped_range(text: &str, start: usize, end: usize) -> Range<usize> {
    let bytes = text.as_bytes();
    if start == end || (is_ascii_text(bytes[start]) && is_ascii_text(bytes[end - 1])) {
        return start..end;
    }
    // Line ends are ASCII, so the line starts and ends on a character.
    let line = strip_python_whitespace(&text[start..end]);
    let offset = line.as_ptr() as usize - text.as_ptr() as usize;
    offset..offset + line.len()
}

/// The lines of `block`, stripped. `last`: the block ends the file, so text after the last
/// line end is a line and a `\r` at the very end is one; otherwise both wait for the next
/// block (the `\r` may be the start of `\r\n`). An error names the first line that is not
/// UTF-8.
pub fn block_lines(block: &[u8], last: bool) -> Result<BlockLines, InvalidUtf8> {
    let consumed = whole_lines(block, last);
    let text = std::str::from_utf8(&block[..consumed])
        .map_err(|error| invalid_at(block, error.valid_up_to()))?;
    let bytes = text.as_bytes();
    let mut stripped = Vec::new();
    let mut start = 0;
    while start < consumed {
        let end = next_line_end(bytes, start).unwrap_or(consumed);
        stripped.push(stripped_range(text, start, end));
        let crlf = end < consumed && bytes[end] == b'\r' && bytes.get(end + 1) == Some(&b'\n');
        start = end + 1 + usize::from(crlf);
    }
    Ok(BlockLines { stripped, consumed })
}

/// A block's lines after the question left unpaired by the block before (`pending`):
/// line `2i` is question `i`, line `2i + 1` its answer, and an odd last line is unpaired.
pub struct LinePairs<'a> {
    pending: Option<&'a [u8]>,
    block: &'a [u8],
    stripped: &'a [Range<usize>],
}

impl<'a> LinePairs<'a> {
    pub fn new(pending: Option<&'a [u8]>, block: &'a [u8], lines: &'a BlockLines) -> Self {
        LinePairs {
            pending,
            block,
            stripped: &lines.stripped,
        }
    }

    fn lines(&self) -> usize {
        self.stripped.len() + usize::from(self.pending.is_some())
    }

    /// Question/answer pairs.
    pub fn rows(&self) -> usize {
        self.lines() / 2
    }

    /// `head` (if any), then every other line of the block from its line `from`, one a row.
    fn every_other(&self, head: Option<&'a [u8]>, from: usize) -> impl Iterator<Item = &'a [u8]> {
        let (block, rest) = (self.block, self.stripped.get(from..).unwrap_or_default());
        let lines = rest
            .iter()
            .step_by(2)
            .map(move |range| &block[range.clone()]);
        head.into_iter().chain(lines).take(self.rows())
    }

    pub fn questions(&self) -> impl Iterator<Item = &'a [u8]> {
        match self.pending {
            Some(pending) => self.every_other(Some(pending), 1),
            None => self.every_other(None, 0),
        }
    }

    pub fn answers(&self) -> impl Iterator<Item = &'a [u8]> {
        self.every_other(None, usize::from(self.pending.is_none()))
    }

    /// The last line when it has no answer (yet).
    pub fn unpaired(&self) -> Option<&'a [u8]> {
        if self.lines() % 2 == 0 {
            return None;
        }
        Some(match self.stripped.last() {
            Some(range) => &self.block[range.clone()],
            None => self.pending?,
        })
    }
}

/// Bytes of the Arrow buffers of `values` as a `large_string` column: (offsets, data).
pub fn column_sizes<'v>(values: impl Iterator<Item = &'v [u8]>) -> (usize, usize) {
    let (rows, text) = values.fold((0, 0), |(rows, text), value| (rows + 1, text + value.len()));
    ((rows + 1) * 8, text)
}

/// The little-endian int64 offsets of `values` as a `large_string` column, into `out` of the
/// size [`column_sizes`] gives.
pub fn write_offsets<'v>(values: impl Iterator<Item = &'v [u8]>, out: &mut [u8]) {
    let mut end = 0i64;
    out[..8].copy_from_slice(&end.to_le_bytes());
    for (slot, value) in out[8..].chunks_exact_mut(8).zip(values) {
        end += value.len() as i64;
        slot.copy_from_slice(&end.to_le_bytes());
    }
}

/// The text of `values` back to back, into `out` of the size [`column_sizes`] gives.
pub fn write_data<'v>(values: impl Iterator<Item = &'v [u8]>, out: &mut [u8]) {
    let mut end = 0;
    for value in values {
        out[end..end + value.len()].copy_from_slice(value);
        end += value.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every character `str.isspace()` holds for (from CPython's `_PyUnicode_IsWhitespace`).
    const PYTHON_WHITESPACE: &[u32] = &[
        0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x85, 0xA0, 0x1680, 0x2000,
        0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A, 0x2028,
        0x2029, 0x202F, 0x205F, 0x3000,
    ];

    /// Text mode's lines, a character at a time: `\r\n`, `\r` and `\n` end a line; then each
    /// stripped by popping listed whitespace from both ends.
    fn reference(text: &str) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        let mut lines = Vec::new();
        let mut line = Vec::new();
        let mut index = 0;
        while index < chars.len() {
            match chars[index] {
                '\r' if chars.get(index + 1) == Some(&'\n') => {
                    lines.push(std::mem::take(&mut line));
                    index += 1;
                }
                '\r' | '\n' => lines.push(std::mem::take(&mut line)),
                c => line.push(c),
            }
            index += 1;
        }
        if !line.is_empty() {
            lines.push(line);
        }
        let space = |c: &char| PYTHON_WHITESPACE.contains(&(*c as u32));
        lines
            .into_iter()
            .map(|mut line| {
                while line.last().is_some_and(space) {
                    line.pop();
                }
                let first = line.iter().position(|c| !space(c)).unwrap_or(line.len());
                line[first..].iter().collect()
            })
            .collect()
    }

    fn stripped(block: &[u8], lines: &BlockLines) -> Vec<String> {
        lines
            .stripped
            .iter()
            .map(|range| String::from_utf8(block[range.clone()].to_vec()).unwrap())
            .collect()
    }

    /// The lines of `text` read in blocks cut at `cuts`, as `dmmath.py` carries the unread
    /// rest of a block into the next.
    fn lines_in_blocks(text: &[u8], cuts: &[usize]) -> Vec<String> {
        let mut carry = Vec::new();
        let mut out = Vec::new();
        let mut previous = 0;
        let ends = cuts.iter().copied().chain([text.len()]);
        for (index, cut) in ends.enumerate() {
            let cut = cut.clamp(previous, text.len());
            carry.extend_from_slice(&text[previous..cut]);
            previous = cut;
            let last = index == cuts.len();
            let lines = block_lines(&carry, last).unwrap();
            out.extend(stripped(&carry, &lines));
            carry.drain(..lines.consumed);
        }
        assert!(carry.is_empty());
        out
    }

    #[test]
    fn the_whitespace_is_python_s() {
        for code in 0..=0x10FFFFu32 {
            if let Some(c) = char::from_u32(code) {
                assert_eq!(
                    is_python_whitespace(c),
                    PYTHON_WHITESPACE.contains(&code),
                    "U+{code:04X}"
                );
            }
        }
    }

    #[test]
    fn lines_end_only_at_the_three_line_ends() {
        let text = "a\nb\r\nc\rd\x0be\x0cf\x1cg\u{85}h\u{2028}i\r\r\n\nj";
        let lines = block_lines(text.as_bytes(), true).unwrap();
        assert_eq!(
            stripped(text.as_bytes(), &lines),
            [
                "a",
                "b",
                "c",
                "d\x0be\x0cf\x1cg\u{85}h\u{2028}i",
                "",
                "",
                "j"
            ]
        );
        assert_eq!(lines.consumed, text.len());
    }

    #[test]
    fn stripping_removes_python_s_whitespace_only() {
        let text = "\u{a0}\x1f a b\u{3000}\u{202f}\n\u{200b}x\u{feff}\n\t\u{2029}\n";
        let lines = block_lines(text.as_bytes(), false).unwrap();
        // U+200B (zero width space) and U+FEFF are not whitespace for Python.
        assert_eq!(
            stripped(text.as_bytes(), &lines),
            ["a b", "\u{200b}x\u{feff}", ""]
        );
    }

    #[test]
    fn an_unfinished_line_waits_for_the_next_block() {
        let lines = block_lines(b"q\na", false).unwrap();
        assert_eq!((lines.stripped.len(), lines.consumed), (1, 2));
        // A \r at the end may be the start of \r\n.
        let lines = block_lines(b"q\na\r", false).unwrap();
        assert_eq!((lines.stripped.len(), lines.consumed), (1, 2));
        // At the end of the file both are lines.
        let lines = block_lines(b"q\na\r", true).unwrap();
        assert_eq!((lines.stripped.len(), lines.consumed), (2, 4));
        assert_eq!(lines_in_blocks(b"q\r\na", &[1, 2]), ["q", "a"]);
        assert_eq!(lines_in_blocks(b"", &[]), Vec::<String>::new());
    }

    #[test]
    fn text_that_is_not_utf8_names_its_line_and_byte() {
        let error = block_lines(b"ok\r\nfine\n\xc3(bad\n", true).unwrap_err();
        assert_eq!(error, InvalidUtf8 { line: 2, byte: 0 });
        let error = block_lines(b"\xc3\xa9\nab\xff\n", true).unwrap_err();
        assert_eq!(error, InvalidUtf8 { line: 1, byte: 2 });
        // Bytes after the last line end are checked with the block they end in.
        assert!(block_lines(b"ok\n\xff", false).is_ok());
    }

    #[test]
    fn pairs_continue_across_blocks() {
        let first = block_lines(b"q1\na1\nq2\n", false).unwrap();
        let pairs = LinePairs::new(None, b"q1\na1\nq2\n", &first);
        assert_eq!(pairs.rows(), 1);
        assert_eq!(pairs.unpaired(), Some(&b"q2"[..]));
        let second = block_lines(b" a2 \nq3\na3", true).unwrap();
        let pairs = LinePairs::new(Some(b"q2"), b" a2 \nq3\na3", &second);
        assert_eq!(pairs.questions().collect::<Vec<_>>(), [&b"q2"[..], b"q3"]);
        assert_eq!(pairs.answers().collect::<Vec<_>>(), [&b"a2"[..], b"a3"]);
        assert_eq!(pairs.unpaired(), None);
    }

    #[test]
    fn a_column_is_arrow_s_string_layout() {
        let values: [&[u8]; 3] = [b"ab", b"", "é".as_bytes()];
        let (offset_bytes, data_bytes) = column_sizes(values.iter().copied());
        assert_eq!((offset_bytes, data_bytes), (32, 4));
        let (mut offsets, mut data) = (vec![0xAA; offset_bytes], vec![0; data_bytes]);
        write_offsets(values.iter().copied(), &mut offsets);
        write_data(values.iter().copied(), &mut data);
        let offsets: Vec<i64> = offsets
            .chunks(8)
            .map(|chunk| i64::from_le_bytes(chunk.try_into().unwrap()))
            .collect();
        assert_eq!(offsets, [0, 2, 2, 4]);
        assert_eq!(data, "abé".as_bytes());
    }

    proptest::proptest! {
        #[test]
        fn blocks_give_the_reference_s_lines(
            text in "[\r\n\t\x0b\x0c\x1c\x1fa-c \u{85}\u{a0}\u{2028}\u{3000}\u{e9}\u{1f600}]{0,80}",
            cuts in proptest::collection::vec(0usize..90, 0..4),
        ) {
            let mut cuts = cuts;
            cuts.sort_unstable();
            // Cuts fall anywhere, inside a character too: a block only ends after a line end.
            proptest::prop_assert_eq!(lines_in_blocks(text.as_bytes(), &cuts), reference(&text));
        }

        #[test]
        fn a_bad_byte_is_named_by_the_reference_s_line_and_byte(
            before in "[\r\na\u{e9}]{0,30}",
            after in "[\r\na]{0,5}",
        ) {
            let mut block = before.as_bytes().to_vec();
            block.push(0xFF);
            block.extend_from_slice(after.as_bytes());
            // The reference's lines of the text before the bad byte: all but the last ended.
            let ended = reference(&format!("{before}x")).len() - 1;
            let open = before.len() - before.rfind(['\r', '\n']).map_or(0, |end| end + 1);
            let error = block_lines(&block, true).unwrap_err();
            proptest::prop_assert_eq!(error, InvalidUtf8 { line: ended, byte: open });
        }
    }
}
