//! A timing harness for the passes' per-word cost, one thread (docs/CONTAMINATION.md, "Cost"):
//! `HRM_NGRAM_TIMING_FILE=<cleaned file> cargo test --release ngram::timing -- --ignored
//! --nocapture`, the index of `$HRM_REAL_RAW`'s GSM8K and MATH test rows. Prints MB/s and ns a
//! word of the normalization, the duplicate key and the whole row scan; asserts nothing about
//! time (the machine is shared), only that the passes agree with each other. With
//! `HRM_NGRAM_TIMING_TOKENIZER=<tokenizer.json>` (data_io's family and framing tokens, as the
//! contamination bench trains it) it also times the fast encoder's framing of the rows alone
//! and followed by both passes ([`RowObserver::observe`]), interleaved, on a one-thread pool:
//! what the passes add to tokenization's CPU time, with the encoder's tables in the caches.

use std::path::PathBuf;

use super::duplicates::row_key;
use super::files::scan_row;
use super::index::{NgramIndex, Scratch, DEFAULT_MIN_WORDS, DEFAULT_N};
use super::normalize::for_each_word;
use super::observe::{FileObservation, RowObserver};
use crate::tokenize::encode::{Encoder, Engine};
use crate::tokenize::frame::FramingSpec;
use crate::tokenize::read::{Row, RowReader};

fn eval_index(raw: &std::path::Path) -> NgramIndex {
    let mut index = NgramIndex::new(DEFAULT_N, DEFAULT_MIN_WORDS).unwrap();
    let sets = [
        ("gsm8k/test.jsonl", ["question", "answer"]),
        ("hendrycks_math/test.jsonl", ["problem", "solution"]),
    ];
    for (set, (file, fields)) in sets.iter().enumerate() {
        let text = std::fs::read_to_string(raw.join(file)).unwrap();
        let records: Vec<serde_json::Value> = text
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        for field in fields {
            for (item, record) in records.iter().enumerate() {
                index.add(set as u32, item as u32, record[field].as_str().unwrap());
            }
        }
    }
    index
}

/// CPU seconds of this thread (the machine is shared: wall time counts others' work).
fn thread_seconds() -> f64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9
}

fn best_of<T>(repeats: usize, mut run: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::INFINITY;
    let mut out = None;
    for _ in 0..repeats {
        let started = thread_seconds();
        let value = run();
        best = best.min(thread_seconds() - started);
        out = Some(value);
    }
    (best, out.unwrap())
}

#[test]
#[ignore = "a timing harness: run by hand with HRM_NGRAM_TIMING_FILE"]
fn per_word_cost_on_a_cleaned_file() {
    let file = PathBuf::from(std::env::var_os("HRM_NGRAM_TIMING_FILE").expect("a cleaned file"));
    let raw = PathBuf::from(std::env::var_os("HRM_REAL_RAW").expect("HRM_REAL_RAW"));
    let mut reader = RowReader::open(&file, 1 << 20).unwrap();
    let mut rows: Vec<Row> = Vec::new();
    while let Some(batch) = reader.next_batch().unwrap() {
        rows.extend(batch);
    }
    let index = eval_index(&raw);
    let bytes: usize = rows
        .iter()
        .map(|row| row.instruction.len() + row.response.len())
        .sum();
    let repeats = 5;
    let (normalize, words) = best_of(repeats, || {
        let mut words = 0usize;
        let mut mixed = 0u64;
        for row in &rows {
            for text in [&row.instruction, &row.response] {
                for_each_word(text, |word| {
                    words += 1;
                    mixed ^= word.hash.wrapping_add(word.start as u64);
                });
            }
        }
        std::hint::black_box(mixed);
        words
    });
    let (keys, _) = best_of(repeats, || {
        rows.iter()
            .map(|row| row_key(&row.instruction, &row.response))
            .fold(0u64, |a, b| a ^ b)
    });
    let (scan, scanned) = best_of(repeats, || {
        let mut scratch = Scratch::default();
        rows.iter()
            .map(|row| scan_row(&index, true, row, &mut scratch, 300))
            .collect::<Vec<_>>()
    });
    let hit = scanned.iter().filter(|(hit, _)| hit.is_some()).count();
    for (row, (_, key)) in rows.iter().zip(&scanned) {
        assert_eq!(*key, row_key(&row.instruction, &row.response));
    }
    let report = |name: &str, seconds: f64| {
        eprintln!(
            "{name:>10}: {:7.1} MB/s {:6.2} ns/word",
            bytes as f64 / seconds / 1e6,
            seconds * 1e9 / words as f64
        );
    };
    eprintln!(
        "{} rows, {:.1} MB, {words} words, {hit} rows hit",
        rows.len(),
        bytes as f64 / 1e6
    );
    report("normalize", normalize);
    report("row_key", keys);
    report("scan_row", scan);
    if let Some(tokenizer) = std::env::var_os("HRM_NGRAM_TIMING_TOKENIZER") {
        time_the_encoder(&PathBuf::from(tokenizer), &index, &rows, words, report);
    }
}

/// The fast encoder's framing of `rows` alone and followed by both passes
/// ([`RowObserver::observe`]), interleaved, each the best of five runs on a one-thread pool.
fn time_the_encoder(
    tokenizer: &std::path::Path,
    index: &NgramIndex,
    rows: &[Row],
    words: usize,
    report: impl Fn(&str, f64),
) {
    let conditions = [
        ("direct", "<|object_ref_start|>"),
        ("cot", "<|object_ref_end|>"),
        ("noisy", "<|quad_start|>"),
        ("synth", "<|quad_end|>"),
    ];
    let spec = FramingSpec {
        boq: "<|im_start|>".into(),
        eoq: "<|im_end|>".into(),
        eoa: "<|box_end|>".into(),
        conditions: conditions
            .iter()
            .map(|(tag, token)| (tag.to_string(), token.to_string()))
            .collect(),
    };
    let encoder = Encoder::from_file(tokenizer, &spec).unwrap();
    assert_eq!(encoder.engine(), Engine::Fast);
    let observer = RowObserver {
        index: Some(index),
        label: serde_json::Value::Null,
        max_span_chars: 300,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let path = std::path::Path::new("timing");
    let batches: Vec<&[Row]> = rows.chunks(4096).collect();
    let (mut alone, mut observed) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..5 {
        let (seconds, _) = pool.install(|| {
            best_of(1, || {
                for batch in &batches {
                    std::hint::black_box(encoder.frame_batch(path, batch, 0).unwrap());
                }
            })
        });
        alone = alone.min(seconds);
        let (seconds, seen) = pool.install(|| {
            best_of(1, || {
                let mut seen = FileObservation::default();
                for batch in &batches {
                    std::hint::black_box(encoder.frame_batch(path, batch, 0).unwrap());
                    observer.observe(batch, &mut seen);
                }
                seen
            })
        });
        observed = observed.min(seconds);
        assert_eq!(seen.rows, rows.len() as u64);
    }
    report("encode", alone);
    report("+ passes", observed);
    eprintln!(
        "the passes beside the encoder: {:.2} ns/word, {:.0}% of its time",
        (observed - alone) * 1e9 / words as f64,
        100.0 * (observed - alone) / alone,
    );
}
