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
//! A word is kept as a 64-bit hash (FNV-1a over the UTF-8 bytes of its lowercased characters,
//! then a SplitMix64 finalizer), with its character offsets in the original text (Python's
//! `str` indices), so a match can be shown as the original span.

/// One word of a text: its hash and its `[start, end)` character offsets in the original text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Word {
    pub hash: u64,
    pub start: usize,
    pub end: usize,
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// SplitMix64's finalizer: spreads every input bit over the whole word.
#[inline]
pub fn mix64(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[inline]
fn fnv_byte(hash: u64, byte: u8) -> u64 {
    (hash ^ u64::from(byte)).wrapping_mul(FNV_PRIME)
}

#[inline]
fn fnv_char(mut hash: u64, c: char) -> u64 {
    let mut buffer = [0u8; 4];
    for &byte in c.encode_utf8(&mut buffer).as_bytes() {
        hash = fnv_byte(hash, byte);
    }
    hash
}

/// Call `each` with every word of `text`, in order.
pub fn for_each_word(text: &str, mut each: impl FnMut(Word)) {
    let mut hash = FNV_OFFSET;
    let mut start: Option<usize> = None;
    let mut index = 0usize;
    for c in text.chars() {
        let is_word = if c.is_ascii() {
            c.is_ascii_alphanumeric()
        } else {
            c.is_alphanumeric()
        };
        if is_word {
            if start.is_none() {
                start = Some(index);
                hash = FNV_OFFSET;
            }
            if c.is_ascii() {
                hash = fnv_byte(hash, c.to_ascii_lowercase() as u8);
            } else {
                for lower in c.to_lowercase() {
                    hash = fnv_char(hash, lower);
                }
            }
        } else if let Some(begin) = start.take() {
            each(Word {
                hash: mix64(hash),
                start: begin,
                end: index,
            });
        }
        index += 1;
    }
    if let Some(begin) = start {
        each(Word {
            hash: mix64(hash),
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
    fn non_ascii_lowercase_matches() {
        assert_eq!(hashes("ÉCOLE Straße"), hashes("école straße"));
    }
}
