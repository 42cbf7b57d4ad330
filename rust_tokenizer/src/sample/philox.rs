//! numpy's `Philox` bit generator (Philox4x64-10) and its `Generator.permutation`, draw for
//! draw: the same state gives the same permutations and leaves the same state behind.
//!
//! The sampler's epochs must be the ones data_io draws with `numpy.random.Generator(Philox(seed))`.
//! The state crosses over from numpy (`bit_generator.state`) and goes back afterwards, so
//! either side can carry on drawing. numpy does not promise its `Generator` streams across
//! releases (NEP 19), so the Python side checks these permutations against numpy's own before
//! using them (`hrm_assets.sampling.epoch_draw`).

/// Philox4x64's round multipliers and key increments (Salmon et al., Random123).
const MULTIPLIERS: [u64; 2] = [0xD2E7_470E_E14C_6C93, 0xCA5A_8263_9512_1157];
const KEY_STEPS: [u64; 2] = [0x9E37_79B9_7F4A_7C15, 0xBB67_AE85_84CA_A73B];
const ROUNDS: usize = 10;

/// Everything numpy's `Philox.state` holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhiloxState {
    pub counter: [u64; 4],
    pub key: [u64; 2],
    /// The block last generated, handed out one word at a time from `buffer_pos` (4: used up).
    pub buffer: [u64; 4],
    pub buffer_pos: usize,
    /// numpy hands out a 64-bit word as two 32-bit draws, low half first; the high half waits here.
    pub has_uint32: bool,
    pub uinteger: u32,
}

#[derive(Clone, Debug)]
pub struct Philox {
    state: PhiloxState,
    /// The blocks of the next counters, computed several at a time (independent multiplies
    /// overlap); `ahead[ahead_pos..]` are still to come. `state` stays numpy's throughout.
    ahead: [[u64; 4]; AHEAD],
    ahead_pos: usize,
    /// Each shuffle step's drawn index, reused from shuffle to shuffle.
    others: Vec<u32>,
}

/// Blocks computed at once.
const AHEAD: usize = 4;

fn mul_hi_lo(a: u64, b: u64) -> (u64, u64) {
    let product = u128::from(a) * u128::from(b);
    ((product >> 64) as u64, product as u64)
}

fn increment(counter: &mut [u64; 4]) {
    for word in counter.iter_mut() {
        *word = word.wrapping_add(1);
        if *word != 0 {
            break;
        }
    }
}

/// `counter + n`, carried across the words.
fn counter_plus(counter: [u64; 4], n: u64) -> [u64; 4] {
    let mut sum = counter;
    let mut carry = n;
    for word in sum.iter_mut() {
        let (value, overflowed) = word.overflowing_add(carry);
        *word = value;
        carry = u64::from(overflowed);
        if carry == 0 {
            break;
        }
    }
    sum
}

/// The blocks of `counter + 1 ..= counter + AHEAD`, their rounds interleaved.
fn philox_blocks_after(counter: [u64; 4], key: [u64; 2]) -> [[u64; 4]; AHEAD] {
    let mut words = [counter; AHEAD];
    let mut next = counter;
    for block in words.iter_mut() {
        increment(&mut next);
        *block = next;
    }
    let mut key = key;
    for round in 0..ROUNDS {
        if round > 0 {
            key[0] = key[0].wrapping_add(KEY_STEPS[0]);
            key[1] = key[1].wrapping_add(KEY_STEPS[1]);
        }
        for block in words.iter_mut() {
            let (hi0, lo0) = mul_hi_lo(MULTIPLIERS[0], block[0]);
            let (hi1, lo1) = mul_hi_lo(MULTIPLIERS[1], block[2]);
            *block = [hi1 ^ block[1] ^ key[0], lo1, hi0 ^ block[3] ^ key[1], lo0];
        }
    }
    words
}

#[cfg(test)]
fn philox_block(counter: [u64; 4], key: [u64; 2]) -> [u64; 4] {
    let (mut words, mut key) = (counter, key);
    for round in 0..ROUNDS {
        if round > 0 {
            key[0] = key[0].wrapping_add(KEY_STEPS[0]);
            key[1] = key[1].wrapping_add(KEY_STEPS[1]);
        }
        let (hi0, lo0) = mul_hi_lo(MULTIPLIERS[0], words[0]);
        let (hi1, lo1) = mul_hi_lo(MULTIPLIERS[1], words[2]);
        words = [hi1 ^ words[1] ^ key[0], lo1, hi0 ^ words[3] ^ key[1], lo0];
    }
    words
}

impl Philox {
    pub fn from_state(state: PhiloxState) -> Self {
        Philox {
            state,
            ahead: [[0; 4]; AHEAD],
            ahead_pos: AHEAD,
            others: Vec::new(),
        }
    }

    pub fn state(&self) -> &PhiloxState {
        &self.state
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let state = &mut self.state;
        if state.buffer_pos < 4 {
            let word = state.buffer[state.buffer_pos];
            state.buffer_pos += 1;
            return word;
        }
        if self.ahead_pos == AHEAD {
            self.ahead = philox_blocks_after(state.counter, state.key);
            self.ahead_pos = 0;
        }
        increment(&mut state.counter);
        state.buffer = self.ahead[self.ahead_pos];
        self.ahead_pos += 1;
        state.buffer_pos = 1;
        state.buffer[0]
    }

    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        if self.state.has_uint32 {
            self.state.has_uint32 = false;
            return self.state.uinteger;
        }
        let word = self.next_u64();
        self.state.has_uint32 = true;
        self.state.uinteger = (word >> 32) as u32;
        word as u32
    }

    /// A uniform integer in `0..=max`, by numpy's `random_interval`: draws masked to the
    /// smallest all-ones mask covering `max`, redrawn while above it.
    #[inline]
    pub fn interval(&mut self, max: u64) -> u64 {
        if max == 0 {
            return 0;
        }
        let mask = u64::MAX >> max.leading_zeros();
        if max <= u64::from(u32::MAX) {
            loop {
                let value = u64::from(self.next_u32()) & mask;
                if value <= max {
                    return value;
                }
            }
        }
        loop {
            let value = self.next_u64() & mask;
            if value <= max {
                return value;
            }
        }
    }

    /// Shuffle in place as numpy's `Generator.shuffle` does (Fisher-Yates from the end).
    pub fn shuffle<T>(&mut self, values: &mut [T]) {
        let mut last = values.len().saturating_sub(1);
        // A draw at a time while they are 64-bit or a buffered word is left to hand out.
        while last > 0 && (last as u64 > u64::from(u32::MAX) || !self.at_block_boundary()) {
            let other = self.interval(last as u64) as usize;
            values.swap(last, other);
            last -= 1;
        }
        if last > 0 {
            self.shuffle_from_fresh_blocks(&mut values[..=last]);
        }
    }

    /// Whether the next draw starts a new block (nothing buffered).
    fn at_block_boundary(&self) -> bool {
        !self.state.has_uint32 && self.state.buffer_pos >= 4
    }

    /// Fisher-Yates over `values`, whose draws are all 32-bit and start at a block boundary,
    /// so they are the next blocks' words, low half first. Two passes: every step's drawn
    /// index first, from a batch of blocks generated at once, without branching on the
    /// rejections (about a quarter of the draws, at random); then the swaps, whose loads no
    /// longer wait on the draws. numpy's state is set once at the end from the draws used.
    fn shuffle_from_fresh_blocks<T>(&mut self, values: &mut [T]) {
        const DRAWS_PER_BLOCK: usize = 8;
        const BATCH: usize = DRAWS_PER_BLOCK * AHEAD;
        let (start, key) = (self.state.counter, self.state.key);
        let mut blocks = [[0u64; 4]; AHEAD];
        let mut draws = [0u32; BATCH];
        let (mut used, mut batches) = (BATCH, 0u64);
        let others = &mut self.others;
        others.clear();
        others.resize(values.len(), 0);
        let mut last = values.len() - 1;
        while last > 0 {
            if used == BATCH {
                blocks = philox_blocks_after(counter_plus(start, batches * AHEAD as u64), key);
                for (pair, word) in draws.chunks_exact_mut(2).zip(blocks.iter().flatten()) {
                    pair[0] = *word as u32;
                    pair[1] = (*word >> 32) as u32;
                }
                (used, batches) = (0, batches + 1);
            }
            // A rejected draw is overwritten by the next one, for the same step.
            for &draw in &draws[used..] {
                let max = last as u32;
                let value = draw & (u32::MAX >> max.leading_zeros());
                used += 1;
                others[last] = value;
                last -= usize::from(value <= max);
                if last == 0 {
                    break;
                }
            }
        }
        for (last, &other) in others.iter().enumerate().skip(1).rev() {
            values.swap(last, other as usize);
        }
        if batches == 0 {
            return;
        }
        // The last draw came from block `in_batch - 1` of the last batch, as its word
        // `(in_block - 1) / 2`: low half when `in_block` is odd (the high half then waits).
        let in_batch = used.div_ceil(DRAWS_PER_BLOCK);
        let in_block = used - DRAWS_PER_BLOCK * (in_batch - 1);
        let state = &mut self.state;
        state.counter = counter_plus(start, (batches - 1) * AHEAD as u64 + in_batch as u64);
        state.buffer = blocks[in_batch - 1];
        state.buffer_pos = in_block.div_ceil(2);
        state.has_uint32 = in_block % 2 == 1;
        state.uinteger = (state.buffer[(in_block - 1) / 2] >> 32) as u32;
        self.ahead_pos = AHEAD;
    }

    /// `Generator.permutation(n)`: `0..n` shuffled.
    pub fn permutation(&mut self, n: usize) -> Vec<u64> {
        let mut values: Vec<u64> = (0..n as u64).collect();
        self.shuffle(&mut values);
        values
    }

    /// The same permutation in 32-bit values, into `out` (its memory reused): half the memory
    /// traffic of [`Philox::permutation`]. `n` must be at most 2^32.
    pub fn permutation_u32_into(&mut self, n: usize, out: &mut Vec<u32>) {
        assert!(
            n as u64 <= 1 << 32,
            "a 32-bit permutation has at most 2^32 values"
        );
        out.clear();
        out.extend((0..n as u64).map(|value| value as u32));
        self.shuffle(out);
    }
}

/// `numpy.random.Philox(0).state` (numpy 2.4): the seed goes through `SeedSequence`, which
/// this module does not restate; the state is taken as numpy gives it.
#[cfg(test)]
pub(crate) fn seeded_zero() -> Philox {
    Philox::from_state(PhiloxState {
        counter: [0; 4],
        key: [0xdb2c_d7e7_b0f4_78be, 0xabf4_641a_2c71_ba49],
        buffer: [0; 4],
        buffer_pos: 4,
        has_uint32: false,
        uinteger: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutations_equal_numpys() {
        // numpy.random.Generator(numpy.random.Philox(0)): .permutation(10), then .permutation(7),
        // then .bit_generator.state.
        let mut rng = seeded_zero();
        assert_eq!(rng.permutation(10), [8, 0, 3, 7, 6, 4, 1, 5, 2, 9]);
        assert_eq!(rng.permutation(7), [6, 1, 2, 4, 3, 5, 0]);
        let state = rng.state();
        assert_eq!(state.counter, [3, 0, 0, 0]);
        assert_eq!(
            (state.buffer_pos, state.has_uint32, state.uinteger),
            (1, true, 155_009_983)
        );
    }

    #[test]
    fn thirty_two_bit_permutations_are_the_same_draws() {
        let (mut wide, mut narrow) = (seeded_zero(), seeded_zero());
        let mut out = vec![7, 7];
        for n in [0usize, 1, 5, 1000, 4097] {
            narrow.permutation_u32_into(n, &mut out);
            let expected: Vec<u32> = wide.permutation(n).iter().map(|&v| v as u32).collect();
            assert_eq!(out, expected);
        }
        assert_eq!(wide.state(), narrow.state());
    }

    /// numpy's shuffle as written: one `random_interval` per step.
    fn shuffle_draw_by_draw<T>(rng: &mut Philox, values: &mut [T]) {
        for last in (1..values.len()).rev() {
            let other = rng.interval(last as u64) as usize;
            values.swap(last, other);
        }
    }

    #[test]
    fn batched_shuffles_are_numpys_draws_and_leave_numpys_state() {
        // Sizes around the batch (32 draws) and block (8 draws) lengths and past a power of
        // two; each starting anywhere within a block, after 32- or 64-bit draws.
        for n in [2usize, 3, 7, 8, 9, 31, 32, 33, 34, 100, 257, 4097, 70_000] {
            for skipped in 0..10 {
                for wide_first in [false, true] {
                    let mut batched = seeded_zero();
                    if wide_first {
                        batched.next_u64();
                    }
                    for _ in 0..skipped {
                        batched.next_u32();
                    }
                    let mut reference = batched.clone();
                    let mut fast: Vec<u32> = (0..n as u32).collect();
                    let mut slow = fast.clone();
                    batched.shuffle(&mut fast);
                    shuffle_draw_by_draw(&mut reference, &mut slow);
                    assert_eq!(fast, slow, "n {n}, skipped {skipped}");
                    assert_eq!(
                        batched.state(),
                        reference.state(),
                        "n {n}, skipped {skipped}"
                    );
                    // And both go on alike.
                    assert_eq!(batched.next_u64(), reference.next_u64());
                    assert_eq!(batched.next_u32(), reference.next_u32());
                }
            }
        }
    }

    #[test]
    fn counters_add_with_carries() {
        assert_eq!(counter_plus([1, 2, 3, 4], 5), [6, 2, 3, 4]);
        assert_eq!(counter_plus([u64::MAX - 1, 9, 0, 0], 3), [1, 10, 0, 0]);
        assert_eq!(
            counter_plus([u64::MAX, u64::MAX, u64::MAX, 0], 1),
            [0, 0, 0, 1]
        );
    }

    #[test]
    fn counter_carries_into_the_next_word() {
        let mut rng = Philox::from_state(PhiloxState {
            counter: [u64::MAX, u64::MAX, 7, 0],
            ..seeded_zero().state
        });
        rng.next_u64();
        assert_eq!(rng.state().counter, [0, 0, 8, 0]);
        assert_eq!(rng.state().buffer_pos, 1);
    }

    #[test]
    fn blocks_computed_ahead_are_the_blocks_of_the_next_counters() {
        let key = seeded_zero().state.key;
        let counter = [u64::MAX - 1, u64::MAX, 5, 0];
        let ahead = philox_blocks_after(counter, key);
        let mut next = counter;
        for block in ahead {
            increment(&mut next);
            assert_eq!(block, philox_block(next, key));
        }
        assert_eq!(next, [2, 0, 6, 0]);
    }

    #[test]
    fn a_block_hands_out_four_words_then_counts_on() {
        let mut rng = seeded_zero();
        let block = philox_block([1, 0, 0, 0], rng.state().key);
        let words: Vec<u64> = (0..4).map(|_| rng.next_u64()).collect();
        assert_eq!(words, block);
        rng.next_u64();
        assert_eq!(rng.state().counter, [2, 0, 0, 0]);
    }

    #[test]
    fn thirty_two_bit_draws_split_a_word_low_half_first() {
        let mut whole = seeded_zero();
        let word = whole.next_u64();
        let mut halves = seeded_zero();
        assert_eq!(halves.next_u32(), word as u32);
        assert!(halves.state().has_uint32);
        assert_eq!(halves.next_u32(), (word >> 32) as u32);
        assert!(!halves.state().has_uint32);
    }

    #[test]
    fn intervals_stay_in_range_and_reach_both_ends() {
        let mut rng = seeded_zero();
        for max in [
            1u64,
            2,
            5,
            6,
            255,
            256,
            1 << 31,
            u64::from(u32::MAX),
            1 << 40,
        ] {
            let (mut low, mut high) = (false, false);
            for _ in 0..4000 {
                let value = rng.interval(max);
                assert!(value <= max);
                low |= value == 0;
                high |= value == max;
            }
            if max < 256 {
                assert!(low && high, "max {max}");
            }
        }
        assert_eq!(rng.interval(0), 0);
    }

    #[test]
    fn permutations_are_permutations() {
        let mut rng = seeded_zero();
        for n in [0usize, 1, 2, 3, 17, 1000] {
            let mut values = rng.permutation(n);
            values.sort_unstable();
            assert_eq!(values, (0..n as u64).collect::<Vec<_>>());
        }
    }
}
