//! The fast engine against the `tokenizers` crate as oracle: tokenizers trained in data_io's
//! configuration on real text (the real raw rows in `$HRM_REAL_RAW`, which `make test-rust` sets:
//! tests/support/real_raw.py), hand-picked corner cases and random text.

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::OnceLock;

use proptest::prelude::*;
use serde_json::{json, Value};
use tokenizers::models::bpe::{BpeTrainerBuilder, BPE};
use tokenizers::models::TrainerWrapper;
use tokenizers::normalizers::unicode::NFC;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{AddedToken, SplitDelimiterBehavior, Tokenizer};

use super::family::SPLIT_PATTERN;
use super::pretokenize::tests::tricky_char;
use super::*;

/// data_io's special tokens (`hrm_assets.tokenizer.train.SPECIAL_TOKENS`).
const SPECIAL_TOKENS: [&str; 31] = [
    "<|PAD|>",
    "<|direct|>",
    "<|cot|>",
    "<|noisy|>",
    "<|synth|>",
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
];

/// Texts at the corners of the split regex, NFC and byte-level BPE.
pub(crate) const TRICKY_TEXTS: [&str; 16] = [
    "数学问题：小明有3个苹果，又买了5个。他现在有几个？",
    "日本語のテキストと한국어 텍스트。",
    "Family: 👨\u{200d}👩\u{200d}👧\u{200d}👦, thumbs: 👍🏽, flags: 🇫🇷🇯🇵, face: 🙂",
    "Cafe\u{301} vs Café, A\u{30a} vs Å, \u{1e9b}\u{323} and ﬁ ligature, \u{212b}\u{2126}",
    "inline specials <|im_start|> and <|box_end|> and <think>x</think> stay text<|PAD|>",
    "spaces:      many\t\ttabs\n\n\nnewlines \r\n and trailing   ",
    "digits 12345678901234567890 and 3.14159e-10, 1,000,000 ٣٤٥ ½ Ⅻ",
    "Let's, we'll, they're, I'd, you've, it's: SHOUTING'S 'LL 'Ve 'rE ’s ’S 'ſ 'x",
    "$\\frac{a}{b} + \\sqrt{x^2}$ and \\boxed{42}",
    "unicode spaces:\u{a0}a\u{2003}b\u{3000}c \u{a0} \u{2003}\u{2003}d\u{85}e\u{2028}f",
    "\r\n\r\n  \r\n\t\r \n",
    "    ",
    "",
    "a",
    " ",
    "\u{0}\u{1}\u{7f}\u{ad}\u{e000}\u{fffd}\u{10ffff}",
];

/// The folder of the real raw rows: `$HRM_REAL_RAW`, which `make test-rust` sets to the checked
/// mirror or cache (`python tests/support/real_raw.py` prints it).
fn real_raw() -> PathBuf {
    std::env::var_os("HRM_REAL_RAW")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!("HRM_REAL_RAW is not set: run `make test-rust` (tests/support/real_raw.py)")
        })
}

fn jsonl_texts(relative: &str, fields: &[&str], limit: usize) -> Vec<String> {
    let path = real_raw().join(relative);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("{}: {err} (HRM_REAL_RAW)", path.display()));
    text.lines()
        .take(limit)
        .flat_map(|line| {
            let row: Value = serde_json::from_str(line).unwrap();
            fields
                .iter()
                .map(|field| row[*field].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Every string in a JSON document (SciBench and TheoremQA are JSON arrays of objects).
fn json_strings(relative: &str) -> Vec<String> {
    fn collect(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::String(text) => out.push(text.clone()),
            Value::Array(items) => items.iter().for_each(|item| collect(item, out)),
            Value::Object(fields) => fields.values().for_each(|item| collect(item, out)),
            _ => {}
        }
    }
    let path = real_raw().join(relative);
    let value: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut out = Vec::new();
    collect(&value, &mut out);
    out
}

fn real_texts() -> &'static [String] {
    static TEXTS: OnceLock<Vec<String>> = OnceLock::new();
    TEXTS.get_or_init(|| {
        let mut texts = jsonl_texts("gsm8k/test.jsonl", &["question", "answer"], 300);
        texts.extend(jsonl_texts(
            "hendrycks_math/test.jsonl",
            &["problem", "solution"],
            300,
        ));
        texts.extend(
            json_strings("theoremqa/theoremqa_test.json")
                .into_iter()
                .take(400),
        );
        let scibench = real_raw().join("scibench/dataset/original");
        let mut files: Vec<_> = std::fs::read_dir(&scibench)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        files.sort();
        for file in files.iter().take(4) {
            let relative = file.strip_prefix(real_raw()).unwrap();
            texts.extend(
                json_strings(relative.to_str().unwrap())
                    .into_iter()
                    .take(150),
            );
        }
        texts
    })
}

/// A byte-level BPE trained in data_io's configuration (`hrm_assets.tokenizer.train`).
fn train(vocab_size: usize) -> Tokenizer {
    let mut tokenizer = Tokenizer::new(BPE::default());
    tokenizer.with_normalizer(Some(NFC)).unwrap();
    tokenizer.with_pre_tokenizer(Some(Sequence::new(vec![
        Split::new(
            SplitPattern::Regex(SPLIT_PATTERN.into()),
            SplitDelimiterBehavior::Isolated,
            false,
        )
        .unwrap()
        .into(),
        ByteLevel::new(false, false, false).into(),
    ])));
    tokenizer.with_post_processor(Some(ByteLevel::new(true, false, true)));
    let mut trainer: TrainerWrapper = BpeTrainerBuilder::new()
        .vocab_size(vocab_size)
        .min_frequency(2)
        .show_progress(false)
        .special_tokens(
            SPECIAL_TOKENS
                .iter()
                .map(|token| AddedToken::from(*token, true))
                .collect(),
        )
        .initial_alphabet(ByteLevel::alphabet().into_iter().collect())
        .build()
        .into();
    let mut documents = jsonl_texts("gsm8k/train.jsonl", &["question", "answer"], 1500);
    documents.extend(jsonl_texts(
        "hendrycks_math/test.jsonl",
        &["problem", "solution"],
        3000,
    ));
    for _ in 0..3 {
        documents.extend(TRICKY_TEXTS.iter().map(|text| text.to_string()));
    }
    tokenizer.train(&mut trainer, documents.iter()).unwrap();
    tokenizer.set_encode_special_tokens(true);
    tokenizer
}

fn trained(vocab_size: usize) -> &'static Tokenizer {
    static SMALL: OnceLock<Tokenizer> = OnceLock::new();
    static MEDIUM: OnceLock<Tokenizer> = OnceLock::new();
    match vocab_size {
        300 => SMALL.get_or_init(|| train(300)),
        2048 => MEDIUM.get_or_init(|| train(2048)),
        _ => unreachable!("trained tokenizers are 300 or 2048"),
    }
}

/// `tokenizer` with its JSON changed by `edit`.
fn edited(tokenizer: &Tokenizer, edit: impl FnOnce(&mut Value)) -> Tokenizer {
    let mut json: Value = serde_json::from_str(&tokenizer.to_string(false).unwrap()).unwrap();
    edit(&mut json);
    let mut edited = Tokenizer::from_str(&json.to_string()).unwrap();
    edited.set_encode_special_tokens(true);
    edited
}

fn reference_ids(tokenizer: &Tokenizer, text: &str) -> Vec<u32> {
    tokenizer
        .encode_fast(text, false)
        .unwrap()
        .get_ids()
        .to_vec()
}

fn assert_same_ids(tokenizer: &Tokenizer, fast: &FastEncoder, texts: &[impl AsRef<str>]) {
    let mut cache = fast.cache();
    for text in texts {
        let text = text.as_ref();
        let mut ids = Vec::new();
        fast.encode_into(text, &mut cache, &mut ids);
        assert_eq!(ids, reference_ids(tokenizer, text), "text {text:?}");
    }
}

#[test]
fn data_io_tokenizers_are_recognised() {
    for vocab_size in [300, 2048] {
        let tokenizer = trained(vocab_size);
        assert_eq!(tokenizer.get_vocab_size(true), vocab_size);
        FastEncoder::new(tokenizer).unwrap();
    }
}

#[test]
fn real_text_gives_the_reference_ids() {
    let texts = real_texts();
    assert!(texts.len() > 1500, "{} texts", texts.len());
    for vocab_size in [300, 2048] {
        let tokenizer = trained(vocab_size);
        let fast = FastEncoder::new(tokenizer).unwrap();
        assert_same_ids(tokenizer, &fast, texts);
        // Twice: the second pass reads every piece from the cache.
        assert_same_ids(tokenizer, &fast, texts);
    }
}

#[test]
fn tricky_text_gives_the_reference_ids() {
    let mut texts: Vec<String> = TRICKY_TEXTS.iter().map(|text| text.to_string()).collect();
    texts.extend(
        SPECIAL_TOKENS
            .iter()
            .map(|token| format!("x{token} {token}")),
    );
    texts.push(SPECIAL_TOKENS.concat());
    texts.push(" ".repeat(1000) + "x" + &"\t".repeat(300) + &"\r\n".repeat(200));
    texts.push("9".repeat(5000));
    texts.push("ab".repeat(3000));
    for vocab_size in [300, 2048] {
        let tokenizer = trained(vocab_size);
        let fast = FastEncoder::new(tokenizer).unwrap();
        assert_same_ids(tokenizer, &fast, &texts);
    }
}

#[test]
fn ignore_merges_gives_the_reference_ids() {
    // A token no merge produces: only `ignore_merges` can emit it, for the piece " zzzz".
    let with_token = |ignore_merges: bool| {
        edited(trained(2048), |json| {
            json["model"]["ignore_merges"] = json!(ignore_merges);
            json["model"]["vocab"]["Ġzzzz"] = json!(2048);
        })
    };
    let tokenizer = with_token(true);
    let fast = FastEncoder::new(&tokenizer).unwrap();
    assert_eq!(
        fast.encode("a zzzz"),
        [*tokenizer.get_vocab(false).get("a").unwrap(), 2048]
    );
    assert_ne!(reference_ids(&with_token(false), " zzzz"), [2048]);
    assert_same_ids(&tokenizer, &fast, &["a zzzz", "zzzz zzzz zzzzz"]);
    assert_same_ids(&tokenizer, &fast, &TRICKY_TEXTS);
    assert_same_ids(&tokenizer, &fast, &real_texts()[..500]);
}

#[test]
fn no_normalizer_gives_the_reference_ids() {
    let tokenizer = edited(trained(300), |json| json["normalizer"] = Value::Null);
    let fast = FastEncoder::new(&tokenizer).unwrap();
    assert!(!fast.nfc);
    assert_same_ids(&tokenizer, &fast, &TRICKY_TEXTS);
}

#[test]
fn missing_byte_symbols_are_dropped_like_the_reference() {
    // Without "a"'s symbol (and merges through it), "a" bytes vanish from the output.
    let tokenizer = edited(trained(300), |json| {
        let vocab = json["model"]["vocab"].as_object_mut().unwrap();
        let kept: serde_json::Map<String, Value> = vocab
            .iter()
            .filter(|(token, _)| !token.contains('a'))
            .map(|(token, id)| (token.clone(), id.clone()))
            .collect();
        *vocab = kept;
        let merges = json["model"]["merges"].as_array_mut().unwrap();
        merges.retain(|merge| !merge.to_string().contains('a'));
    });
    let fast = FastEncoder::new(&tokenizer).unwrap();
    assert_same_ids(&tokenizer, &fast, &["banana bread", "a", "aaa bbb"]);
    assert_same_ids(&tokenizer, &fast, &TRICKY_TEXTS);
}

#[test]
fn other_tokenizers_are_refused_with_a_reason() {
    let base = trained(300);
    let cases: Vec<(&str, Tokenizer)> = vec![
        (
            "not special",
            edited(base, |json| {
                json["added_tokens"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"id": 300, "content": "hello", "single_word": false,
                        "lstrip": false, "rstrip": false, "normalized": true, "special": false}));
            }),
        ),
        (
            "normalizer",
            edited(base, |json| json["normalizer"] = json!({"type": "NFKC"})),
        ),
        (
            "pre-tokenizer",
            edited(base, |json| {
                json["pre_tokenizer"]["pretokenizers"][1]["add_prefix_space"] = json!(true)
            }),
        ),
        (
            "pre-tokenizer",
            edited(base, |json| {
                json["pre_tokenizer"]["pretokenizers"][0]["pattern"] = json!({"Regex": r"\s+"})
            }),
        ),
        (
            "dropout",
            edited(base, |json| json["model"]["dropout"] = json!(0.1)),
        ),
        (
            "end_of_word_suffix",
            edited(base, |json| {
                json["model"]["end_of_word_suffix"] = json!("</w>")
            }),
        ),
        (
            "truncation",
            edited(base, |json| {
                json["truncation"] = json!({"direction": "Right", "max_length": 8,
                    "strategy": "LongestFirst", "stride": 0})
            }),
        ),
        (
            "post-processor",
            edited(base, |json| {
                json["post_processor"] = json!({"type": "BertProcessing",
                    "sep": ["<|im_end|>", 7], "cls": ["<|im_start|>", 6]})
            }),
        ),
    ];
    for (reason, tokenizer) in cases {
        let err = FastEncoder::new(&tokenizer).err().unwrap();
        assert!(err.contains(reason), "expected {reason:?} in {err:?}");
    }
    let mut matching = base.clone();
    matching.set_encode_special_tokens(false);
    let err = FastEncoder::new(&matching).err().unwrap();
    assert!(err.contains("encode_special_tokens"), "{err}");
}

fn random_text() -> impl Strategy<Value = String> {
    let words = proptest::sample::select(
        SPECIAL_TOKENS
            .iter()
            .map(|token| token.to_string())
            .chain(
                [
                    " the",
                    "The",
                    " number",
                    "'s",
                    "'LL",
                    "\r\n",
                    "  ",
                    "123",
                    "é",
                    "e\u{301}",
                    "\u{fb01}",
                    "👨\u{200d}👩",
                ]
                .map(String::from),
            )
            .collect::<Vec<_>>(),
    );
    let part = prop_oneof![
        3 => tricky_char().prop_map(String::from),
        1 => words,
        1 => any::<String>(),
    ];
    proptest::collection::vec(part, 0..30).prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn random_text_gives_the_reference_ids(text in random_text()) {
        for vocab_size in [300, 2048] {
            let tokenizer = trained(vocab_size);
            let fast = FastEncoder::new(tokenizer).unwrap();
            prop_assert_eq!(fast.encode(&text), reference_ids(tokenizer, &text));
        }
    }
}
