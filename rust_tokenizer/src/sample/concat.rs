//! The sampler's `tokens.npy`: every task's token array, back to back, cast to one narrower
//! integer type, with the SHA-256 of the written file.
//!
//! Reader threads take blocks in turn (thread `r` has blocks `r`, `r + n`, ...), read them,
//! cast them and write them at their offsets; the calling thread hashes the cast blocks in file
//! order from the same buffers, which then go back to their reader. So the hash costs no second
//! read of the output, and memory is two blocks per reader whatever the corpus.

use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread;

use sha2::{Digest, Sha256};

use crate::error::{Error, IoContext, Result};
use crate::npy::{hex_digest, IntType};

/// One task's token array: where its elements start in its `.npy` file, and how many.
#[derive(Clone, Debug)]
pub struct TokenSource {
    pub path: PathBuf,
    pub element: IntType,
    pub count: u64,
    pub data_offset: u64,
}

/// What [`concatenate_tokens`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Concatenated {
    /// The largest source value, before the cast (`None` without elements).
    pub max_id: Option<i128>,
    pub sha256: String,
    pub size: u64,
}

/// A source element: decoded from its bytes, ordered, and widened for the cast.
trait Element: Copy + Ord {
    const SIZE: usize;
    const MIN: Self;
    fn decode<const BIG: bool>(bytes: &[u8]) -> Self;
    /// Sign- or zero-extended to 64 bits: the cast keeps the low bits, as a C cast does.
    fn bits(self) -> u64;
    fn wide(self) -> i128;
}

/// An output element: the low bits of a value, little-endian.
trait Target {
    const SIZE: usize;
    fn encode(bits: u64, out: &mut [u8]);
}

macro_rules! element {
    ($($t:ty),*) => {$(
        impl Element for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            const MIN: Self = <$t>::MIN;
            #[inline(always)]
            fn decode<const BIG: bool>(bytes: &[u8]) -> Self {
                let array = bytes.try_into().expect("a chunk of the element's size");
                if BIG { <$t>::from_be_bytes(array) } else { <$t>::from_le_bytes(array) }
            }
            #[inline(always)]
            fn bits(self) -> u64 { self as u64 }
            #[inline(always)]
            fn wide(self) -> i128 { self as i128 }
        }
        impl Target for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            #[inline(always)]
            fn encode(bits: u64, out: &mut [u8]) {
                out.copy_from_slice(&(bits as $t).to_le_bytes());
            }
        }
    )*};
}
element!(i8, u8, i16, u16, i32, u32, i64, u64);

#[inline(always)]
fn cast_into<S: Element, T: Target, const BIG: bool>(raw: &[u8], out: &mut [u8]) -> Option<i128> {
    let mut max = S::MIN;
    for (chunk, slot) in raw.chunks_exact(S::SIZE).zip(out.chunks_exact_mut(T::SIZE)) {
        let value = S::decode::<BIG>(chunk);
        max = max.max(value);
        T::encode(value.bits(), slot);
    }
    (!raw.is_empty()).then(|| max.wide())
}

#[inline(always)]
fn cast_from<S: Element, const BIG: bool>(
    raw: &[u8],
    target: IntType,
    out: &mut [u8],
) -> Option<i128> {
    match (target.signed, target.size) {
        (false, 1) => cast_into::<S, u8, BIG>(raw, out),
        (true, 1) => cast_into::<S, i8, BIG>(raw, out),
        (false, 2) => cast_into::<S, u16, BIG>(raw, out),
        (true, 2) => cast_into::<S, i16, BIG>(raw, out),
        (false, 4) => cast_into::<S, u32, BIG>(raw, out),
        (true, 4) => cast_into::<S, i32, BIG>(raw, out),
        (false, _) => cast_into::<S, u64, BIG>(raw, out),
        (true, _) => cast_into::<S, i64, BIG>(raw, out),
    }
}

/// Cast `raw` (elements of `source`) into `out` (elements of `target`, little-endian); returns
/// the largest source value.
pub(crate) fn cast(raw: &[u8], source: IntType, target: IntType, out: &mut [u8]) -> Option<i128> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        return unsafe { cast_avx2(raw, source, target, out) };
    }
    cast_portable(raw, source, target, out)
}

/// `$function::<T, BIG>($args)` for the Rust type `T` and byte order `BIG` of the element type
/// `$element` (an [`IntType`]): the one dispatch from a header's type to the generic loops.
macro_rules! for_element_type {
    ($element:expr, $function:ident $args:tt) => {
        match ($element.signed, $element.size) {
            (false, 1) => for_element_type!(@order $element, $function, u8, $args),
            (true, 1) => for_element_type!(@order $element, $function, i8, $args),
            (false, 2) => for_element_type!(@order $element, $function, u16, $args),
            (true, 2) => for_element_type!(@order $element, $function, i16, $args),
            (false, 4) => for_element_type!(@order $element, $function, u32, $args),
            (true, 4) => for_element_type!(@order $element, $function, i32, $args),
            (false, _) => for_element_type!(@order $element, $function, u64, $args),
            (true, _) => for_element_type!(@order $element, $function, i64, $args),
        }
    };
    (@order $element:expr, $function:ident, $t:ty, ($($arg:expr),*)) => {
        if $element.big_endian {
            $function::<$t, true>($($arg),*)
        } else {
            $function::<$t, false>($($arg),*)
        }
    };
}

/// The same loops compiled for AVX2: the default x86-64 target has no unsigned 32-bit max
/// and no narrowing packs, which leaves the cast scalar (about 4x slower).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn cast_avx2(raw: &[u8], source: IntType, target: IntType, out: &mut [u8]) -> Option<i128> {
    cast_portable(raw, source, target, out)
}

#[inline(always)]
fn cast_portable(raw: &[u8], source: IntType, target: IntType, out: &mut [u8]) -> Option<i128> {
    for_element_type!(source, cast_from(raw, target, out))
}

#[inline(always)]
fn max_of<S: Element, const BIG: bool>(raw: &[u8]) -> Option<i128> {
    let max = raw
        .chunks_exact(S::SIZE)
        .fold(S::MIN, |max, chunk| max.max(S::decode::<BIG>(chunk)));
    (raw.len() >= S::SIZE).then(|| max.wide())
}

/// The largest element of `raw` (whole elements of `element`; a cut last one is ignored), or
/// `None` when it holds none: the figure [`cast`] returns, without the copy.
pub(crate) fn max_value(raw: &[u8], element: IntType) -> Option<i128> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        return unsafe { max_value_avx2(raw, element) };
    }
    max_value_portable(raw, element)
}

/// As [`cast_avx2`]: the default x86-64 target has no unsigned 32-bit max.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn max_value_avx2(raw: &[u8], element: IntType) -> Option<i128> {
    max_value_portable(raw, element)
}

#[inline(always)]
fn max_value_portable(raw: &[u8], element: IntType) -> Option<i128> {
    for_element_type!(element, max_of(raw))
}

struct Block {
    source: usize,
    start: u64,
    len: u64,
    /// Byte offset of the block in the output file.
    output_offset: u64,
}

fn blocks(sources: &[TokenSource], header_len: u64, target: IntType, per_block: u64) -> Vec<Block> {
    let mut found = Vec::new();
    let mut output_offset = header_len;
    for (index, source) in sources.iter().enumerate() {
        let mut start = 0;
        while start < source.count {
            let len = per_block.min(source.count - start);
            found.push(Block {
                source: index,
                start,
                len,
                output_offset,
            });
            output_offset += len * target.size as u64;
            start += len;
        }
    }
    found
}

type Copied = Result<(Vec<u8>, Option<i128>)>;

/// Reader `first` of `stride`: copies its blocks, sends each cast block to the hasher, and
/// takes its buffers back from `free`.
#[allow(clippy::too_many_arguments)]
fn copy_blocks(
    first: usize,
    stride: usize,
    blocks: &[Block],
    sources: &[TokenSource],
    target: IntType,
    output: (&File, &Path),
    done: SyncSender<Copied>,
    free: Receiver<Vec<u8>>,
) {
    let mut raw = Vec::new();
    for block in blocks.iter().skip(first).step_by(stride) {
        let Ok(mut out) = free.recv() else { return };
        let copied =
            copy_block(block, sources, target, output, &mut raw, &mut out).map(|max| (out, max));
        let failed = copied.is_err();
        if done.send(copied).is_err() || failed {
            return;
        }
    }
}

fn copy_block(
    block: &Block,
    sources: &[TokenSource],
    target: IntType,
    (output, output_path): (&File, &Path),
    raw: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> Result<Option<i128>> {
    let source = &sources[block.source];
    let element = source.element.size as u64;
    raw.resize((block.len * element) as usize, 0);
    out.resize(block.len as usize * target.size, 0);
    let file = File::open(&source.path).at(&source.path)?;
    file.read_exact_at(raw, source.data_offset + block.start * element)
        .map_err(|err| match err.kind() {
            ErrorKind::UnexpectedEof => Error::file(&source.path, "shorter than its header says"),
            _ => Error::Io {
                path: source.path.clone(),
                source: err,
            },
        })?;
    let max = cast(raw, source.element, target, out);
    output
        .write_all_at(out, block.output_offset)
        .at(output_path)?;
    Ok(max)
}

/// Write `header` and then every source's elements, cast to `target` (low bits kept, as numpy's
/// unsafe cast does), into `destination`; fsync it and return its SHA-256, its size and the
/// largest source value. `progress` receives the elements of each block once it is hashed and
/// answers whether to go on: `false` stops the copy (an error; the file is left unfinished).
pub fn concatenate_tokens(
    destination: &Path,
    header: &[u8],
    sources: &[TokenSource],
    target: IntType,
    workers: usize,
    block_elements: usize,
    progress: &mut dyn FnMut(u64) -> bool,
) -> Result<Concatenated> {
    if target.big_endian {
        return Err(Error::Config(
            "the output type must be little-endian".into(),
        ));
    }
    let workers = workers.max(1);
    let blocks = blocks(
        sources,
        header.len() as u64,
        target,
        block_elements.max(1) as u64,
    );
    let output = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(destination)
        .at(destination)?;
    output.write_all_at(header, 0).at(destination)?;
    let mut hasher = Sha256::new();
    hasher.update(header);
    let mut max_id: Option<i128> = None;
    let mut failure = None;
    thread::scope(|scope| {
        let mut copied = Vec::with_capacity(workers);
        let mut returns = Vec::with_capacity(workers);
        for first in 0..workers {
            let (done, receive) = sync_channel::<Copied>(2);
            let (give_back, free) = sync_channel::<Vec<u8>>(2);
            for _ in 0..2 {
                give_back
                    .send(Vec::new())
                    .expect("the reader holds its end");
            }
            let (blocks, output) = (&blocks, (&output, destination));
            scope.spawn(move || {
                copy_blocks(first, workers, blocks, sources, target, output, done, free)
            });
            copied.push(receive);
            returns.push(give_back);
        }
        for (index, block) in blocks.iter().enumerate() {
            let reader = index % workers;
            match copied[reader].recv() {
                Ok(Ok((out, max))) => {
                    hasher.update(&out);
                    max_id = max_id.max(max);
                    if !progress(block.len) {
                        failure = Some(Error::Config("the copy was stopped".into()));
                        break;
                    }
                    // A reader that stopped early no longer takes buffers back.
                    let _ = returns[reader].send(out);
                }
                Ok(Err(err)) => {
                    failure = Some(err);
                    break;
                }
                // A reader that panicked: the scope re-raises its panic on leaving.
                Err(_) => break,
            }
        }
        // Closing the channels lets every reader stop, so the scope can join them.
        drop(returns);
        drop(copied);
    });
    if let Some(err) = failure {
        return Err(err);
    }
    output.sync_all().at(destination)?;
    let total: u64 = sources.iter().map(|source| source.count).sum();
    Ok(Concatenated {
        max_id,
        sha256: hex_digest(hasher),
        size: header.len() as u64 + total * target.size as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_source(dir: &Path, name: &str, descr: &str, bytes: &[u8]) -> TokenSource {
        let path = dir.join(name);
        let mut data = vec![0xAA; 16]; // a stand-in header
        data.extend_from_slice(bytes);
        std::fs::write(&path, data).unwrap();
        let element = IntType::parse(descr).unwrap();
        TokenSource {
            path,
            element,
            count: (bytes.len() / element.size) as u64,
            data_offset: 16,
        }
    }

    #[test]
    fn casts_keep_low_bits_and_report_the_max_before_the_cast() {
        let dir = tempfile::tempdir().unwrap();
        let values: [u32; 4] = [1, 70_001, 65_535, 3];
        let le: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let signed: [i64; 2] = [-1, 5];
        let be: Vec<u8> = signed.iter().flat_map(|v| v.to_be_bytes()).collect();
        let sources = [
            write_source(dir.path(), "a", "<u4", &le),
            write_source(dir.path(), "empty", "<u4", &[]),
            write_source(dir.path(), "b", ">i8", &be),
        ];
        let destination = dir.path().join("out.npy");
        for (workers, block) in [(1, 1), (2, 3), (3, 1 << 20)] {
            let mut seen = 0;
            let result = concatenate_tokens(
                &destination,
                b"HEAD",
                &sources,
                IntType::parse("<u2").unwrap(),
                workers,
                block,
                &mut |elements| {
                    seen += elements;
                    true
                },
            )
            .unwrap();
            let expected: Vec<u8> = [1u16, 70_001u32 as u16, 65_535, 3, u16::MAX, 5]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect();
            let written = std::fs::read(&destination).unwrap();
            assert_eq!(&written[..4], b"HEAD");
            assert_eq!(&written[4..], &expected[..]);
            assert_eq!(result.max_id, Some(70_001));
            assert_eq!(result.size, written.len() as u64);
            let sha: String = Sha256::digest(&written)
                .iter()
                .map(|byte| format!("{byte:02x}"))
                .collect();
            assert_eq!(result.sha256, sha);
            assert_eq!(seen, 6);
        }
    }

    #[test]
    fn the_dispatched_cast_equals_the_portable_one_for_every_type_pair() {
        const TYPES: [&str; 8] = ["|u1", "|i1", "<u2", ">i2", "<u4", ">i4", "<u8", "<i8"];
        // Bytes of every value class: high bits set, sign bits set, zeros; long enough for
        // the vector loops and an odd tail.
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let raw: Vec<u8> = (0..8 * 1031)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 32) as u8
            })
            .collect();
        for source in TYPES.map(|t| IntType::parse(t).unwrap()) {
            for target in TYPES.map(|t| IntType::parse(t).unwrap()) {
                if target.big_endian {
                    continue;
                }
                let count = raw.len() / 8;
                let raw = &raw[..count * source.size];
                let mut fast = vec![0u8; count * target.size];
                let mut portable = vec![0u8; count * target.size];
                let max = cast(raw, source, target, &mut fast);
                assert_eq!(max, cast_portable(raw, source, target, &mut portable));
                assert_eq!(fast, portable, "{source:?} -> {target:?}");
            }
        }
    }

    #[test]
    fn the_caller_can_stop_the_copy() {
        let dir = tempfile::tempdir().unwrap();
        let sources: Vec<TokenSource> = (0..4)
            .map(|i| write_source(dir.path(), &format!("s{i}"), "<u4", &[1; 4000]))
            .collect();
        let mut calls = 0;
        let err = concatenate_tokens(
            &dir.path().join("out.npy"),
            b"",
            &sources,
            IntType::parse("<u2").unwrap(),
            2,
            10,
            &mut |_| {
                calls += 1;
                calls < 3
            },
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "the copy was stopped");
        assert_eq!(calls, 3);
    }

    #[test]
    fn a_short_source_is_named_and_nothing_hangs() {
        let dir = tempfile::tempdir().unwrap();
        let mut sources: Vec<TokenSource> = (0..5)
            .map(|i| write_source(dir.path(), &format!("s{i}"), "<u4", &[7; 400]))
            .collect();
        sources[3].count += 1; // its header claims one element more than the file holds
        for workers in [1, 2, 4] {
            let err = concatenate_tokens(
                &dir.path().join("out.npy"),
                b"",
                &sources,
                IntType::parse("<i4").unwrap(),
                workers,
                7,
                &mut |_| true,
            )
            .unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "{}: shorter than its header says",
                    sources[3].path.display()
                )
            );
        }
    }
}
