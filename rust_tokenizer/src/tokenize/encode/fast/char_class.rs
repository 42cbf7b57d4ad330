//! The character classes data_io's split regex distinguishes, with Oniguruma's Unicode tables
//! (`char_class_table.rs`), so that the hand-written splitter agrees with the engine on every code
//! point, not with whatever Unicode version Rust's `char` methods follow.

use std::sync::OnceLock;

use super::char_class_table::{LETTER, NUMBER, SPACE};

/// What the split regex can tell apart about one character.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum CharClass {
    /// Neither `\s`, `\p{L}` nor `\p{N}` (punctuation, symbols, marks, controls, unassigned).
    Other = 0,
    /// `\p{L}`.
    Letter = 1,
    /// `\p{N}`.
    Number = 2,
    /// `\s` other than `\r` and `\n`.
    Space = 3,
    /// `\r` or `\n`, which the regex names on their own.
    Newline = 4,
}

impl CharClass {
    pub(crate) fn is_space(self) -> bool {
        matches!(self, CharClass::Space | CharClass::Newline)
    }
}

/// Classes of ASCII, the hot path (the same as Oniguruma's, which the tests check with the rest).
const ASCII: [CharClass; 128] = {
    let mut table = [CharClass::Other; 128];
    let mut byte = 0;
    while byte < 128 {
        table[byte] = match byte as u8 {
            b'a'..=b'z' | b'A'..=b'Z' => CharClass::Letter,
            b'0'..=b'9' => CharClass::Number,
            b'\r' | b'\n' => CharClass::Newline,
            b'\t' | 0x0B | 0x0C | b' ' => CharClass::Space,
            _ => CharClass::Other,
        };
        byte += 1;
    }
    table
};

/// The class of an ASCII byte (`byte < 0x80`).
#[inline(always)]
pub(crate) fn ascii_class(byte: u8) -> CharClass {
    ASCII[usize::from(byte & 0x7F)]
}

/// Class of every code point: a direct table for the Basic Multilingual Plane, sorted ranges
/// (binary search) above it.
pub(crate) struct CharClasses {
    bmp: Box<[CharClass; BMP_SIZE as usize]>,
    astral: Vec<(u32, u32, CharClass)>,
}

const BMP_SIZE: u32 = 0x1_0000;

impl CharClasses {
    /// The table, built once per process (about a millisecond).
    pub(crate) fn get() -> &'static CharClasses {
        static CLASSES: OnceLock<CharClasses> = OnceLock::new();
        CLASSES.get_or_init(CharClasses::build)
    }

    fn build() -> CharClasses {
        let mut bmp: Box<[CharClass; BMP_SIZE as usize]> =
            vec![CharClass::Other; BMP_SIZE as usize]
                .into_boxed_slice()
                .try_into()
                .expect("BMP_SIZE entries");
        let mut astral = Vec::new();
        for (ranges, class) in [
            (&LETTER[..], CharClass::Letter),
            (&NUMBER[..], CharClass::Number),
            (&SPACE[..], CharClass::Space),
        ] {
            for &(first, last) in ranges {
                for code in first..=last.min(BMP_SIZE - 1) {
                    bmp[code as usize] = class;
                }
                if last >= BMP_SIZE {
                    astral.push((first.max(BMP_SIZE), last, class));
                }
            }
        }
        bmp[usize::from(b'\r')] = CharClass::Newline;
        bmp[usize::from(b'\n')] = CharClass::Newline;
        astral.sort_unstable_by_key(|&(first, _, _)| first);
        CharClasses { bmp, astral }
    }

    #[inline]
    pub(crate) fn of(&self, code: u32) -> CharClass {
        if code < 0x80 {
            return ascii_class(code as u8);
        }
        if code < BMP_SIZE {
            return self.bmp[code as usize];
        }
        let index = self.astral.partition_point(|&(first, _, _)| first <= code);
        match index.checked_sub(1).map(|i| self.astral[i]) {
            Some((_, last, class)) if code <= last => class,
            _ => CharClass::Other,
        }
    }

    /// Class and UTF-8 length of the character starting at byte `at` of valid UTF-8 `bytes`.
    #[inline(always)]
    pub(crate) fn at(&self, bytes: &[u8], at: usize) -> (CharClass, usize) {
        let lead = bytes[at];
        if lead < 0x80 {
            return (ascii_class(lead), 1);
        }
        let (code, len) = decode_utf8(bytes, at);
        (self.of(code), len)
    }
}

/// The code point and length of the character starting at `at`; `bytes` must be valid UTF-8 and
/// `at` a character boundary.
#[inline(always)]
pub(crate) fn decode_utf8(bytes: &[u8], at: usize) -> (u32, usize) {
    let lead = u32::from(bytes[at]);
    let cont = |offset: usize| u32::from(bytes[at + offset]) & 0x3F;
    if lead < 0x80 {
        (lead, 1)
    } else if lead < 0xE0 {
        (((lead & 0x1F) << 6) | cont(1), 2)
    } else if lead < 0xF0 {
        (((lead & 0x0F) << 12) | (cont(1) << 6) | cont(2), 3)
    } else {
        (
            ((lead & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3),
            4,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use onig::Regex;

    /// Inclusive ranges of the code points that the regex `\A<class>\z` matches.
    fn engine_ranges(class: &str) -> Vec<(u32, u32)> {
        let regex = Regex::new(&format!(r"\A{class}\z")).unwrap();
        let mut ranges: Vec<(u32, u32)> = Vec::new();
        let mut buffer = [0u8; 4];
        for code in 0..=char::MAX as u32 {
            let Some(c) = char::from_u32(code) else {
                continue;
            };
            if regex.is_match(c.encode_utf8(&mut buffer)) {
                match ranges.last_mut() {
                    Some(range) if range.1 + 1 == code => range.1 = code,
                    _ => ranges.push((code, code)),
                }
            }
        }
        ranges
    }

    fn table_source(tables: &[(&str, Vec<(u32, u32)>)]) -> String {
        let header = include_str!("char_class_table.rs")
            .split("#[rustfmt::skip]")
            .next()
            .unwrap()
            .to_string();
        let mut source = header;
        for (name, ranges) in tables {
            source.push_str("#[rustfmt::skip]\n");
            source.push_str(&format!(
                "pub(super) const {name}: [(u32, u32); {}] = [\n",
                ranges.len()
            ));
            for chunk in ranges.chunks(4) {
                let items: Vec<String> = chunk
                    .iter()
                    .map(|(first, last)| format!("(0x{first:04X}, 0x{last:04X})"))
                    .collect();
                source.push_str(&format!("    {},\n", items.join(", ")));
            }
            source.push_str("];\n");
        }
        source
    }

    #[test]
    fn table_matches_oniguruma() {
        let tables = [
            ("LETTER", engine_ranges(r"\p{L}")),
            ("NUMBER", engine_ranges(r"\p{N}")),
            ("SPACE", engine_ranges(r"\s")),
        ];
        let expected = table_source(&tables);
        if expected != include_str!("char_class_table.rs") {
            let out = concat!(env!("CARGO_MANIFEST_DIR"), "/target/char_class_table.rs");
            std::fs::write(out, &expected).unwrap();
            panic!("src/tokenize/encode/fast/char_class_table.rs is out of date: the engine's is in {out}");
        }
    }

    #[test]
    fn every_code_point_has_the_engine_class() {
        let classes = CharClasses::get();
        let letter = Regex::new(r"\A\p{L}\z").unwrap();
        let number = Regex::new(r"\A\p{N}\z").unwrap();
        let space = Regex::new(r"\A\s\z").unwrap();
        let mut buffer = [0u8; 4];
        for code in 0..=char::MAX as u32 {
            let Some(c) = char::from_u32(code) else {
                continue;
            };
            let text = c.encode_utf8(&mut buffer);
            let expected = if c == '\r' || c == '\n' {
                CharClass::Newline
            } else if space.is_match(text) {
                CharClass::Space
            } else if letter.is_match(text) {
                CharClass::Letter
            } else if number.is_match(text) {
                CharClass::Number
            } else {
                CharClass::Other
            };
            assert_eq!(classes.of(code), expected, "U+{code:04X}");
            assert_eq!(classes.at(text.as_bytes(), 0), (expected, c.len_utf8()));
        }
    }
}
