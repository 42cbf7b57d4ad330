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

/// A blocked Bloom filter in front of a [`KeyMap`]: most sub-grams of a training text are in
/// no evaluation set, and a bit test costs less than a probe of a table of hundreds of
/// thousands of keys. A key sets three bits of one 64-bit word (the word from its top bits, the
/// bits from its low ones), so a test is one memory access. The filters of windows and of
/// their sub-grams have 2^22 bits each (512 KiB, which stays in a core's L2 cache); GSM8K and
/// MATH test, questions and solutions, are 679,199 windows, setting 38% of its bits, so about
/// 6% of tests of keys in no item reach the table. The sub-grams of items indexed whole (a few
/// thousand) have 2^16 bits (8 KiB).
struct KeyFilter {
    bits: Vec<u64>,
    shift: u32,
}

const WINDOW_FILTER_BITS_LOG2: u32 = 22;
const SHORT_SAMPLE_FILTER_BITS_LOG2: u32 = 16;
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
}

/// The indexed windows' keys and origins in one open-addressing table (linear probing from the
/// key's top bits; a slot holds the key and the origin): a lookup takes one cache miss, which
/// the scan prefetches for the windows behind a sampled hit, where a `HashMap` took two in a row
/// (its control bytes, then its slot). About a quarter of the scan's time went to those misses,
/// mostly for windows that do match.
struct WindowTable {
    slots: Vec<(u64, Origin)>,
    shift: u32,
    len: usize,
}

/// An empty slot's origin (no evaluation set is numbered `u32::MAX`).
const EMPTY: Origin = Origin {
    set: u32::MAX,
    item: u32::MAX,
};

impl WindowTable {
    fn with_slots_log2(log2: u32) -> Self {
        Self {
            slots: vec![(0, EMPTY); 1 << log2],
            shift: 64 - log2,
            len: 0,
        }
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        (key >> self.shift) as usize
    }

    /// Add `key` with `origin` unless it is there already (the first origin is kept).
    fn insert_first(&mut self, key: u64, origin: Origin) {
        assert!(
            origin != EMPTY,
            "evaluation set number u32::MAX is reserved"
        );
        if (self.len + 1) * 10 > self.slots.len() * 7 {
            let bigger = Self::with_slots_log2(64 - self.shift + 1);
            let old = std::mem::replace(self, bigger);
            for (key, origin) in old.slots {
                if origin != EMPTY {
                    self.insert_first(key, origin);
                }
            }
        }
        let mask = self.slots.len() - 1;
        let mut at = self.home(key);
        loop {
            let (slot_key, slot_origin) = self.slots[at];
            if slot_origin == EMPTY {
                self.slots[at] = (key, origin);
                self.len += 1;
                return;
            }
            if slot_key == key {
                return;
            }
            at = (at + 1) & mask;
        }
    }

    #[inline]
    fn get(&self, key: u64) -> Option<Origin> {
        let mask = self.slots.len() - 1;
        let mut at = self.home(key);
        loop {
            let (slot_key, slot_origin) = self.slots[at];
            if slot_origin == EMPTY {
                return None;
            }
            if slot_key == key {
                return Some(slot_origin);
            }
            at = (at + 1) & mask;
        }
    }

    /// Ask the CPU to fetch `key`'s first slot into cache ahead of its lookup.
    #[inline]
    fn prefetch(&self, key: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            let slot = &self.slots[self.home(key)];
            // SAFETY: a prefetch is a hint that never faults; the address is a slot's.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                _mm_prefetch::<_MM_HINT_T0>((slot as *const (u64, Origin)).cast());
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

/// The matching windows of a text found so far.
#[derive(Default)]
struct Found {
    /// The match and the rank of the window its origin is from.
    hit: Option<(Match, (usize, usize))>,
    known: KnownWords,
}

/// Words `[from, to)` of the loaded text, each tested to be in the items' vocabulary. The
/// windows looked up behind a sampled hit overlap in all but a word, and in a row that copies
/// an item every window matches: testing a window's words against this run tests each word
/// once, where testing every window's words tested it once per window holding it (up to `n`
/// times).
#[derive(Default)]
struct KnownWords {
    from: usize,
    to: usize,
}

impl KnownWords {
    /// Whether every word of `words[start..end]` is in `vocabulary`.
    #[inline]
    fn all_in(&mut self, vocabulary: &KeyFilter, words: &[Word], start: usize, end: usize) -> bool {
        if start < self.from || start > self.to {
            self.from = start;
            self.to = start;
        }
        while self.to < end {
            if !vocabulary.may_contain(words[self.to].hash) {
                self.from = self.to + 1;
                self.to = self.from;
                return false;
            }
            self.to += 1;
        }
        true
    }
}

impl Found {
    /// Count the window of `len` words at `start` of `words`. The origin kept is that of the
    /// first window in the text (by start; at one start the n-word window, then shorter ones
    /// by length), whatever the order windows are recorded in.
    fn record(&mut self, words: &[Word], origin: Origin, start: usize, len: usize, n: usize) {
        let first = words[start].start;
        let last = words[start + len - 1].end;
        let rank = (start, if len == n { 0 } else { len });
        match &mut self.hit {
            None => {
                let hit = Match {
                    origin,
                    start: first,
                    end: last,
                    windows: 1,
                };
                self.hit = Some((hit, rank));
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
    }

    fn hit(self) -> Option<Match> {
        self.hit.map(|(hit, _)| hit)
    }
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

    /// The raw polynomial hash of words `[start, start + len)`.
    #[inline]
    fn gram(&self, start: usize, len: usize, powers: &[u64]) -> u64 {
        self.prefix[start + len].wrapping_sub(self.prefix[start].wrapping_mul(powers[len]))
    }

    #[inline]
    fn key(&self, start: usize, len: usize, powers: &[u64]) -> u64 {
        mix64(self.gram(start, len, powers) ^ (len as u64).wrapping_mul(LENGTH_SALT))
    }
}

pub struct NgramIndex {
    n: usize,
    min_words: usize,
    powers: Vec<u64>,
    map: WindowTable,
    /// Distinct lengths (< n) of items indexed whole, ascending.
    short_lengths: Vec<usize>,
    /// Every key of `map`.
    filter: KeyFilter,
    /// Every word of an indexed item: a window matches only where each of its words is one of
    /// these (a window's key found in `map` is also checked against it, word by word).
    vocabulary: KeyFilter,
    /// The sampled pre-test (see [`Sampled`]) of the n-word windows and of the items indexed
    /// whole.
    long_sample: Sampled,
    short_sample: Sampled,
}

/// Words between the positions a text's pre-test looks at.
const SAMPLE_STRIDE: usize = 4;

/// A pre-test that rules most texts out at a few positions, exactly: a text can match a window
/// of `len` words only if, at some position `q` that is a multiple of the stride `k`, it has the
/// `len - k + 1` words that the window holds at offset `q - p < k` (`p` the window's start). So
/// the index keeps those sub-grams of every indexed window (the `n - k + 1`-grams of each item
/// indexed as windows, the `min_words - k + 1`-grams at offsets `0..k` of each item indexed
/// whole), and a text none of whose sampled sub-grams is one of them matches nothing; where
/// one is, only the windows that can hold it are looked up. One test every `k` words instead
/// of two or more at every word. The sub-grams are kept as their raw polynomial hashes
/// (uniform, since the word hashes are).
struct Sampled {
    /// Words of a sub-gram.
    len: usize,
    filter: KeyFilter,
    /// For the sub-grams of items indexed whole (short and common phrases, such as "what is
    /// the value of"): the `(offset, length)` of each item window they were taken from, so a
    /// sampled hit looks up those windows only. Empty for the windows' sub-grams, whose
    /// filter alone passes a text on to the windows' own filter and map.
    windows: KeyMap<Vec<(usize, usize)>>,
}

impl Sampled {
    fn new(len: usize, filter_bits_log2: u32) -> Self {
        Self {
            len,
            filter: KeyFilter::with_bits(filter_bits_log2),
            windows: KeyMap::default(),
        }
    }
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
        let stride = SAMPLE_STRIDE.min(min_words);
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
            map: WindowTable::with_slots_log2(10),
            short_lengths: Vec::new(),
            filter: KeyFilter::with_bits(WINDOW_FILTER_BITS_LOG2),
            vocabulary: KeyFilter::with_bits(VOCABULARY_FILTER_BITS_LOG2),
            long_sample: Sampled::new(n + 1 - stride, WINDOW_FILTER_BITS_LOG2),
            short_sample: Sampled::new(min_words + 1 - stride, SHORT_SAMPLE_FILTER_BITS_LOG2),
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
        self.map.len
    }

    pub fn is_empty(&self) -> bool {
        self.map.len == 0
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
                self.map.insert_first(key, origin);
                self.filter.insert(key);
            }
            let len = self.long_sample.len;
            for start in 0..=(words - len) {
                let gram = scratch.gram(start, len, &self.powers);
                self.long_sample.filter.insert(gram);
            }
            Indexed::Windows(words - self.n + 1)
        } else if words >= self.min_words {
            let key = scratch.key(0, words, &self.powers);
            self.map.insert_first(key, origin);
            self.filter.insert(key);
            let len = self.short_sample.len;
            for offset in 0..self.stride() {
                let gram = scratch.gram(offset, len, &self.powers);
                self.short_sample.filter.insert(gram);
                let windows = self.short_sample.windows.entry(gram).or_default();
                if !windows.contains(&(offset, words)) {
                    windows.push((offset, words));
                }
            }
            if let Err(at) = self.short_lengths.binary_search(&words) {
                self.short_lengths.insert(at, words);
            }
            Indexed::Whole(words)
        } else {
            Indexed::TooShort(words)
        }
    }

    /// The stride of the sampled pre-test: the sub-grams are `stride - 1` words shorter.
    fn stride(&self) -> usize {
        self.n + 1 - self.long_sample.len
    }

    /// Record the window of `len` words at `start` in `found` when it is indexed (its key in
    /// the map and each of its words in the items' vocabulary).
    #[inline]
    fn look_up(&self, scratch: &Scratch, start: usize, len: usize, found: &mut Found) {
        let key = scratch.key(start, len, &self.powers);
        self.look_up_key(scratch, start, len, key, found);
    }

    /// [`NgramIndex::look_up`] of a window whose key is `key`.
    #[inline]
    fn look_up_key(
        &self,
        scratch: &Scratch,
        start: usize,
        len: usize,
        key: u64,
        found: &mut Found,
    ) {
        if !self.filter.may_contain(key) {
            return;
        }
        if let Some(origin) = self.map.get(key) {
            let words = &scratch.words;
            if found
                .known
                .all_in(&self.vocabulary, words, start, start + len)
            {
                found.record(words, origin, start, len, self.n);
            }
        }
    }

    /// The loaded text's match. Only the sampled positions are tested ([`Sampled`]); where one
    /// passes, the windows that could hold its sub-gram are looked up: of `n` words, those
    /// starting `0..stride` words before it; of an item indexed whole, those its sub-gram was
    /// taken from. Every indexed window of the text is among them, and the windows of two
    /// sampled positions differ (n-word windows: their ranges of starts do not overlap; the
    /// whole items' sub-grams: offsets below the stride), so each is found once: the same
    /// outcome as looking every window up.
    fn scan_loaded(&self, scratch: &Scratch) -> Option<Match> {
        let words = scratch.words.len();
        let stride = self.stride();
        let mut found = Found::default();
        let long = self.long_sample.len;
        let mut at = 0;
        while at + long <= words {
            if self
                .long_sample
                .filter
                .may_contain(scratch.gram(at, long, &self.powers))
            {
                // The keys of the windows behind the hit, their slots fetched together: the
                // lookups' cache misses overlap instead of following one another.
                let first = at.saturating_sub(stride - 1);
                let count = match words.checked_sub(self.n) {
                    Some(last) if first <= at.min(last) => at.min(last) + 1 - first,
                    _ => 0,
                };
                let mut keys = [0u64; SAMPLE_STRIDE];
                for (slot, start) in keys.iter_mut().zip(first..first + count) {
                    *slot = scratch.key(start, self.n, &self.powers);
                    self.map.prefetch(*slot);
                }
                for (&key, start) in keys.iter().zip(first..first + count) {
                    self.look_up_key(scratch, start, self.n, key, &mut found);
                }
            }
            at += stride;
        }
        if !self.short_lengths.is_empty() {
            let short = self.short_sample.len;
            let mut at = 0;
            while at + short <= words {
                let gram = scratch.gram(at, short, &self.powers);
                if self.short_sample.filter.may_contain(gram) {
                    for &(offset, len) in self.short_sample.windows.get(&gram).into_iter().flatten()
                    {
                        if offset <= at && at - offset + len <= words {
                            self.look_up(scratch, at - offset, len, &mut found);
                        }
                    }
                }
                at += stride;
            }
        }
        found.hit()
    }

    /// The loaded text's match by the definition: every window of `n` words and of each length
    /// of the items indexed whole looked up, each window's words tested on their own (the
    /// oracle of the sampled scan's tests).
    #[cfg(test)]
    fn scan_every_position(&self, scratch: &Scratch) -> Option<Match> {
        let mut found = Found::default();
        for start in 0..scratch.words.len() {
            let lengths = std::iter::once(self.n).chain(self.short_lengths.iter().copied());
            for len in lengths {
                if start + len > scratch.words.len() {
                    continue;
                }
                let key = scratch.key(start, len, &self.powers);
                let words = &scratch.words[start..start + len];
                if let Some(origin) = self.map.get(key) {
                    if words
                        .iter()
                        .all(|word| self.vocabulary.may_contain(word.hash))
                    {
                        found.record(&scratch.words, origin, start, len, self.n);
                    }
                }
            }
        }
        found.hit()
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
        self.scan_loaded(&scratch)
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

    /// Random texts made of the indexed items' words, cut and shuffled, scanned at the
    /// sampled positions and by the definition, for an index of `n`-word windows and items of
    /// `min_words..n` words indexed whole: the same outcome. Returns how many texts matched.
    fn sampled_scan_is_every_position(n: usize, min_words: usize, texts: usize) -> usize {
        let mut index = NgramIndex::new(n, min_words).unwrap();
        index.add(0, 7, QUESTION);
        let short = "Which gas do plants absorb from the air today";
        index.add(3, 1, short);
        index.add(
            3,
            2,
            "one two three four five six seven eight nine ten eleven",
        );
        let words: Vec<&str> = QUESTION
            .split_whitespace()
            .chain(short.split_whitespace())
            .collect();
        let mut state = 0x2545_f491_4f6c_dd1du64 ^ (n * 64 + min_words) as u64;
        let mut next = |bound: usize| {
            state = mix64(state.wrapping_add(0x9e37_79b9_7f4a_7c15));
            (state % bound as u64) as usize
        };
        let (mut matched, mut scratch) = (0, Scratch::default());
        for _ in 0..texts {
            let mut text = Vec::new();
            for _ in 0..1 + next(4) {
                // A run of consecutive words of the items, or a few random ones.
                let start = next(words.len());
                let len = next(words.len() - start + 1);
                if next(3) == 0 {
                    text.extend((0..len.min(5)).map(|_| words[next(words.len())]));
                } else {
                    text.extend(&words[start..start + len]);
                }
            }
            let text = text.join(" ");
            scratch.load(&text);
            let every = index.scan_every_position(&scratch);
            assert_eq!(index.scan_with(&text, &mut scratch), every, "n {n}: {text}");
            matched += usize::from(every.is_some());
        }
        matched
    }

    /// The sampled pre-test never rules out a text that matches when every position is
    /// looked up, and the spans are the same.
    #[test]
    fn the_sampled_pre_test_loses_no_match() {
        let matched = sampled_scan_is_every_position(DEFAULT_N, DEFAULT_MIN_WORDS, 20_000);
        assert!(matched > 1000, "{matched}");
    }

    /// Other n-gram sizes: other strides (`min_words` below 4), sub-gram lengths and items
    /// indexed whole or as windows.
    #[test]
    fn the_sampled_pre_test_loses_no_match_for_any_n() {
        for (n, min_words) in [
            (1, 1),
            (2, 1),
            (3, 3),
            (4, 2),
            (5, 5),
            (8, 3),
            (20, 8),
            (40, 9),
        ] {
            let matched = sampled_scan_is_every_position(n, min_words, 3_000);
            assert!(matched > 0, "n {n}: {matched}");
        }
    }

    proptest::proptest! {
        /// The run of known words answers as testing each window's words on its own, whatever
        /// the order the windows come in and wherever unknown words are.
        #[test]
        fn known_words_answer_as_each_window_tested_alone(
            known in proptest::collection::vec(proptest::bool::weighted(0.9), 1..60),
            windows in proptest::collection::vec((0usize..60, 1usize..15), 1..40),
        ) {
            let mut vocabulary = KeyFilter::with_bits(VOCABULARY_FILTER_BITS_LOG2);
            let words: Vec<Word> = (0..known.len())
                .map(|at| Word { hash: mix64(at as u64 + 1), start: at, end: at + 1 })
                .collect();
            for (word, &in_vocabulary) in words.iter().zip(&known) {
                if in_vocabulary {
                    vocabulary.insert(word.hash);
                }
            }
            let mut run = KnownWords::default();
            for (start, len) in windows {
                let start = start % words.len();
                let end = (start + len).min(words.len());
                let alone = words[start..end].iter().all(|w| vocabulary.may_contain(w.hash));
                proptest::prop_assert_eq!(run.all_in(&vocabulary, &words, start, end), alone);
            }
        }
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
