//! Byte-level BPE on one piece of text, with the exact merge order of `tokenizers`' `BPE` model,
//! and a per-thread cache of each piece's ids.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use super::cache::PieceCache;

/// The 256 characters GPT-2's byte-level alphabet writes bytes as: printable Latin-1 stands for
/// itself, the other bytes are shifted to U+0100 and up, in order.
pub(crate) fn byte_level_chars() -> [char; 256] {
    let mut chars = ['\0'; 256];
    let mut shifted = 0;
    for byte in 0..=255u8 {
        let printable = matches!(byte, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        chars[usize::from(byte)] = if printable {
            char::from(byte)
        } else {
            shifted += 1;
            char::from_u32(255 + shifted).expect("U+0100..U+0143 are chars")
        };
    }
    chars
}

/// The bytes a byte-level token stands for, or `None` if it has a character outside the alphabet
/// (such a token can never be the byte-level form of text).
pub(crate) fn byte_level_bytes(token: &str, chars: &[char; 256]) -> Option<Vec<u8>> {
    token
        .chars()
        .map(|c| chars.iter().position(|&b| b == c).map(|byte| byte as u8))
        .collect()
}

/// A fast hasher for the short byte strings and id pairs used as keys here (FxHash's mixing,
/// eight bytes at a time). Keys come from text, not from an adversary choosing collisions.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher {
    hash: u64,
}

const FX_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline(always)]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(FX_SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(last));
        }
    }

    #[inline]
    fn write_u8(&mut self, value: u8) {
        self.add(u64::from(value));
    }

    #[inline]
    fn write_u32(&mut self, value: u32) {
        self.add(u64::from(value));
    }

    #[inline]
    fn write_u64(&mut self, value: u64) {
        self.add(value);
    }

    #[inline]
    fn write_u128(&mut self, value: u128) {
        self.add(value as u64);
        self.add((value >> 64) as u64);
    }

    #[inline]
    fn write_usize(&mut self, value: usize) {
        self.add(value as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // hashbrown takes its control bits from the top: fold the well-mixed high half down too.
        self.hash ^ (self.hash >> 29)
    }
}

pub(crate) type FxBuildHasher = BuildHasherDefault<FxHasher>;

/// A byte-level BPE model: ids of the 256 byte symbols, and merges by rank.
pub(crate) struct ByteLevelBpe {
    /// Id of each byte's symbol; `None` if the vocabulary lacks it, in which case the reference
    /// drops the byte (no unknown token, no byte fallback).
    byte_ids: [Option<u32>; 256],
    /// `(left id, right id)` -> `(rank, merged id)`; a pair listed twice keeps its last rank, as
    /// in `tokenizers`.
    merges: HashMap<(u32, u32), (u32, u32), FxBuildHasher>,
    /// With `ignore_merges`, a piece that is itself a vocabulary token becomes that token.
    whole_pieces: Option<HashMap<Box<[u8]>, u32, FxBuildHasher>>,
}

impl ByteLevelBpe {
    /// `merges` in rank order; `Err` names a merge whose parts or result are not in `vocab`.
    pub(crate) fn new(
        vocab: &HashMap<String, u32>,
        merges: &[(String, String)],
        ignore_merges: bool,
    ) -> Result<Self, String> {
        let chars = byte_level_chars();
        let mut byte_ids = [None; 256];
        let mut buffer = [0u8; 4];
        for (byte, c) in chars.iter().enumerate() {
            byte_ids[byte] = vocab.get(&*c.encode_utf8(&mut buffer)).copied();
        }
        let id_of = |token: &str| {
            vocab
                .get(token)
                .copied()
                .ok_or_else(|| format!("merge part {token:?} is not in the vocabulary"))
        };
        let mut merge_map = HashMap::with_capacity_and_hasher(merges.len(), Default::default());
        for (rank, (left, right)) in merges.iter().enumerate() {
            let pair = (id_of(left)?, id_of(right)?);
            let merged = id_of(&format!("{left}{right}"))?;
            merge_map.insert(pair, (rank as u32, merged));
        }
        let whole_pieces = ignore_merges.then(|| {
            vocab
                .iter()
                .filter_map(|(token, &id)| {
                    byte_level_bytes(token, &chars).map(|bytes| (bytes.into_boxed_slice(), id))
                })
                .collect()
        });
        Ok(ByteLevelBpe {
            byte_ids,
            merges: merge_map,
            whole_pieces,
        })
    }

    /// Whether every byte has a symbol, so that no unknown-token or byte-fallback rule can apply.
    pub(crate) fn covers_all_bytes(&self) -> bool {
        self.byte_ids.iter().all(Option::is_some)
    }

    /// Append the ids of one piece (its UTF-8 bytes) to `out`, uncached.
    ///
    /// Mirrors `tokenizers`' `Word::merge_all` without dropout: a min-heap of candidate merges by
    /// (rank, position); an entry is stale, and skipped, when its left symbol was merged away or
    /// the pair now at its position does not merge into the same id.
    pub(crate) fn encode_piece(&self, piece: &[u8], out: &mut Vec<u32>) {
        if let Some(whole) = &self.whole_pieces {
            if let Some(&id) = whole.get(piece) {
                out.push(id);
                return;
            }
        }
        let mut symbols: Vec<Symbol> = Vec::with_capacity(piece.len());
        for &byte in piece {
            if let Some(id) = self.byte_ids[usize::from(byte)] {
                let index = symbols.len();
                symbols.push(Symbol {
                    id,
                    prev: index.checked_sub(1),
                    next: None,
                    removed: false,
                });
                if index > 0 {
                    symbols[index - 1].next = Some(index);
                }
            }
        }
        let mut queue: BinaryHeap<Reverse<(u32, usize, u32)>> = symbols
            .windows(2)
            .enumerate()
            .filter_map(|(pos, pair)| {
                self.merges
                    .get(&(pair[0].id, pair[1].id))
                    .map(|&(rank, merged)| Reverse((rank, pos, merged)))
            })
            .collect();
        while let Some(Reverse((_, pos, merged))) = queue.pop() {
            if symbols[pos].removed {
                continue;
            }
            let Some(right_pos) = symbols[pos].next else {
                continue;
            };
            let right = symbols[right_pos];
            if self
                .merges
                .get(&(symbols[pos].id, right.id))
                .is_none_or(|&(_, id)| id != merged)
            {
                continue;
            }
            symbols[pos].id = merged;
            symbols[pos].next = right.next;
            symbols[right_pos].removed = true;
            if let Some(after) = right.next {
                symbols[after].prev = Some(pos);
            }
            let current = symbols[pos];
            if let Some(prev) = current.prev {
                if let Some(&(rank, id)) = self.merges.get(&(symbols[prev].id, current.id)) {
                    queue.push(Reverse((rank, prev, id)));
                }
            }
            if let Some(next) = current.next {
                if let Some(&(rank, id)) = self.merges.get(&(current.id, symbols[next].id)) {
                    queue.push(Reverse((rank, pos, id)));
                }
            }
        }
        out.extend(symbols.iter().filter(|s| !s.removed).map(|s| s.id));
    }

    /// Append the ids of one piece to `out`, through `cache`.
    #[inline]
    pub(crate) fn encode_piece_cached(
        &self,
        piece: &[u8],
        cache: &mut PieceCache,
        out: &mut Vec<u32>,
    ) {
        if let [byte] = piece {
            // One byte is one symbol (or none): nothing to merge, nothing worth caching.
            if let Some(whole) = &self.whole_pieces {
                if let Some(&id) = whole.get(piece) {
                    out.push(id);
                    return;
                }
            }
            out.extend(self.byte_ids[usize::from(*byte)]);
            return;
        }
        if cache.append_cached(piece, out) {
            return;
        }
        let start = out.len();
        self.encode_piece(piece, out);
        cache.insert(piece, &out[start..]);
    }
}

#[derive(Clone, Copy)]
struct Symbol {
    id: u32,
    prev: Option<usize>,
    next: Option<usize>,
    removed: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_level_alphabet_is_gpt2s() {
        let chars = byte_level_chars();
        assert_eq!(chars[usize::from(b' ')], 'Ġ');
        assert_eq!(chars[usize::from(b'\n')], 'Ċ');
        assert_eq!(chars[usize::from(b'a')], 'a');
        assert_eq!(chars[0xAD], '\u{143}');
        let distinct: std::collections::HashSet<char> = chars.iter().copied().collect();
        assert_eq!(distinct.len(), 256);
        assert_eq!(byte_level_bytes("Ġthe", &chars).unwrap(), b" the");
        assert_eq!(byte_level_bytes("<|x|>", &chars).unwrap(), b"<|x|>");
        assert_eq!(byte_level_bytes("a b", &chars), None);
    }

    fn toy_model(ignore_merges: bool) -> ByteLevelBpe {
        let tokens = ["a", "b", "c", "ab", "bc", "abc", "cc", "Ġ", "Ġa", "abcc"];
        let vocab: HashMap<String, u32> = tokens
            .iter()
            .enumerate()
            .map(|(id, token)| (token.to_string(), id as u32))
            .collect();
        let merges: Vec<(String, String)> = [("b", "c"), ("a", "b"), ("a", "bc"), ("Ġ", "a")]
            .iter()
            .map(|(l, r)| (l.to_string(), r.to_string()))
            .collect();
        ByteLevelBpe::new(&vocab, &merges, ignore_merges).unwrap()
    }

    fn ids(model: &ByteLevelBpe, piece: &str) -> Vec<u32> {
        let mut out = Vec::new();
        model.encode_piece(piece.as_bytes(), &mut out);
        out
    }

    #[test]
    fn merges_apply_by_rank_and_unknown_bytes_are_dropped() {
        let model = toy_model(false);
        // "abc": "b c" (rank 0) first, then "a bc" (rank 2).
        assert_eq!(ids(&model, "abc"), [5]);
        assert_eq!(ids(&model, "ab"), [3]);
        // " ab": "a b" (rank 1) first; "Ġ ab" is no merge, so "Ġa" never forms.
        assert_eq!(ids(&model, " ab"), [7, 3]);
        assert_eq!(ids(&model, "abcc"), [5, 2]);
        // "x" has no symbol: dropped, as `tokenizers` does without an unknown token, which
        // leaves "a" and "b" next to each other to merge.
        assert_eq!(ids(&model, "axb"), [3]);
        assert!(ids(&model, "xx").is_empty());
        assert!(!model.covers_all_bytes());
    }

    #[test]
    fn ignore_merges_takes_whole_vocabulary_pieces() {
        assert_eq!(ids(&toy_model(false), "abcc"), [5, 2]);
        assert_eq!(ids(&toy_model(true), "abcc"), [9]);
        assert_eq!(ids(&toy_model(true), "cc"), [6]);
    }

    #[test]
    fn cache_returns_what_was_computed_and_stays_bounded() {
        let model = toy_model(false);
        let mut cache = PieceCache::new(2);
        let mut out = Vec::new();
        let long = "abc".repeat(10);
        for piece in ["abc", "abcc", "abc", " ab", "ab", "a", "abcc", &long, &long] {
            model.encode_piece_cached(piece.as_bytes(), &mut cache, &mut out);
            assert!(cache.len() <= 2);
        }
        assert_eq!(out[..10], [5, 5, 2, 5, 7, 3, 3, 0, 5, 2]);
        assert_eq!(out[10..], [5; 20]);
    }

    #[test]
    fn unknown_merge_part_is_an_error() {
        let vocab: HashMap<String, u32> = [("a".to_string(), 0)].into_iter().collect();
        let merges = vec![("a".to_string(), "z".to_string())];
        let err = ByteLevelBpe::new(&vocab, &merges, false).err().unwrap();
        assert!(err.contains("\"z\""), "{err}");
    }
}
