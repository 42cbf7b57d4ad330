//! Per-worker cache of pieces already encoded: piece bytes -> ids.
//!
//! After the first few megabytes nearly every piece is a hit, so a lookup is the encoder's inner
//! loop. Pieces of 2 to 7 bytes (most words with their leading space) are keyed by one `u64`
//! holding their bytes and length, in an open-addressing table of 16-byte slots: one multiply,
//! usually one memory access, one comparison. Pieces of 8 to 15 bytes are keyed by a `u128` the
//! same way; longer ones by their bytes. Ids are packed into a `u64`: one or two inline, more in
//! an arena. The cache empties itself when full, so memory stays bounded whatever the text.

use std::collections::HashMap;

use super::bpe::FxBuildHasher;

/// Pieces longer than this are not cached: rare, and each would take a lot of room.
const MAX_CACHED_PIECE: usize = 256;
const MAX_TINY_PIECE: usize = 7;
const MAX_SHORT_PIECE: usize = 15;

pub(crate) struct PieceCache {
    tiny: TinyTable,
    short: HashMap<u128, u64, FxBuildHasher>,
    long: HashMap<Box<[u8]>, u64, FxBuildHasher>,
    /// Ids of the entries with more than two.
    arena: Vec<u32>,
    capacity: usize,
}

impl PieceCache {
    /// A cache that starts over once it holds `capacity` pieces.
    pub(crate) fn new(capacity: usize) -> Self {
        PieceCache {
            tiny: TinyTable::new(),
            short: HashMap::default(),
            long: HashMap::default(),
            arena: Vec::new(),
            capacity,
        }
    }

    /// Append the cached ids of `piece` to `out`; `false` if it is not cached.
    #[inline(always)]
    pub(crate) fn append_cached(&self, piece: &[u8], out: &mut Vec<u32>) -> bool {
        let packed = if piece.len() <= MAX_TINY_PIECE {
            self.tiny.get(tiny_key(piece))
        } else if piece.len() <= MAX_SHORT_PIECE {
            self.short.get(&short_key(piece)).copied()
        } else {
            self.long.get(piece).copied()
        };
        match packed {
            Some(packed) => {
                unpack_into(packed, &self.arena, out);
                true
            }
            None => false,
        }
    }

    pub(crate) fn insert(&mut self, piece: &[u8], ids: &[u32]) {
        if piece.is_empty() || piece.len() > MAX_CACHED_PIECE {
            return;
        }
        if self.len() >= self.capacity || self.arena.len() + ids.len() > u32::MAX as usize {
            self.tiny.clear();
            self.short.clear();
            self.long.clear();
            self.arena.clear();
        }
        let packed = pack(ids, &mut self.arena);
        if piece.len() <= MAX_TINY_PIECE {
            self.tiny.insert(tiny_key(piece), packed);
        } else if piece.len() <= MAX_SHORT_PIECE {
            self.short.insert(short_key(piece), packed);
        } else {
            self.long.insert(piece.into(), packed);
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.tiny.len + self.short.len() + self.long.len()
    }
}

// -- ids packed into a u64: the top two bits say how ----------------------------------------------

const ONE: u64 = 1 << 62;
const TWO: u64 = 2 << 62;
const RANGE: u64 = 3 << 62;
const LOW_31: u64 = (1 << 31) - 1;

/// One id; two ids below 2^31; or a range of `arena` (start, length), where `ids` are added.
fn pack(ids: &[u32], arena: &mut Vec<u32>) -> u64 {
    match *ids {
        [id] => ONE | u64::from(id),
        [first, second] if u64::from(first.max(second)) <= LOW_31 => {
            TWO | (u64::from(second) << 31) | u64::from(first)
        }
        _ => {
            let start = arena.len() as u64;
            arena.extend_from_slice(ids);
            RANGE | ((ids.len() as u64) << 32) | start
        }
    }
}

#[inline(always)]
fn unpack_into(packed: u64, arena: &[u32], out: &mut Vec<u32>) {
    match packed & RANGE {
        ONE => out.push(packed as u32),
        TWO => {
            out.push((packed & LOW_31) as u32);
            out.push(((packed >> 31) & LOW_31) as u32);
        }
        _ => {
            let start = (packed & u64::from(u32::MAX)) as usize;
            let len = ((packed >> 32) & ((1 << 30) - 1)) as usize;
            out.extend_from_slice(&arena[start..start + len]);
        }
    }
}

// -- keys -------------------------------------------------------------------------------------------

/// Little-endian `u64` of the 8 bytes at `at`.
#[inline(always)]
fn read_u64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

#[inline(always)]
fn read_u32(bytes: &[u8], at: usize) -> u64 {
    u64::from(u32::from_le_bytes(
        bytes[at..at + 4].try_into().expect("4 bytes"),
    ))
}

/// The bytes of a piece of 1 to 7 bytes in the low 7 bytes (little-endian, zero padded) and its
/// length in the top byte: distinct pieces get distinct keys, and no key is 0. Loads overlap
/// instead of going byte by byte.
#[inline(always)]
fn tiny_key(piece: &[u8]) -> u64 {
    let len = piece.len();
    debug_assert!((1..=MAX_TINY_PIECE).contains(&len));
    let bytes = if len >= 4 {
        // Bytes 4..len are the top `len - 4` bytes of the 4 ending at `len`.
        read_u32(piece, 0) | ((read_u32(piece, len - 4) >> (8 * (8 - len))) << 32)
    } else {
        piece
            .iter()
            .rev()
            .fold(0u64, |acc, &byte| (acc << 8) | u64::from(byte))
    };
    bytes | ((len as u64) << 56)
}

/// The same for 8 to 15 bytes, in a `u128`.
#[inline(always)]
fn short_key(piece: &[u8]) -> u128 {
    let len = piece.len();
    debug_assert!((8..=MAX_SHORT_PIECE).contains(&len));
    // Bytes 8..len are the top `len - 8` bytes of the 8 ending at `len`.
    let tail = if len == 8 {
        0
    } else {
        read_u64(piece, len - 8) >> (8 * (16 - len))
    };
    (u128::from(tail | ((len as u64) << 56)) << 64) | u128::from(read_u64(piece, 0))
}

// -- the table of tiny pieces -----------------------------------------------------------------------

/// Open addressing with linear probing over `(key, packed ids)` slots; key 0 marks a free slot.
/// At most half full.
struct TinyTable {
    slots: Vec<(u64, u64)>,
    /// 64 - log2(slots): the multiplicative hash keeps the top bits.
    shift: u32,
    len: usize,
}

const INITIAL_SLOTS: usize = 1 << 12;

impl TinyTable {
    fn new() -> Self {
        TinyTable {
            slots: vec![(0, 0); INITIAL_SLOTS],
            shift: 64 - INITIAL_SLOTS.trailing_zeros(),
            len: 0,
        }
    }

    #[inline(always)]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    #[inline(always)]
    fn get(&self, key: u64) -> Option<u64> {
        let mask = self.slots.len() - 1;
        let mut index = self.home(key);
        loop {
            let (found, packed) = self.slots[index];
            if found == key {
                return Some(packed);
            }
            if found == 0 {
                return None;
            }
            index = (index + 1) & mask;
        }
    }

    fn insert(&mut self, key: u64, packed: u64) {
        if 2 * (self.len + 1) > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut index = self.home(key);
        loop {
            let slot = &mut self.slots[index];
            if slot.0 == 0 {
                *slot = (key, packed);
                self.len += 1;
                return;
            }
            if slot.0 == key {
                slot.1 = packed;
                return;
            }
            index = (index + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let doubled = vec![(0, 0); 2 * self.slots.len()];
        let old = std::mem::replace(&mut self.slots, doubled);
        self.shift -= 1;
        self.len = 0;
        for (key, packed) in old {
            if key != 0 {
                self.insert(key, packed);
            }
        }
    }

    fn clear(&mut self) {
        self.slots.fill((0, 0));
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bytes_from_few_values() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(proptest::sample::select(vec![0u8, 1, b'a', 0xFF]), 1..=15)
    }

    proptest! {
        #[test]
        fn keys_are_equal_exactly_for_equal_pieces(
            a in bytes_from_few_values(), b in bytes_from_few_values()
        ) {
            if a.len() <= MAX_TINY_PIECE && b.len() <= MAX_TINY_PIECE {
                prop_assert_eq!(tiny_key(&a) == tiny_key(&b), a == b);
                prop_assert_ne!(tiny_key(&a), 0);
            }
            if a.len() > MAX_TINY_PIECE && b.len() > MAX_TINY_PIECE {
                prop_assert_eq!(short_key(&a) == short_key(&b), a == b);
            }
        }

        #[test]
        fn packed_ids_unpack_to_themselves(
            ids in proptest::collection::vec(any::<u32>(), 0..5)
        ) {
            let mut arena = vec![7, 8, 9];
            let packed = pack(&ids, &mut arena);
            let mut out = vec![42];
            unpack_into(packed, &arena, &mut out);
            prop_assert_eq!(&out[1..], &ids[..]);
        }

        #[test]
        fn cache_returns_what_was_inserted(
            pieces in proptest::collection::vec(
                (proptest::collection::vec(any::<u8>(), 1..40),
                 proptest::collection::vec(any::<u32>(), 0..4)),
                1..300,
            )
        ) {
            let mut cache = PieceCache::new(1 << 20);
            let mut expected = std::collections::HashMap::new();
            for (piece, ids) in &pieces {
                cache.insert(piece, ids);
                expected.insert(piece.clone(), ids.clone());
            }
            prop_assert_eq!(cache.len(), expected.len());
            for (piece, ids) in &expected {
                let mut out = Vec::new();
                prop_assert!(cache.append_cached(piece, &mut out));
                prop_assert_eq!(&out, ids);
            }
            prop_assert!(!cache.append_cached(&[0xC0; 41], &mut Vec::new()));
        }
    }

    #[test]
    fn full_cache_starts_over() {
        let mut cache = PieceCache::new(3);
        for piece in [&b"ab"[..], b"abcdefghij", b"abcdefghijklmnopq", b"xy"] {
            cache.insert(piece, &[1, 2, 3]);
        }
        assert_eq!(cache.len(), 1);
        let mut out = Vec::new();
        assert!(cache.append_cached(b"xy", &mut out));
        assert!(!cache.append_cached(b"ab", &mut out));
        assert_eq!(out, [1, 2, 3]);
    }

    #[test]
    fn tiny_table_grows_and_keeps_every_entry() {
        let mut table = TinyTable::new();
        for key in 1..=20_000u64 {
            table.insert(key << 8, key);
        }
        assert!(table.slots.len() >= 40_000);
        assert!((1..=20_000u64).all(|key| table.get(key << 8) == Some(key)));
        assert_eq!(table.get(20_001 << 8), None);
    }
}
