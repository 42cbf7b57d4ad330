//! data_io's split regex, written out by hand:
//!
//! ```text
//! (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*
//! |\s*[\r\n]+|\s+(?!\S)|\s+
//! ```
//!
//! run as `tokenizers`' `Split(..., behavior="isolated")` runs it with Oniguruma: leftmost
//! matches, alternatives tried in order, quantifiers greedy with backtracking. Every character
//! starts a match of some alternative (a letter, a number, `\s`, or anything else), so the
//! pieces cover the text with no gaps, each decided by the characters at its start:
//!
//! - `'` then `s|t|m|d` or `re|ve|ll` in any case (Oniguruma's case folding also maps `ſ`,
//!   U+017F, to `s`): the contraction.
//! - a letter, or one character that is not `\r`, `\n`, a letter or a number followed by a
//!   letter: that character and the letters after it.
//! - a number: that number alone.
//! - an optional ASCII space, then characters that are not `\s`, letters or numbers, then any
//!   `\r`/`\n`.
//! - otherwise a run of `\s` starting here: up to its last `\r`/`\n` if it has one
//!   (`\s*[\r\n]+` backtracks to it); else all of it at the end of the text, all but its last
//!   character if that leaves one (`\s+(?!\S)`), or the single character (`\s+`).

use super::char_class::{ascii_class, CharClass, CharClasses};

/// Call `piece` with each piece of `text`, in order; the pieces concatenate to `text`.
pub(crate) fn for_each_piece<'t>(text: &'t str, mut piece: impl FnMut(&'t str)) {
    let classes = CharClasses::get();
    let bytes = text.as_bytes();
    let mut start = 0;
    while start < bytes.len() {
        let end = piece_end(classes, bytes, start);
        piece(&text[start..end]);
        start = end;
    }
}

/// Where the piece that starts at `start` (a character boundary before the end) ends.
#[inline]
fn piece_end(classes: &CharClasses, bytes: &[u8], start: usize) -> usize {
    let (class, len) = classes.at(bytes, start);
    let after = start + len;
    let next = || {
        (after < bytes.len())
            .then(|| classes.at(bytes, after))
            .map(|(class, len)| (class, after + len))
    };
    match class {
        CharClass::Letter => letters_end(classes, bytes, after),
        CharClass::Number => after,
        CharClass::Newline => space_run_end(classes, bytes, start),
        CharClass::Space => match next() {
            Some((CharClass::Letter, end)) => letters_end(classes, bytes, end),
            Some((CharClass::Other, _)) if bytes[start] == b' ' => {
                newlines_end(bytes, others_end(classes, bytes, after))
            }
            _ => space_run_end(classes, bytes, start),
        },
        CharClass::Other => {
            if bytes[start] == b'\'' {
                if let Some(len) = contraction_len(bytes, after) {
                    return after + len;
                }
            }
            match next() {
                Some((CharClass::Letter, end)) => letters_end(classes, bytes, end),
                _ => newlines_end(bytes, others_end(classes, bytes, after)),
            }
        }
    }
}

/// Bytes after an apostrophe that complete `(?i:'s|'t|'re|'ve|'m|'ll|'d)`, if any.
#[inline]
fn contraction_len(bytes: &[u8], at: usize) -> Option<usize> {
    let second_is = |accepted: [u8; 2]| bytes.get(at + 1).is_some_and(|b| accepted.contains(b));
    match *bytes.get(at)? {
        b's' | b'S' | b't' | b'T' | b'm' | b'M' | b'd' | b'D' => Some(1),
        b'r' | b'R' | b'v' | b'V' if second_is([b'e', b'E']) => Some(2),
        b'l' | b'L' if second_is([b'l', b'L']) => Some(2),
        // U+017F LATIN SMALL LETTER LONG S case-folds to `s`.
        0xC5 if bytes.get(at + 1) == Some(&0xBF) => Some(2),
        _ => None,
    }
}

/// End of the run of `class` characters starting at `at`.
#[inline(always)]
fn run_end(classes: &CharClasses, bytes: &[u8], mut at: usize, class: CharClass) -> usize {
    loop {
        // ASCII runs in a tight loop; other characters one at a time.
        while let Some(&byte) = bytes.get(at) {
            if byte >= 0x80 || ascii_class(byte) != class {
                break;
            }
            at += 1;
        }
        match bytes.get(at) {
            Some(&byte) if byte >= 0x80 => {
                let (found, len) = classes.at(bytes, at);
                if found != class {
                    return at;
                }
                at += len;
            }
            _ => return at,
        }
    }
}

/// End of the run of letters starting at `at`: ASCII letters eight at a time, so that the end
/// of a short word costs no branch per byte.
#[inline(always)]
fn letters_end(classes: &CharClasses, bytes: &[u8], mut at: usize) -> usize {
    loop {
        match bytes.get(at..at + 8) {
            Some(word) => {
                let letters =
                    ascii_letter_prefix(u64::from_le_bytes(word.try_into().expect("8 bytes")));
                at += letters;
                if letters == 8 {
                    continue;
                }
            }
            None => {
                while bytes
                    .get(at)
                    .is_some_and(|&b| b < 0x80 && ascii_class(b) == CharClass::Letter)
                {
                    at += 1;
                }
            }
        }
        match bytes.get(at) {
            Some(&byte) if byte >= 0x80 => {
                let (class, len) = classes.at(bytes, at);
                if class != CharClass::Letter {
                    return at;
                }
                at += len;
            }
            _ => return at,
        }
    }
}

/// How many of the 8 bytes of `word` (little-endian), from the first, are ASCII letters.
#[inline(always)]
fn ascii_letter_prefix(word: u64) -> usize {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Per byte, on 7-bit values so that no sum carries into the next byte: bit 7 of
    // `lower + 0x1F` is set iff lower >= b'a', of `lower + 0x05` iff lower > b'z'.
    let lower = (word | 0x2020_2020_2020_2020) & !HIGH;
    let at_least_a = lower + 0x1F1F_1F1F_1F1F_1F1F;
    let past_z = lower + 0x0505_0505_0505_0505;
    let letters = at_least_a & !past_z & !word & HIGH;
    ((!letters & HIGH).trailing_zeros() / 8) as usize
}

#[inline]
fn others_end(classes: &CharClasses, bytes: &[u8], at: usize) -> usize {
    run_end(classes, bytes, at, CharClass::Other)
}

#[inline]
fn newlines_end(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len() && matches!(bytes[at], b'\r' | b'\n') {
        at += 1;
    }
    at
}

/// End of the whitespace piece starting at `start` (the last three alternatives of the regex).
fn space_run_end(classes: &CharClasses, bytes: &[u8], start: usize) -> usize {
    let mut at = start;
    let mut last_start = start;
    let mut after_last_newline = None;
    while at < bytes.len() {
        let (class, len) = classes.at(bytes, at);
        if !class.is_space() {
            break;
        }
        if class == CharClass::Newline {
            after_last_newline = Some(at + len);
        }
        last_start = at;
        at += len;
    }
    match after_last_newline {
        Some(end) => end,
        None if at == bytes.len() || last_start == start => at,
        None => last_start,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::tokenize::encode::fast::family::SPLIT_PATTERN;
    use onig::Regex;
    use proptest::prelude::*;

    fn pieces(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        for_each_piece(text, |piece| out.push(piece));
        out
    }

    /// The pieces `tokenizers`' isolated `Split` makes: matches and the gaps between them.
    fn engine_pieces<'t>(regex: &Regex, text: &'t str) -> Vec<&'t str> {
        let mut out = Vec::new();
        let mut previous = 0;
        for (start, end) in regex.find_iter(text) {
            if previous != start {
                out.push(&text[previous..start]);
            }
            out.push(&text[start..end]);
            previous = end;
        }
        if previous != text.len() {
            out.push(&text[previous..]);
        }
        out
    }

    fn assert_same_pieces(regex: &Regex, text: &str) {
        assert_eq!(pieces(text), engine_pieces(regex, text), "text {text:?}");
    }

    #[test]
    fn ascii_letter_prefix_counts_leading_letters() {
        for byte in 0..=255u8 {
            let mut word = *b"abcdefgh";
            word[3] = byte;
            let expected = if byte.is_ascii_alphabetic() { 8 } else { 3 };
            assert_eq!(
                ascii_letter_prefix(u64::from_le_bytes(word)),
                expected,
                "{byte:#x}"
            );
        }
        assert_eq!(ascii_letter_prefix(u64::from_le_bytes(*b" Hello w")), 0);
        assert_eq!(ascii_letter_prefix(u64::from_le_bytes(*b"ZzAa@[`{")), 4);
    }

    #[test]
    fn examples_match_the_engine() {
        let regex = Regex::new(SPLIT_PATTERN).unwrap();
        for text in [
            "",
            "Hello world",
            "  Hello   world  ",
            "it's they'RE we'Ll I'D you'VE 'S 'sa 'r 'l 'lx ’s ’S 'ſ 'ſt",
            "''s '''ll",
            "a\n\nb\r\n\r\nc \n d\t\n\t e",
            "x  \u{a0}\u{2003}\u{3000}y\u{a0}z\u{3000}\u{3000}",
            "trailing spaces   ",
            "trailing newline\n",
            " \n",
            "\t.\t\tx\t1",
            "12345678901234567890 3.14e-10 1,000",
            "!!!\n\n?? ..a ...\r\n",
            "数学问题：小明有3个苹果。",
            "👨\u{200d}👩\u{200d}👧 👍🏽 🇫🇷",
            "Cafe\u{301} e\u{301}\u{302}",
            "\u{85}x\u{2028}y\u{b}z\u{c}",
            "<|im_start|>user<|im_end|>",
            "$\\frac{a}{b}$",
        ] {
            assert_same_pieces(&regex, text);
        }
    }

    /// Characters from every class the regex distinguishes, weighted towards its corners.
    pub(crate) fn tricky_char() -> impl Strategy<Value = char> {
        prop_oneof![
            3 => proptest::sample::select(vec![
                ' ', ' ', '\t', '\n', '\r', '\u{b}', '\u{c}', '\u{85}', '\u{a0}', '\u{1680}',
                '\u{2003}', '\u{2028}', '\u{202f}', '\u{3000}', '\'', '’', 's', 'S', 't', 'r',
                'e', 'E', 'v', 'm', 'l', 'L', 'd', 'ſ', 'K', 'a', 'é', '1', '٣', '½', 'Ⅻ', '.',
                ',', '!', '$', '\\', '{', '<', '|', '>', '_', '-', '\u{301}', '\u{200d}', '\0',
                '数', '学', 'ア', '한', '😀', '👍', '🏽', '\u{1F1EB}', '\u{E000}', '\u{FFFD}',
            ]),
            1 => any::<char>(),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn random_text_matches_the_engine(
            chars in proptest::collection::vec(tricky_char(), 0..40)
        ) {
            let regex = Regex::new(SPLIT_PATTERN).unwrap();
            let text: String = chars.into_iter().collect();
            prop_assert_eq!(pieces(&text), engine_pieces(&regex, &text));
        }
    }
}
