//! The normalization every n-gram and duplicate key is computed over (docs/CONTAMINATION.md):
//!
//! 1. every character that is not alphanumeric (Rust's `char::is_alphanumeric`: Unicode
//!    `Alphabetic` or `Numeric`) is a separator: punctuation, symbols and whitespace alike;
//! 2. a word is a maximal run of alphanumeric characters, lowercased (`char::to_lowercase`);
//! 3. the text is the sequence of its words: case, punctuation and the amount or kind of
//!    whitespace make no difference (`"Hello,  World!"` and `"hello world"` are the same).
//!
//! This is the usual "lowercase, punctuation to spaces, collapse whitespace, split on spaces"
//! of the decontamination literature, stated by characters so it runs in one pass.
//!
//! A word is kept as a 64-bit hash (the UTF-8 bytes of its lowercased characters packed eight
//! to a lane, each lane and the length mixed by SplitMix64's finalizer), with its character offsets in the original text (Python's
//! `str` indices), so a match can be shown as the original span.

/// One word of a text: its hash and its `[start, end)` character offsets in the original text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Word {
    pub hash: u64,
    pub start: usize,
    pub end: usize,
}

const HASH_SEED: u64 = 0xcbf2_9ce4_8422_2325;
const HASH_STEP: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64's finalizer: spreads every input bit over the whole word.
#[inline]
pub fn mix64(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// For each ASCII byte: 0 for a separator, else the byte lowercased.
const ASCII_WORD: [u8; 128] = {
    let mut table = [0u8; 128];
    let mut byte = 0;
    while byte < 128 {
        let c = byte as u8;
        if c.is_ascii_alphanumeric() {
            table[byte] = c.to_ascii_lowercase();
        }
        byte += 1;
    }
    table
};

/// A word's hash being built from the UTF-8 bytes of its lowercased characters: bytes are
/// packed eight to a 64-bit lane (a shift and an or each, no multiplication per byte) and each
/// full lane is mixed in. Bytes of UTF-8 text are never 0, so a lane's packing is unambiguous.
#[derive(Clone, Copy)]
struct WordHash {
    state: u64,
    lane: u64,
    bytes: u32,
}

impl WordHash {
    const NEW: WordHash = WordHash {
        state: HASH_SEED,
        lane: 0,
        bytes: 0,
    };

    #[inline(always)]
    fn byte(&mut self, byte: u8) {
        if self.bytes & 7 == 0 && self.bytes != 0 {
            self.state = mix64(self.state ^ self.lane).wrapping_add(HASH_STEP);
            self.lane = 0;
        }
        self.lane = (self.lane << 8) | u64::from(byte);
        self.bytes += 1;
    }

    #[inline]
    fn char(&mut self, c: char) {
        let mut buffer = [0u8; 4];
        for &byte in c.encode_utf8(&mut buffer).as_bytes() {
            self.byte(byte);
        }
    }

    #[inline(always)]
    fn finish(self) -> u64 {
        mix64(self.state ^ self.lane ^ u64::from(self.bytes).wrapping_mul(HASH_STEP))
    }
}

/// The ASCII letters and digits at the start of the eight bytes of `chunk` (little-endian: the
/// first byte lowest), found for all eight at once (SWAR: each byte range-tested in its own
/// lane, no carry crossing lanes since every tested byte is below 0x80): how many there are
/// (0..=8) and `chunk` with its letters lowercased.
#[inline(always)]
fn ascii_word_prefix(chunk: u64) -> (usize, u64) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = ONES * 0x80;
    let ascii = !chunk & HIGH;
    let low = chunk & !HIGH;
    // High bit of each byte: `byte >= lo` and `byte > hi`, for bytes below 0x80.
    let at_least = |x: u64, lo: u64| (x + ONES * (0x80 - lo)) & HIGH;
    let above = |x: u64, hi: u64| (x + ONES * (0x7f - hi)) & HIGH;
    let digit = at_least(low, b'0' as u64) & !above(low, b'9' as u64);
    let folded = low | (ONES * 0x20);
    let letter = at_least(folded, b'a' as u64) & !above(folded, b'z' as u64) & ascii;
    let word = (digit | letter) & ascii;
    let length = ((!word & HIGH).trailing_zeros() / 8) as usize;
    (length, chunk | (letter >> 2))
}

impl WordHash {
    /// Add the first `length` (1..=8) bytes of `lowered` (little-endian) at a lane boundary:
    /// the same as [`WordHash::byte`] of each in turn.
    #[inline(always)]
    fn lane_bytes(&mut self, length: usize, lowered: u64) {
        debug_assert!(self.bytes & 7 == 0 && (1..=8).contains(&length));
        if self.bytes != 0 {
            self.state = mix64(self.state ^ self.lane).wrapping_add(HASH_STEP);
        }
        self.lane = lowered.swap_bytes() >> (8 * (8 - length));
        self.bytes += length as u32;
    }
}

/// Call `each` with every word of `text`, in order. ASCII letters and digits (most text) are
/// taken up to eight at a time where a word's hash is at a lane boundary, other ASCII bytes by
/// a table lookup each; other characters are decoded and classified by
/// `char::is_alphanumeric`.
pub fn for_each_word(text: &str, mut each: impl FnMut(Word)) {
    let bytes = text.as_bytes();
    let mut hash = WordHash::NEW;
    let mut start: Option<usize> = None;
    let mut index = 0usize;
    let mut at = 0usize;
    while at < bytes.len() {
        let byte = bytes[at];
        let is_word = if byte < 0x80 {
            let lower = ASCII_WORD[byte as usize];
            if lower != 0 {
                if start.is_none() {
                    start = Some(index);
                    hash = WordHash::NEW;
                }
                match bytes.get(at..at + 8) {
                    Some(chunk) if hash.bytes & 7 == 0 => {
                        let chunk = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
                        let (length, lowered) = ascii_word_prefix(chunk);
                        hash.lane_bytes(length, lowered);
                        at += length;
                        index += length;
                    }
                    _ => {
                        hash.byte(lower);
                        at += 1;
                        index += 1;
                    }
                }
                continue;
            }
            at += 1;
            false
        } else {
            let c = text[at..]
                .chars()
                .next()
                .expect("at is a character boundary");
            at += c.len_utf8();
            let is_word = c.is_alphanumeric();
            if is_word {
                if start.is_none() {
                    start = Some(index);
                    hash = WordHash::NEW;
                }
                for lower in c.to_lowercase() {
                    hash.char(lower);
                }
            }
            is_word
        };
        if !is_word {
            if let Some(begin) = start.take() {
                each(Word {
                    hash: hash.finish(),
                    start: begin,
                    end: index,
                });
            }
        }
        index += 1;
    }
    if let Some(begin) = start {
        each(Word {
            hash: hash.finish(),
            start: begin,
            end: index,
        });
    }
}

/// The words of `text` (hashes and offsets), appended to `out` after clearing it.
pub fn words_into(text: &str, out: &mut Vec<Word>) {
    out.clear();
    for_each_word(text, |word| out.push(word));
}

/// The normalized words of `text` as strings (for documentation, tests and reports).
pub fn normalized_words(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut words = Vec::new();
    for_each_word(text, |word| {
        words.push(
            chars[word.start..word.end]
                .iter()
                .flat_map(|c| c.to_lowercase())
                .collect(),
        );
    });
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes(text: &str) -> Vec<u64> {
        let mut out = Vec::new();
        words_into(text, &mut out);
        out.iter().map(|word| word.hash).collect()
    }

    #[test]
    fn case_punctuation_and_whitespace_do_not_matter() {
        let plain = hashes("natalia sold clips to 48 of her friends");
        assert_eq!(hashes("Natalia sold clips to 48 of her friends."), plain);
        assert_eq!(
            hashes("  NATALIA\tsold\n\nclips -- to 48, of her friends?! "),
            plain
        );
        assert_ne!(hashes("natalia sold clips to 49 of her friends"), plain);
    }

    #[test]
    fn punctuation_separates_words() {
        assert_eq!(
            normalized_words("don't x+y=3, $\\frac{1}{2}$ Ünïcode"),
            ["don", "t", "x", "y", "3", "frac", "1", "2", "ünïcode"]
        );
        assert_eq!(hashes("x+y"), hashes("x y"));
        assert!(normalized_words(" ,.;  ").is_empty());
    }

    #[test]
    fn offsets_are_character_indices_of_the_original() {
        let text = "é Ab, cd!";
        let mut words = Vec::new();
        words_into(text, &mut words);
        let spans: Vec<(usize, usize)> = words.iter().map(|w| (w.start, w.end)).collect();
        assert_eq!(spans, [(0, 1), (2, 4), (6, 8)]);
        let chars: Vec<char> = text.chars().collect();
        let second: String = chars[2..4].iter().collect();
        assert_eq!(second, "Ab");
    }

    #[test]
    fn long_words_and_prefixes_differ() {
        let words = [
            "a",
            "ab",
            "abcdefgh",
            "abcdefghi",
            "abcdefghabcdefgh",
            "abcdefghabcdefgha",
            "ébcdefgh",
            "ébcdefghé",
        ];
        let all: Vec<u64> = words.iter().flat_map(|word| hashes(word)).collect();
        let mut distinct = all.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), words.len());
        assert_eq!(hashes("ABCDEFGHI"), hashes("abcdefghi"));
    }

    /// The normalization one character at a time, as first written: the eight-byte path of
    /// [`for_each_word`] must give the same words, hashes and offsets (the duplicate keys are
    /// saved in sidecars, so a changed hash would be a changed key).
    fn reference_words(text: &str) -> Vec<Word> {
        let mut words = Vec::new();
        let mut hash = WordHash::NEW;
        let mut start: Option<usize> = None;
        for (index, c) in text.chars().enumerate() {
            if c.is_alphanumeric() {
                if start.is_none() {
                    start = Some(index);
                    hash = WordHash::NEW;
                }
                for lower in c.to_lowercase() {
                    hash.char(lower);
                }
            } else if let Some(begin) = start.take() {
                words.push(Word {
                    hash: hash.finish(),
                    start: begin,
                    end: index,
                });
            }
        }
        if let Some(begin) = start {
            let end = text.chars().count();
            words.push(Word {
                hash: hash.finish(),
                start: begin,
                end,
            });
        }
        words
    }

    fn assert_same_as_reference(text: &str) {
        let mut words = Vec::new();
        words_into(text, &mut words);
        assert_eq!(words, reference_words(text), "{text:?}");
    }

    #[test]
    fn eight_bytes_at_a_time_is_one_character_at_a_time() {
        let pieces = [
            "a",
            "Z",
            "0",
            "9",
            "@",
            "[",
            "`",
            "{",
            "/",
            ":",
            " ",
            "\n",
            "é",
            "É",
            "ß",
            "İ",
            "١",
            "中",
            "😀",
            "ǅ",
            "abcdefg",
            "ABCDEFGH",
            "abcdefghi",
            "x1y2z3w4v5",
        ];
        let mut texts = Vec::new();
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    texts.push(format!("{a}{b}{c}"));
                    texts.push(format!("{a}{b}{c}{a}{c}{b}{a}{a}{b}"));
                }
            }
        }
        for byte in 0u8..128 {
            let c = byte as char;
            texts.push(format!("abc{c}defghijk{c}{c}lmnopqrstuvwxyz{c}"));
        }
        for text in &texts {
            assert_same_as_reference(text);
        }
    }

    proptest::proptest! {
        #[test]
        fn any_text_normalizes_as_one_character_at_a_time(text in "[a-zA-Z0-9 .,$\\{}éÉßİ١中😀\n]{0,40}") {
            assert_same_as_reference(&text);
        }
    }

    #[test]
    fn real_rows_normalize_as_one_character_at_a_time() {
        let Some(raw) = std::env::var_os("HRM_REAL_RAW") else {
            return;
        };
        let raw = std::path::PathBuf::from(raw);
        for file in ["gsm8k/train.jsonl", "hendrycks_math/test.jsonl"] {
            let text = std::fs::read_to_string(raw.join(file)).unwrap();
            for line in text.lines().take(3000) {
                let row: serde_json::Value = serde_json::from_str(line).unwrap();
                for field in row.as_object().unwrap().values() {
                    if let Some(field) = field.as_str() {
                        assert_same_as_reference(field);
                    }
                }
            }
        }
    }

    #[test]
    fn non_ascii_lowercase_matches() {
        assert_eq!(hashes("ÉCOLE Straße"), hashes("école straße"));
    }
}
