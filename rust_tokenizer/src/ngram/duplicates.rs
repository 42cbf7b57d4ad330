//! Exact duplicates of (instruction, response) after the normalization of [`super::normalize`]:
//! a row's key hashes the sequence of its instruction's words, a separator, then its response's
//! words, so two rows share a key exactly when both texts have the same words (up to 64-bit
//! collisions: about `rows^2 / 2^65` expected, 3e-4 for 10^8 rows).

use rayon::prelude::*;

use super::index::KeyMap;
use super::normalize::{for_each_word, mix64, Word};

const SEED: u64 = 0x243f_6a88_85a3_08d3;
const SEPARATOR: u64 = 0x1319_8a2e_0370_7344;

#[inline]
fn absorb_word(state: u64, word: &Word) -> u64 {
    mix64(state ^ word.hash).wrapping_add(SEED)
}

fn absorb(mut state: u64, text: &str) -> u64 {
    for_each_word(text, |word| state = absorb_word(state, &word));
    state
}

/// The duplicate key of one row.
pub fn row_key(instruction: &str, response: &str) -> u64 {
    let state = absorb(SEED, instruction);
    mix64(absorb(mix64(state ^ SEPARATOR), response))
}

/// A row's key from words already split (the scan's): [`RowKey::instruction`] then
/// [`RowKey::response`] give the same value as [`row_key`].
#[derive(Debug, Clone, Copy)]
pub struct RowKey(u64);

impl RowKey {
    /// Start a key with the instruction's words.
    pub fn instruction(words: &[Word]) -> Self {
        RowKey(words.iter().fold(SEED, absorb_word))
    }

    /// Finish it with the response's words.
    pub fn response(self, words: &[Word]) -> u64 {
        mix64(words.iter().fold(mix64(self.0 ^ SEPARATOR), absorb_word))
    }

    /// A key built a word at a time (as the scan splits them): [`RowKey::START`], the
    /// instruction's words, [`RowKey::separated`], the response's words, [`RowKey::finish`].
    pub const START: RowKey = RowKey(SEED);

    #[inline(always)]
    pub fn word(&mut self, word: &Word) {
        self.0 = absorb_word(self.0, word);
    }

    /// Past the instruction: the response's words follow.
    pub fn separated(self) -> RowKey {
        RowKey(mix64(self.0 ^ SEPARATOR))
    }

    pub fn finish(self) -> u64 {
        mix64(self.0)
    }
}

/// [`row_key`] of every row, in parallel on the current rayon pool.
pub fn row_keys<S: AsRef<str> + Sync>(instructions: &[S], responses: &[S]) -> Vec<u64> {
    instructions
        .par_iter()
        .zip(responses.par_iter())
        .with_min_len(256)
        .map(|(instruction, response)| row_key(instruction.as_ref(), response.as_ref()))
        .collect()
}

/// The keys seen so far and the source that first had each.
#[derive(Default)]
pub struct DuplicateIndex {
    first: KeyMap<u32>,
}

impl DuplicateIndex {
    pub fn new() -> Self {
        Self::default()
    }

    /// Distinct rows seen.
    pub fn len(&self) -> usize {
        self.first.len()
    }

    pub fn is_empty(&self) -> bool {
        self.first.is_empty()
    }

    /// Record rows of `source`: for each key, the source that had it first (this one for a
    /// repeat within it), or `None` for a row not seen before.
    pub fn add(&mut self, source: u32, keys: &[u64]) -> Vec<Option<u32>> {
        keys.iter()
            .map(|&key| match self.first.entry(key) {
                std::collections::hash_map::Entry::Occupied(entry) => Some(*entry.get()),
                std::collections::hash_map::Entry::Vacant(entry) => {
                    entry.insert(source);
                    None
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::normalize::words_into;
    use super::*;

    #[test]
    fn same_words_same_key() {
        let key = row_key("What is 2 + 2?", "4");
        assert_eq!(row_key("what is 2+2", " 4. "), key);
        assert_ne!(row_key("What is 2 + 2?", "5"), key);
        // The boundary between instruction and response counts.
        assert_ne!(row_key("a b", "c"), row_key("a", "b c"));
        assert_ne!(row_key("", "a"), row_key("a", ""));
    }

    #[test]
    fn key_from_words_is_the_key() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        words_into("What is 2 + 2?", &mut a);
        words_into("Four.", &mut b);
        assert_eq!(
            RowKey::instruction(&a).response(&b),
            row_key("What is 2 + 2?", "Four.")
        );
        let mut key = RowKey::START;
        a.iter().for_each(|word| key.word(word));
        let mut key = key.separated();
        b.iter().for_each(|word| key.word(word));
        assert_eq!(key.finish(), row_key("What is 2 + 2?", "Four."));
    }

    #[test]
    fn first_source_of_each_row() {
        let mut index = DuplicateIndex::new();
        let a = row_keys(&["q1", "q2", "Q1!"], &["r1", "r2", "r1"]);
        assert_eq!(index.add(0, &a), [None, None, Some(0)]);
        let b = row_keys(&["q2", "q3"], &["R2", "r3"]);
        assert_eq!(index.add(1, &b), [Some(0), None]);
        assert_eq!(index.len(), 3);
    }
}
