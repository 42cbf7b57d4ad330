//! The hashed word-n-gram index of the evaluation sets and the scan of training texts against it.
//!
//! An evaluation item (a question, an answer) of at least `n` words is indexed as every window of
//! `n` consecutive words; an item shorter than `n` but of at least `min_words` words is indexed
//! whole (one window of its own length `k`), and the scan then also checks every window of that
//! length `k` of a training text. Shorter items are not indexed (counted as too short): a
//! handful of words says nothing about leakage.
//!
//! A window of words `[i, i + k)` is keyed by a polynomial hash over the word hashes
//! (`P[j + 1] = P[j] * B + h_j`, the window being `P[i + k] - P[i] * B^k`, all modulo 2^64 with an
//! odd `B`, so any window costs O(1)), mixed with its length and finalized by SplitMix64. Keys
//! are 64 bits: two different windows share one with probability about 2^-64 per pair.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use rayon::prelude::*;

use super::duplicates::RowKey;
use super::normalize::{for_each_word, mix64, Word};
use crate::{Error, Result};

/// The default n-gram size (words), as in the decontamination literature (GPT-3, datatrove).
pub const DEFAULT_N: usize = 13;
/// The default shortest evaluation item indexed whole when shorter than `n`.
pub const DEFAULT_MIN_WORDS: usize = 8;

const BASE: u64 = 0x9e37_79b9_7f4a_7c15 | 1;
const LENGTH_SALT: u64 = 0xd6e8_feb8_6659_fd93;

/// A hasher for keys that are already uniformly mixed 64-bit values.
#[derive(Default)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 << 8) | u64::from(byte);
        }
    }
    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

pub type KeyMap<V> = HashMap<u64, V, BuildHasherDefault<KeyHasher>>;

/// A blocked Bloom filter in front of a [`KeyMap`]: most windows of a training text are in no
/// evaluation set, and a bit test costs less than a probe of a table of hundreds of thousands
/// of keys. A key sets three bits of one 64-bit word (the word from its top bits, the bits from
/// its low ones), so a test is one memory access. The windows' filter has 2^22 bits (512 KiB,
/// which stays in a core's L2 cache: the 2 MiB one-bit filter before it missed there on most
/// tests, half the scan's time); GSM8K and MATH test, questions and solutions, are 679,199
/// windows, about 10 a word, setting 38% of its bits, so about 6% of tests of windows in no
/// item reach the table.
/// The heads of items indexed whole (a few hundred) have 2^16 bits (8 KiB).
struct KeyFilter {
    bits: Vec<u64>,
    shift: u32,
}

const WINDOW_FILTER_BITS_LOG2: u32 = 22;
/// Windows whose filter word is fetched ahead of its test.
const PREFETCH_AHEAD: usize = 8;
const HEAD_FILTER_BITS_LOG2: u32 = 16;
/// The words of every indexed item (GSM8K and MATH test, questions and solutions: 12,447
/// distinct, setting 13% of 2^18 bits, so 0.2% of unknown words pass; 32 KiB, which stays in a
/// core's cache).
const VOCABULARY_FILTER_BITS_LOG2: u32 = 18;

impl KeyFilter {
    fn with_bits(log2: u32) -> Self {
        Self {
            bits: vec![0; 1 << (log2 - 6)],
            shift: 64 - (log2 - 6),
        }
    }

    #[inline]
    fn slot(&self, key: u64) -> (usize, u64) {
        let mask =
            (1u64 << (key & 63)) | (1u64 << ((key >> 6) & 63)) | (1u64 << ((key >> 12) & 63));
        ((key >> self.shift) as usize, mask)
    }

    fn insert(&mut self, key: u64) {
        let (word, mask) = self.slot(key);
        self.bits[word] |= mask;
    }

    #[inline]
    fn may_contain(&self, key: u64) -> bool {
        let (word, mask) = self.slot(key);
        self.bits[word] & mask == mask
    }

    /// Ask the CPU to fetch `key`'s word into cache ahead of its test.
    #[inline]
    fn prefetch(&self, key: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            let word = (key >> self.shift) as usize;
            // SAFETY: a prefetch is a hint that never faults; the address is in bounds.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                _mm_prefetch::<_MM_HINT_T0>(self.bits.as_ptr().add(word).cast());
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = key;
    }
}

/// Where an indexed window came from: an evaluation set and an item in it (first one indexed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin {
    pub set: u32,
    pub item: u32,
}

/// A training text's overlap with the index: the origin of its first matching window, the
/// character span `[start, end)` covering every matching window, and how many windows match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Match {
    pub origin: Origin,
    pub start: usize,
    pub end: usize,
    pub windows: u32,
}

/// How an added item was indexed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Indexed {
    /// As `count` windows of `n` words.
    Windows(usize),
    /// Whole: shorter than `n`, at least `min_words` words.
    Whole(usize),
    /// Not indexed: fewer than `min_words` words.
    TooShort(usize),
}

/// A text's words and their prefix hashes, a buffer reused across texts.
#[derive(Default)]
pub struct Scratch {
    words: Vec<Word>,
    prefix: Vec<u64>,
    /// For each word, how many words from it on are all in the index's vocabulary.
    known_run: Vec<u32>,
    /// `(start, key)` of the n-word windows to test.
    windows: Vec<(usize, u64)>,
}

impl Scratch {
    /// The words of the text loaded last.
    pub fn words(&self) -> &[Word] {
        &self.words
    }

    fn load(&mut self, text: &str) {
        self.load_with(text, |_| {});
    }

    /// Load `text`, calling `each` with every word too: in the one walk of the words, whose
    /// normalization hides the latency of the prefix hashes' and `each`'s dependency chains.
    #[inline]
    fn load_with(&mut self, text: &str, mut each: impl FnMut(&Word)) {
        let (words, prefix) = (&mut self.words, &mut self.prefix);
        words.clear();
        prefix.clear();
        prefix.push(0);
        let mut hash = 0u64;
        for_each_word(text, |word| {
            each(&word);
            hash = hash.wrapping_mul(BASE).wrapping_add(word.hash);
            prefix.push(hash);
            words.push(word);
        });
    }

    #[inline]
    fn key(&self, start: usize, len: usize, powers: &[u64]) -> u64 {
        let window =
            self.prefix[start + len].wrapping_sub(self.prefix[start].wrapping_mul(powers[len]));
        mix64(window ^ (len as u64).wrapping_mul(LENGTH_SALT))
    }
}

pub struct NgramIndex {
    n: usize,
    min_words: usize,
    powers: Vec<u64>,
    map: KeyMap<Origin>,
    /// Distinct lengths (< n) of items indexed whole, ascending.
    short_lengths: Vec<usize>,
    /// Keys of the first `min_words` words of every item indexed whole: a window is looked up
    /// at the short lengths only where its head is one of these (two lookups per word).
    short_heads: KeyFilter,
    /// Every key of `map`.
    filter: KeyFilter,
    /// Every word of an indexed item: a window can match only where each of its words is one
    /// of these, so windows holding a word no evaluation item has are never hashed or probed
    /// (one probe of a filter that stays in cache per word, instead of two or more of the
    /// 2 MiB window filter).
    vocabulary: KeyFilter,
}

impl NgramIndex {
    /// An empty index of `n`-word windows; items of `min_words..n` words are indexed whole.
    pub fn new(n: usize, min_words: usize) -> Result<Self> {
        if n == 0 {
            return Err(Error::Config(
                "the n-gram size must be at least 1 word".into(),
            ));
        }
        if min_words == 0 || min_words > n {
            return Err(Error::Config(format!(
                "min_words must be between 1 and the n-gram size {n}, not {min_words}"
            )));
        }
        let mut powers = Vec::with_capacity(n + 1);
        let mut power = 1u64;
        for _ in 0..=n {
            powers.push(power);
            power = power.wrapping_mul(BASE);
        }
        Ok(Self {
            n,
            min_words,
            powers,
            map: KeyMap::default(),
            short_lengths: Vec::new(),
            short_heads: KeyFilter::with_bits(HEAD_FILTER_BITS_LOG2),
            filter: KeyFilter::with_bits(WINDOW_FILTER_BITS_LOG2),
            vocabulary: KeyFilter::with_bits(VOCABULARY_FILTER_BITS_LOG2),
        })
    }

    pub fn n(&self) -> usize {
        self.n
    }

    pub fn min_words(&self) -> usize {
        self.min_words
    }

    /// Distinct windows in the index.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Index the text of item `item` of evaluation set `set`. A window already indexed keeps
    /// its first origin.
    pub fn add(&mut self, set: u32, item: u32, text: &str) -> Indexed {
        let mut scratch = Scratch::default();
        scratch.load(text);
        let words = scratch.words.len();
        let origin = Origin { set, item };
        if words >= self.min_words {
            for word in &scratch.words {
                self.vocabulary.insert(word.hash);
            }
        }
        if words >= self.n {
            for start in 0..=(words - self.n) {
                let key = scratch.key(start, self.n, &self.powers);
                self.map.entry(key).or_insert(origin);
                self.filter.insert(key);
            }
            Indexed::Windows(words - self.n + 1)
        } else if words >= self.min_words {
            let key = scratch.key(0, words, &self.powers);
            self.map.entry(key).or_insert(origin);
            self.filter.insert(key);
            let head = scratch.key(0, self.min_words, &self.powers);
            self.short_heads.insert(head);
            if let Err(at) = self.short_lengths.binary_search(&words) {
                self.short_lengths.insert(at, words);
            }
            Indexed::Whole(words)
        } else {
            Indexed::TooShort(words)
        }
    }

    /// `scratch.known_run` for the words loaded.
    fn mark_known(&self, scratch: &mut Scratch) {
        let words = scratch.words.len();
        scratch.known_run.clear();
        scratch.known_run.resize(words + 1, 0);
        for at in (0..words).rev() {
            scratch.known_run[at] = if self.vocabulary.may_contain(scratch.words[at].hash) {
                scratch.known_run[at + 1] + 1
            } else {
                0
            };
        }
    }

    fn scan_loaded(&self, scratch: &mut Scratch) -> Option<Match> {
        self.mark_known(scratch);
        let words = scratch.words.len();
        // The n-word windows whose words are all known, keyed first, then tested with each
        // filter word fetched a few windows ahead, so the tests do not wait on memory.
        let mut windows = std::mem::take(&mut scratch.windows);
        windows.clear();
        for start in 0..words.saturating_sub(self.n - 1) {
            if scratch.known_run[start] as usize >= self.n {
                windows.push((start, scratch.key(start, self.n, &self.powers)));
            }
        }
        let scratch_ref = &*scratch;
        // The origin kept is that of the first window in the text (by start; at one start the
        // n-word window, then shorter ones by length).
        let mut found: Option<(Match, (usize, usize))> = None;
        let mut record = |origin: Origin, start: usize, len: usize| {
            let first = scratch_ref.words[start].start;
            let last = scratch_ref.words[start + len - 1].end;
            let rank = (start, if len == self.n { 0 } else { len });
            match &mut found {
                None => {
                    found = Some((
                        Match {
                            origin,
                            start: first,
                            end: last,
                            windows: 1,
                        },
                        rank,
                    ))
                }
                Some((hit, best)) => {
                    if rank < *best {
                        hit.origin = origin;
                        *best = rank;
                    }
                    hit.start = hit.start.min(first);
                    hit.end = hit.end.max(last);
                    hit.windows += 1;
                }
            }
        };
        for (at, &(start, key)) in windows.iter().enumerate() {
            if let Some(&(_, ahead)) = windows.get(at + PREFETCH_AHEAD) {
                self.filter.prefetch(ahead);
            }
            if self.filter.may_contain(key) {
                if let Some(&origin) = self.map.get(&key) {
                    record(origin, start, self.n);
                }
            }
        }
        if !self.short_lengths.is_empty() {
            for start in 0..words.saturating_sub(self.min_words - 1) {
                let known = scratch_ref.known_run[start] as usize;
                if known < self.min_words
                    || !self.short_heads.may_contain(scratch_ref.key(
                        start,
                        self.min_words,
                        &self.powers,
                    ))
                {
                    continue;
                }
                for &len in self.short_lengths.iter().take_while(|&&len| len <= known) {
                    let key = scratch_ref.key(start, len, &self.powers);
                    if !self.filter.may_contain(key) {
                        continue;
                    }
                    if let Some(&origin) = self.map.get(&key) {
                        record(origin, start, len);
                    }
                }
            }
        }
        scratch.windows = windows;
        found.map(|(hit, _)| hit)
    }

    /// [`NgramIndex::scan`] with a buffer reused across texts.
    pub fn scan_with(&self, text: &str, scratch: &mut Scratch) -> Option<Match> {
        scratch.load(text);
        self.scan_loaded(scratch)
    }

    /// [`NgramIndex::scan_with`], adding the text's words to a duplicate key in the same walk.
    pub fn scan_keyed(&self, text: &str, scratch: &mut Scratch, key: &mut RowKey) -> Option<Match> {
        scratch.load_with(text, |word| key.word(word));
        self.scan_loaded(scratch)
    }

    /// The overlap of one text with the index, `None` when no window matches.
    pub fn scan(&self, text: &str) -> Option<Match> {
        let mut scratch = Scratch::default();
        scratch.load(text);
        self.scan_loaded(&mut scratch)
    }

    /// [`NgramIndex::scan`] of every text, in parallel on the current rayon pool.
    pub fn scan_all<S: AsRef<str> + Sync>(&self, texts: &[S]) -> Vec<Option<Match>> {
        texts
            .par_iter()
            .with_min_len(64)
            .map_init(Scratch::default, |scratch, text| {
                scratch.load(text.as_ref());
                self.scan_loaded(scratch)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUESTION: &str = "Natalia sold clips to 48 of her friends in April, and then she sold \
        half as many clips in May. How many clips did Natalia sell altogether in April and May?";

    fn index() -> NgramIndex {
        let mut index = NgramIndex::new(DEFAULT_N, DEFAULT_MIN_WORDS).unwrap();
        assert!(matches!(index.add(0, 7, QUESTION), Indexed::Windows(19)));
        index
    }

    #[test]
    fn the_question_itself_matches_with_every_window() {
        let hit = index().scan(QUESTION).unwrap();
        assert_eq!(hit.origin, Origin { set: 0, item: 7 });
        assert_eq!(hit.windows, 19);
        assert_eq!((hit.start, hit.end), (0, QUESTION.chars().count() - 1));
    }

    #[test]
    fn case_punctuation_whitespace_and_embedding_still_match() {
        let changed = QUESTION
            .to_uppercase()
            .replace(' ', "  \n")
            .replace(',', " ;");
        assert!(index().scan(&changed).is_some());
        let prefix = "Solve this problem step by step, showing your work: ";
        let embedded = format!("{prefix}{QUESTION} Answer: 72");
        let hit = index().scan(&embedded).unwrap();
        let span: String = embedded
            .chars()
            .skip(hit.start)
            .take(hit.end - hit.start)
            .collect();
        assert!(span.starts_with("Natalia sold clips"), "{span}");
        assert!(span.ends_with("April and May"), "{span}");
    }

    #[test]
    fn twelve_shared_words_do_not_match_thirteen_do() {
        let words: Vec<&str> = QUESTION.split_whitespace().collect();
        let twelve = format!("zebra {} quokka", words[..12].join(" "));
        assert_eq!(index().scan(&twelve), None);
        let thirteen = format!("zebra {} quokka", words[..13].join(" "));
        assert_eq!(index().scan(&thirteen).unwrap().windows, 1);
        assert_eq!(
            index().scan("an unrelated sentence about something else"),
            None
        );
    }

    #[test]
    fn short_items_are_indexed_whole_or_not_at_all() {
        let mut index = NgramIndex::new(13, 8).unwrap();
        let short = "Which gas do plants absorb from the air?";
        assert_eq!(index.add(3, 1, short), Indexed::Whole(8));
        assert_eq!(
            index.add(3, 2, "What is two plus two?"),
            Indexed::TooShort(5)
        );
        let hit = index
            .scan("Quiz time. WHICH gas do plants absorb from the air -- explain.")
            .unwrap();
        assert_eq!(hit.origin, Origin { set: 3, item: 1 });
        assert_eq!(index.scan("Which gas do plants absorb from water?"), None);
        assert_eq!(index.scan("What is two plus two?"), None);
    }

    #[test]
    fn configurable_n_and_bad_settings() {
        let mut index = NgramIndex::new(3, 3).unwrap();
        index.add(1, 0, "alpha beta gamma delta");
        assert!(index.scan("x Beta, GAMMA delta y").is_some());
        assert!(index.scan("beta gamma").is_none());
        assert!(NgramIndex::new(0, 1).is_err());
        assert!(NgramIndex::new(5, 6).is_err());
        assert!(NgramIndex::new(5, 0).is_err());
    }

    #[test]
    fn first_origin_is_kept_and_parallel_scan_agrees() {
        let mut index = index();
        index.add(1, 0, QUESTION);
        assert_eq!(
            index.scan(QUESTION).unwrap().origin,
            Origin { set: 0, item: 7 }
        );
        let texts: Vec<String> = (0..500)
            .map(|i| {
                if i % 7 == 0 {
                    format!("row {i}: {QUESTION}")
                } else {
                    format!("row {i}: nothing to see here at all")
                }
            })
            .collect();
        let parallel = index.scan_all(&texts);
        let serial: Vec<_> = texts.iter().map(|text| index.scan(text)).collect();
        assert_eq!(parallel, serial);
        assert_eq!(parallel.iter().filter(|hit| hit.is_some()).count(), 72);
    }
}
