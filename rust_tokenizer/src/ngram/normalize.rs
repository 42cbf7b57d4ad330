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

/// One 64-byte block of a text classified for all its bytes at once (bit `i` is byte `i`):
/// `runs` has the ASCII letters and digits and every byte of a non-ASCII character, `high` the
/// latter only. A word is inside a maximal run of `runs` bits: a run without `high` bits is one
/// word of ASCII letters and digits; a run with some is split by characters (a non-ASCII
/// character may be a separator).
#[derive(Clone, Copy)]
struct BlockClasses {
    runs: u64,
    high: u64,
}

/// [`BlockClasses`] of `block` (64 bytes): four 16-byte SSE2 compares (SSE2 is part of every
/// x86-64 CPU). The compares are signed, so a byte of 0x80 or more is in no ASCII range.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn classify_block(block: &[u8; 64]) -> BlockClasses {
    use std::arch::x86_64::{
        _mm_and_si128, _mm_cmpgt_epi8, _mm_cmplt_epi8, _mm_loadu_si128, _mm_movemask_epi8,
        _mm_or_si128, _mm_set1_epi8,
    };
    let mut runs = 0u64;
    let mut high = 0u64;
    // SAFETY: SSE2 is always available on x86-64; each load reads 16 bytes inside `block`.
    unsafe {
        let below_zero = _mm_set1_epi8(b'0' as i8 - 1);
        let above_nine = _mm_set1_epi8(b'9' as i8 + 1);
        let case = _mm_set1_epi8(0x20);
        let below_a = _mm_set1_epi8(b'a' as i8 - 1);
        let above_z = _mm_set1_epi8(b'z' as i8 + 1);
        for lane in 0..4 {
            let bytes = _mm_loadu_si128(block.as_ptr().add(16 * lane).cast());
            let digit = _mm_and_si128(
                _mm_cmpgt_epi8(bytes, below_zero),
                _mm_cmplt_epi8(bytes, above_nine),
            );
            let folded = _mm_or_si128(bytes, case);
            let letter = _mm_and_si128(
                _mm_cmpgt_epi8(folded, below_a),
                _mm_cmplt_epi8(folded, above_z),
            );
            let word = _mm_movemask_epi8(_mm_or_si128(digit, letter)) as u16 as u64;
            let non_ascii = _mm_movemask_epi8(bytes) as u16 as u64;
            runs |= (word | non_ascii) << (16 * lane);
            high |= non_ascii << (16 * lane);
        }
    }
    BlockClasses { runs, high }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn classify_block(block: &[u8; 64]) -> BlockClasses {
    let mut runs = 0u64;
    let mut high = 0u64;
    for (at, &byte) in block.iter().enumerate() {
        let non_ascii = u64::from(byte >= 0x80);
        let word = u64::from(byte.is_ascii_alphanumeric());
        runs |= (word | non_ascii) << at;
        high |= non_ascii << at;
    }
    BlockClasses { runs, high }
}

/// Eight bytes of `bytes` from `at` (little-endian), zeros past its end.
#[inline(always)]
fn load_eight(bytes: &[u8], at: usize) -> u64 {
    match bytes.get(at..at + 8) {
        Some(chunk) => u64::from_le_bytes(chunk.try_into().expect("eight bytes")),
        None => {
            let mut chunk = [0u8; 8];
            let rest = &bytes[at.min(bytes.len())..];
            chunk[..rest.len()].copy_from_slice(rest);
            u64::from_le_bytes(chunk)
        }
    }
}

/// The hash of the word `bytes[start..end]`, all ASCII letters and digits: the same as
/// [`WordHash::byte`] of each lowercased byte then [`WordHash::finish`], a lane at a time.
#[inline(always)]
fn ascii_word_hash(bytes: &[u8], start: usize, end: usize) -> u64 {
    // An ASCII letter has bit 0x40 set, a digit not: or-ing that bit shifted to 0x20 lowercases
    // letters and leaves digits.
    const LETTER_BIT: u64 = 0x4040_4040_4040_4040;
    let lowered = |chunk: u64| chunk | ((chunk & LETTER_BIT) >> 1);
    let mut state = HASH_SEED;
    let mut at = start;
    while end - at > 8 {
        let lane = lowered(load_eight(bytes, at)).swap_bytes();
        state = mix64(state ^ lane).wrapping_add(HASH_STEP);
        at += 8;
    }
    // The last lane's bytes, first one highest (as [`WordHash::byte`] shifts them in); the
    // bytes past the word fall off the right.
    let lane = lowered(load_eight(bytes, at)).swap_bytes() >> (8 * (8 - (end - at)));
    mix64(state ^ lane ^ ((end - start) as u64).wrapping_mul(HASH_STEP))
}

/// The words of `run`, a part of a text between ASCII separators (or its ends) holding
/// non-ASCII characters, one character at a time; `first` is the character offset of its
/// start. Returns the characters of `run`. Kept out of line: the ASCII path is the hot one.
#[inline(never)]
fn for_each_word_of_run(run: &str, first: usize, each: &mut impl FnMut(Word)) -> usize {
    let mut hash = WordHash::NEW;
    let mut start: Option<usize> = None;
    let mut index = first;
    for c in run.chars() {
        if c.is_alphanumeric() {
            if start.is_none() {
                start = Some(index);
                hash = WordHash::NEW;
            }
            for lower in c.to_lowercase() {
                hash.char(lower);
            }
        } else if let Some(begin) = start.take() {
            each(Word {
                hash: hash.finish(),
                start: begin,
                end: index,
            });
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
    index - first
}

/// Call `each` with every word of `text`, in order. The bytes are classified 64 at a time
/// ([`BlockClasses`]) and the runs of word bytes found from the masks' bit transitions, so the
/// cost is per run, not per byte: a run of ASCII letters and digits is a word, hashed from its
/// bytes eight at a time; a run holding a non-ASCII character is decoded and split by
/// `char::is_alphanumeric`. Character offsets are byte offsets less the UTF-8 continuation
/// bytes before them, which are all inside such runs.
pub fn for_each_word(text: &str, mut each: impl FnMut(Word)) {
    let bytes = text.as_bytes();
    // UTF-8 continuation bytes before the current run.
    let mut continuation = 0usize;
    let mut run_start = 0usize;
    let mut in_run = false;
    let mut run_high = false;
    let mut emit = |start: usize, end: usize, high: bool, continuation: &mut usize| {
        if high {
            let chars = for_each_word_of_run(&text[start..end], start - *continuation, &mut each);
            *continuation += (end - start) - chars;
        } else {
            each(Word {
                hash: ascii_word_hash(bytes, start, end),
                start: start - *continuation,
                end: end - *continuation,
            });
        }
    };
    let mut base = 0usize;
    while base < bytes.len() {
        let classes = match bytes.get(base..base + 64) {
            Some(block) => classify_block(block.try_into().expect("64 bytes")),
            None => {
                // Past the end: zeros, which are separators.
                let mut block = [0u8; 64];
                block[..bytes.len() - base].copy_from_slice(&bytes[base..]);
                classify_block(&block)
            }
        };
        let shifted = (classes.runs << 1) | u64::from(in_run);
        let mut starts = classes.runs & !shifted;
        let mut ends = !classes.runs & shifted;
        loop {
            if in_run {
                if ends == 0 {
                    break;
                }
                let at = ends.trailing_zeros();
                ends &= ends - 1;
                let from = run_start.saturating_sub(base);
                let inside = (u64::MAX << from) & !(u64::MAX << at);
                let high = run_high || classes.high & inside != 0;
                emit(run_start, base + at as usize, high, &mut continuation);
                in_run = false;
            } else {
                if starts == 0 {
                    break;
                }
                let at = starts.trailing_zeros();
                starts &= starts - 1;
                run_start = base + at as usize;
                run_high = false;
                in_run = true;
            }
        }
        if in_run {
            let from = run_start.saturating_sub(base);
            run_high |= classes.high >> from != 0;
        }
        base += 64;
    }
    if in_run {
        emit(run_start, bytes.len(), run_high, &mut continuation);
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

        #[test]
        fn long_texts_normalize_as_one_character_at_a_time(text in "([a-zA-Z0-9]{1,20}|[ .,$\\{}\n]{1,3}|[éÉßİ١中😀。]){0,80}") {
            // Words and separator runs of many lengths: runs cross the 64-byte blocks.
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
