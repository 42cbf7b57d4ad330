//! The fast engine: an exact re-implementation of `tokenizers`' encoding for data_io's family of
//! byte-level BPE tokenizers (`family` says which), many times faster.
//!
//! Per text: NFC (skipped when the text is already NFC), data_io's split regex written out by
//! hand (`pretokenize`), then byte-level BPE on each piece (`bpe`), whose ids come from a
//! per-thread cache after the piece's first occurrence. The reference's costs are the regex
//! engine, per-token strings and offsets, and a cache shared by all threads; none of them is
//! paid here.

mod bpe;
mod cache;
mod char_class;
mod char_class_table;
mod family;
mod normalize;
mod pretokenize;

use std::ops::{Deref, DerefMut};
use std::sync::Mutex;

use tokenizers::Tokenizer;

use bpe::ByteLevelBpe;
use cache::PieceCache;

/// Pieces each cache holds before it starts over (roughly 60 bytes each).
const CACHE_CAPACITY: usize = 1 << 18;

/// Encodes text exactly as a `tokenizers` tokenizer of data_io's family does.
pub(crate) struct FastEncoder {
    nfc: bool,
    bpe: ByteLevelBpe,
    /// Caches not in use; a worker takes one for a run of texts and gives it back, so caches
    /// stay warm from batch to batch and file to file.
    idle_caches: Mutex<Vec<PieceCache>>,
}

impl FastEncoder {
    /// The fast form of `tokenizer` (which must encode special tokens as text), or why it has
    /// none (see `family`).
    pub(crate) fn new(tokenizer: &Tokenizer) -> Result<Self, String> {
        let family = family::recognise(tokenizer)?;
        Ok(FastEncoder {
            nfc: family.nfc,
            bpe: family.bpe,
            idle_caches: Mutex::new(Vec::new()),
        })
    }

    /// A piece cache for this thread's next texts, returned to the encoder when dropped.
    pub(crate) fn cache(&self) -> CacheGuard<'_> {
        let cache = self
            .idle_caches
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .pop();
        CacheGuard {
            owner: self,
            cache: Some(cache.unwrap_or_else(|| PieceCache::new(CACHE_CAPACITY))),
        }
    }

    /// Append the ids of `text` to `out`.
    pub(crate) fn encode_into(&self, text: &str, cache: &mut CacheGuard<'_>, out: &mut Vec<u32>) {
        let normalized = if self.nfc {
            normalize::nfc(text)
        } else {
            text.into()
        };
        let cache: &mut PieceCache = cache;
        pretokenize::for_each_piece(&normalized, |piece| {
            self.bpe.encode_piece_cached(piece.as_bytes(), cache, out)
        });
    }

    /// The ids of `text`.
    pub(crate) fn encode(&self, text: &str) -> Vec<u32> {
        let mut ids = Vec::new();
        self.encode_into(text, &mut self.cache(), &mut ids);
        ids
    }
}

/// A piece cache on loan from a `FastEncoder`.
pub(crate) struct CacheGuard<'a> {
    owner: &'a FastEncoder,
    cache: Option<PieceCache>,
}

/// Idle caches kept per encoder; more (many threads at once) are dropped when given back.
/// Computed once: `available_parallelism` reads the cgroup's CPU quota files on every call,
/// three opens per encoded file otherwise.
fn max_idle_caches() -> usize {
    static MAX_IDLE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *MAX_IDLE.get_or_init(|| 2 * std::thread::available_parallelism().map_or(8, usize::from))
}

impl Drop for CacheGuard<'_> {
    fn drop(&mut self) {
        if let Some(cache) = self.cache.take() {
            let mut idle = self
                .owner
                .idle_caches
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if idle.len() < max_idle_caches() {
                idle.push(cache);
            }
        }
    }
}

impl Deref for CacheGuard<'_> {
    type Target = PieceCache;

    fn deref(&self) -> &PieceCache {
        self.cache.as_ref().expect("present until dropped")
    }
}

impl DerefMut for CacheGuard<'_> {
    fn deref_mut(&mut self) -> &mut PieceCache {
        self.cache.as_mut().expect("present until dropped")
    }
}

#[cfg(test)]
mod tests;
