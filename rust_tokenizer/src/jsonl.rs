//! JSON lines of text columns, byte for byte as data_io writes a cleaned row:
//! `orjson.dumps({key: value, ...}) + b"\n"` for a dict whose values are strings (or None).
//!
//! orjson escapes only three kinds of bytes in a string: `"` and `\` (as `\"` and `\\`) and the
//! controls U+0000..U+001F (`\b`, `\t`, `\n`, `\f`, `\r` for those five, `\u00XX` with lowercase
//! hex for the others); every other character, DEL, U+2028/U+2029 and emoji included, is
//! copied as its UTF-8 bytes. So a line is built from the column bytes with one table lookup a
//! byte, not from Python objects a row (`hrm_assets/cleaning/jsonl_columns.py` binds it).

use crate::error::{Error, Result};

/// One text column: the values of rows `0..offsets.len() - 1` are
/// `data[offsets[i]..offsets[i + 1]]` (Arrow's string layout, offsets widened to i64), and
/// `valid[i] == 0` makes row `i` a null (JSON `null`) whatever its bytes.
pub struct TextColumn<'a> {
    pub key: &'a str,
    pub offsets: &'a [i64],
    pub data: &'a [u8],
    pub valid: Option<&'a [u8]>,
}

/// The escape of each byte: 0 copies it, `b'u'` writes `\u00XX`, anything else `\` + it.
const ESCAPES: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = b'u';
        byte += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0A] = b'n';
    table[0x0C] = b'f';
    table[0x0D] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Append `text` (UTF-8) to `out` as a JSON string, quotes included, escaped as orjson does.
pub fn push_json_string(out: &mut Vec<u8>, text: &[u8]) {
    out.reserve(text.len() + 2);
    out.push(b'"');
    let mut start = 0;
    let mut index = 0;
    while index < text.len() {
        // Most text has nothing to escape: skip it eight bytes at a time.
        if index + 8 <= text.len() {
            let word = u64::from_le_bytes(text[index..index + 8].try_into().unwrap());
            if !needs_escape(word) {
                index += 8;
                continue;
            }
        }
        let byte = text[index];
        let escape = ESCAPES[byte as usize];
        if escape != 0 {
            out.extend_from_slice(&text[start..index]);
            if escape == b'u' {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(byte >> 4) as usize]);
                out.push(HEX[(byte & 0x0F) as usize]);
            } else {
                out.push(b'\\');
                out.push(escape);
            }
            start = index + 1;
        }
        index += 1;
    }
    out.extend_from_slice(&text[start..]);
    out.push(b'"');
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Whether any byte of `word` is below 0x20, `"` or `\` (exact: the bit tricks below
/// never miss such a byte and never flag a word without one).
fn needs_escape(word: u64) -> bool {
    let below_space = word.wrapping_sub(ONES * 0x20) & !word;
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let zero_quote = quote.wrapping_sub(ONES) & !quote;
    let zero_backslash = backslash.wrapping_sub(ONES) & !backslash;
    (below_space | zero_quote | zero_backslash) & HIGHS != 0
}

/// The rows of `columns` as JSON lines, keys in the columns' order: one
/// `{"key":"value",...}\n` a row. Every column must have the same number of rows, offsets that
/// never decrease and stay within its data, and values that are UTF-8; otherwise an error names
/// the column (and row, counted from 1).
pub fn json_lines(columns: &[TextColumn<'_>]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    json_lines_into(columns, &mut out)?;
    Ok(out)
}

/// [`json_lines`] written into `out`, which is cleared first and keeps its capacity: a writer
/// encoding batch after batch into one buffer touches its pages once, where a new buffer a
/// batch is new memory the kernel maps and zeroes each time (for GSM8K's 7 MB batches that
/// cost more than the encoding). On an error `out` is left empty.
pub fn json_lines_into(columns: &[TextColumn<'_>], out: &mut Vec<u8>) -> Result<()> {
    out.clear();
    let rows = check_columns(columns)?;
    let mut keys = Vec::with_capacity(columns.len());
    for (index, column) in columns.iter().enumerate() {
        let mut key = Vec::new();
        key.push(if index == 0 { b'{' } else { b',' });
        push_json_string(&mut key, column.key.as_bytes());
        key.push(b':');
        keys.push(key);
    }
    let text: i64 = columns.iter().map(|c| c.offsets[rows] - c.offsets[0]).sum();
    let framing: usize = keys.iter().map(Vec::len).sum::<usize>() + 2 * columns.len() + 2;
    out.reserve(text as usize + rows * framing + rows / 8);
    for row in 0..rows {
        for (column, key) in columns.iter().zip(&keys) {
            out.extend_from_slice(key);
            if column.valid.is_some_and(|valid| valid[row] == 0) {
                out.extend_from_slice(b"null");
                continue;
            }
            let value =
                &column.data[column.offsets[row] as usize..column.offsets[row + 1] as usize];
            push_json_string(out, value);
        }
        out.extend_from_slice(b"}\n");
    }
    Ok(())
}

/// The rows every column has, after checking the columns' shapes.
fn check_columns(columns: &[TextColumn<'_>]) -> Result<usize> {
    let Some(first) = columns.first() else {
        return Err(Error::Config("no columns to write as JSON lines".into()));
    };
    let rows = first
        .offsets
        .len()
        .checked_sub(1)
        .ok_or_else(|| Error::Config(format!("column {:?}: offsets are empty", first.key)))?;
    for column in columns {
        let problem = |what: &str| Error::Config(format!("column {:?}: {what}", column.key));
        if column.offsets.len() != rows + 1 {
            return Err(problem(&format!(
                "{} rows, the first column has {rows}",
                column.offsets.len().saturating_sub(1)
            )));
        }
        if column.valid.is_some_and(|valid| valid.len() != rows) {
            return Err(problem("validity length differs from the rows"));
        }
        if column.offsets[0] < 0 || column.offsets.windows(2).any(|pair| pair[1] < pair[0]) {
            return Err(problem("offsets are negative or decrease"));
        }
        if column.offsets[rows] as u64 > column.data.len() as u64 {
            return Err(problem("offsets point past the data"));
        }
        check_utf8(column)?;
    }
    Ok(rows)
}

/// Every value of `column` but the nulls is UTF-8. One pass over the text: its bytes as a
/// whole are UTF-8 and no value starts inside a character; only when that fails is each value
/// checked alone, for the first bad row's number.
fn check_utf8(column: &TextColumn<'_>) -> Result<()> {
    let offsets = column.offsets;
    let (first, last) = (offsets[0] as usize, offsets[offsets.len() - 1] as usize);
    let starts_ok = || {
        offsets.iter().all(|&offset| {
            offset as usize >= last || !is_continuation(column.data[offset as usize])
        })
    };
    if std::str::from_utf8(&column.data[first..last]).is_ok() && starts_ok() {
        return Ok(());
    }
    for row in 0..offsets.len() - 1 {
        if column.valid.is_some_and(|valid| valid[row] == 0) {
            continue;
        }
        let value = &column.data[offsets[row] as usize..offsets[row + 1] as usize];
        if std::str::from_utf8(value).is_err() {
            return Err(Error::Config(format!(
                "column {:?}, row {}: text is not valid UTF-8",
                column.key,
                row + 1
            )));
        }
    }
    Ok(())
}

fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column<'a>(
        key: &'a str,
        values: &[&str],
        storage: &'a mut (Vec<i64>, Vec<u8>),
    ) -> TextColumn<'a> {
        storage.0.push(0);
        for value in values {
            storage.1.extend_from_slice(value.as_bytes());
            storage.0.push(storage.1.len() as i64);
        }
        TextColumn {
            key,
            offsets: &storage.0,
            data: &storage.1,
            valid: None,
        }
    }

    fn json(text: &str) -> String {
        let mut out = Vec::new();
        push_json_string(&mut out, text.as_bytes());
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn escapes_exactly_what_orjson_escapes() {
        assert_eq!(json("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(json("\u{8}\t\n\u{c}\r"), r#""\b\t\n\f\r""#);
        assert_eq!(
            json("\u{0}\u{1f}\u{b}\u{1b}"),
            r#""\u0000\u001f\u000b\u001b""#
        );
        // DEL, the line separators and anything past ASCII are copied.
        let copied = "\u{7f}\u{2028}\u{2029}é東京😀";
        assert_eq!(json(copied), format!("\"{copied}\""));
        assert_eq!(json(""), "\"\"");
    }

    /// The escape one byte at a time, as the table says: the reference of the word-at-a-time
    /// scan.
    fn reference(text: &str) -> String {
        let mut out = String::from("\"");
        for c in text.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\u{8}' => out.push_str("\\b"),
                '\t' => out.push_str("\\t"),
                '\n' => out.push_str("\\n"),
                '\u{c}' => out.push_str("\\f"),
                '\r' => out.push_str("\\r"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    proptest::proptest! {
        #[test]
        fn the_word_scan_escapes_as_the_byte_reference(
            text in "[\\x00-\\x21\"#\\\\a-z\\x7f\u{a0}\u{2028}\u{e9}\u{1f600}]{0,40}"
        ) {
            proptest::prop_assert_eq!(json(&text), reference(&text));
        }
    }

    #[test]
    fn a_value_starting_inside_a_character_is_not_utf8() {
        // "é" is two bytes; a row boundary between them leaves both rows invalid.
        let data = "é".as_bytes();
        let offsets = [0i64, 1, 2];
        let column = TextColumn {
            key: "k",
            offsets: &offsets,
            data,
            valid: None,
        };
        let error = json_lines(&[column]).unwrap_err().to_string();
        assert!(error.contains("row 1"), "{error}");
        // A null row's bytes are not text.
        let valid = [0u8, 1];
        let offsets = [0i64, 1, 1];
        let column = TextColumn {
            key: "k",
            offsets: &offsets,
            data: &[0xFF],
            valid: Some(&valid),
        };
        assert_eq!(
            json_lines(&[column]).unwrap(),
            b"{\"k\":null}\n{\"k\":\"\"}\n"
        );
    }

    #[test]
    fn lines_keep_the_key_order_and_write_nulls() {
        let (mut a, mut b) = (Default::default(), Default::default());
        let mut first = column("instruction", &["q1", "q\"2"], &mut a);
        let second = column("response", &["r1", "r2"], &mut b);
        let valid = [1u8, 0];
        first.valid = Some(&valid);
        let lines = json_lines(&[first, second]).unwrap();
        assert_eq!(
            String::from_utf8(lines).unwrap(),
            "{\"instruction\":\"q1\",\"response\":\"r1\"}\n{\"instruction\":null,\"response\":\"r2\"}\n"
        );
    }

    #[test]
    fn a_reused_buffer_holds_only_the_last_batch() {
        let (mut a, mut b) = (Default::default(), Default::default());
        let mut out = Vec::new();
        json_lines_into(&[column("k", &["long value", "x"], &mut a)], &mut out).unwrap();
        let capacity = out.capacity();
        json_lines_into(&[column("k", &["y"], &mut b)], &mut out).unwrap();
        assert_eq!(out, b"{\"k\":\"y\"}\n");
        assert_eq!(out.capacity(), capacity);
        let bytes = [0xFF];
        let offsets = [0i64, 1];
        let bad = TextColumn {
            key: "k",
            offsets: &offsets,
            data: &bytes,
            valid: None,
        };
        assert!(json_lines_into(&[bad], &mut out).is_err());
        assert!(out.is_empty());
    }

    #[test]
    fn an_empty_batch_gives_no_line() {
        let mut a = Default::default();
        assert!(json_lines(&[column("k", &[], &mut a)]).unwrap().is_empty());
    }

    #[test]
    fn bad_shapes_and_bad_utf8_name_the_column() {
        let (mut a, mut b) = (Default::default(), Default::default());
        let short = column("b", &["x"], &mut b);
        let error = json_lines(&[column("a", &["x", "y"], &mut a), short]).unwrap_err();
        assert!(error.to_string().contains("column \"b\""), "{error}");

        let bytes = [b'o', b'k', 0xFF];
        let offsets = [0i64, 2, 3];
        let bad = TextColumn {
            key: "response",
            offsets: &offsets,
            data: &bytes,
            valid: None,
        };
        let error = json_lines(&[bad]).unwrap_err().to_string();
        assert!(error.contains("\"response\", row 2"), "{error}");

        let past = [0i64, 9];
        let error = json_lines(&[TextColumn {
            key: "k",
            offsets: &past,
            data: b"abc",
            valid: None,
        }])
        .unwrap_err()
        .to_string();
        assert!(error.contains("past the data"), "{error}");
        assert!(json_lines(&[]).is_err());
    }
}
