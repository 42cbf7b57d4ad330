//! Which tokenizers the fast encoder reproduces exactly: data_io's family.
//!
//! The check reads the tokenizer as the `tokenizers` crate itself understood it (its own
//! serialisation, so defaults are filled in and legacy spellings resolved) and accepts only:
//! - no truncation, no padding;
//! - normaliser `NFC` or none;
//! - pre-tokenizer `Sequence[Split(data_io's regex, "Isolated", invert=false),
//!   ByteLevel(add_prefix_space=false, use_regex=false)]`;
//! - post-processor `ByteLevel` (it only moves offsets) or none;
//! - model `BPE` without dropout, subword prefix or word suffix, with distinct ids; an unknown
//!   token or byte fallback only if every byte has a symbol (then neither can apply);
//! - added tokens that are all special, encoded with `encode_special_tokens = true`, so that
//!   none is ever split out of text. (A non-special added token would still be split out, and
//!   `tokenizers` matches it in one pass with the special ones, which can hide it: that case
//!   stays with the reference.)
//!
//! Anything else is reported with the reason, and the caller uses the reference engine.

use std::collections::HashSet;

use serde_json::Value;
use tokenizers::models::ModelWrapper;
use tokenizers::Tokenizer;

use super::bpe::ByteLevelBpe;

/// data_io's split pattern (`hrm_assets.tokenizer.train.SPLIT_PATTERN`).
pub(crate) const SPLIT_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// What the fast encoder needs of a tokenizer of the family.
pub(crate) struct Family {
    pub(crate) nfc: bool,
    pub(crate) bpe: ByteLevelBpe,
}

const TOP_LEVEL: [&str; 9] = [
    "version",
    "truncation",
    "padding",
    "added_tokens",
    "normalizer",
    "pre_tokenizer",
    "post_processor",
    "decoder",
    "model",
];

/// The tokenizer's fast-encoder form, or why it has none.
pub(crate) fn recognise(tokenizer: &Tokenizer) -> Result<Family, String> {
    if !tokenizer.get_encode_special_tokens() {
        return Err("special tokens are matched in text (encode_special_tokens is off)".into());
    }
    let ModelWrapper::BPE(model) = tokenizer.get_model() else {
        return Err("the model is not BPE".into());
    };
    let serialized = tokenizer
        .to_string(false)
        .map_err(|err| format!("the tokenizer cannot be serialised: {err}"))?;
    let json: Value = serde_json::from_str(&serialized)
        .map_err(|err| format!("the tokenizer's JSON cannot be read back: {err}"))?;
    let Value::Object(top) = &json else {
        return Err("the tokenizer's JSON is not an object".into());
    };
    if let Some(key) = top.keys().find(|key| !TOP_LEVEL.contains(&key.as_str())) {
        return Err(format!("unknown tokenizer field {key:?}"));
    }
    for field in ["truncation", "padding"] {
        if !json[field].is_null() {
            return Err(format!("{field} is set"));
        }
    }
    check_added_tokens(&json["added_tokens"])?;
    let nfc = match &json["normalizer"] {
        Value::Null => false,
        normalizer if *normalizer == serde_json::json!({"type": "NFC"}) => true,
        other => return Err(format!("normalizer {other} is not NFC")),
    };
    check_pre_tokenizer(&json["pre_tokenizer"])?;
    match &json["post_processor"] {
        Value::Null => {}
        processor if processor["type"] == "ByteLevel" => {}
        other => return Err(format!("post-processor {other} may add or change ids")),
    }
    let facts = check_model(&json["model"])?;
    let vocab = model.get_vocab();
    let distinct: HashSet<u32> = vocab.values().copied().collect();
    if distinct.len() != vocab.len() {
        return Err("several vocabulary tokens share an id".into());
    }
    let bpe = ByteLevelBpe::new(&vocab, &facts.merges, facts.ignore_merges)?;
    if facts.may_need_unknown && !bpe.covers_all_bytes() {
        return Err("some byte has no symbol and an unknown token or byte fallback is set".into());
    }
    Ok(Family { nfc, bpe })
}

fn check_added_tokens(added: &Value) -> Result<(), String> {
    let tokens = added.as_array().ok_or("added_tokens is not a list")?;
    for token in tokens {
        if token["special"] != Value::Bool(true) && token["content"] != "" {
            return Err(format!(
                "added token {} is not special, so it would be split out of text",
                token["content"]
            ));
        }
    }
    Ok(())
}

fn check_pre_tokenizer(pre_tokenizer: &Value) -> Result<(), String> {
    let unsupported = || format!("pre-tokenizer {pre_tokenizer} is not data_io's");
    if pre_tokenizer["type"] != "Sequence" {
        return Err(unsupported());
    }
    let Some([split, byte_level]) = pre_tokenizer["pretokenizers"].as_array().map(Vec::as_slice)
    else {
        return Err(unsupported());
    };
    let split_ok = split["type"] == "Split"
        && split["pattern"] == serde_json::json!({ "Regex": SPLIT_PATTERN })
        && split["behavior"] == "Isolated"
        && split["invert"] == false;
    let byte_level_ok = byte_level["type"] == "ByteLevel"
        && byte_level["add_prefix_space"] == false
        && byte_level["use_regex"] == false;
    if split_ok && byte_level_ok {
        Ok(())
    } else {
        Err(unsupported())
    }
}

/// What the model check finds out about a BPE model.
struct ModelFacts {
    /// In rank order.
    merges: Vec<(String, String)>,
    ignore_merges: bool,
    /// An unknown token or byte fallback is configured.
    may_need_unknown: bool,
}

fn check_model(model: &Value) -> Result<ModelFacts, String> {
    let known = [
        "type",
        "dropout",
        "unk_token",
        "continuing_subword_prefix",
        "end_of_word_suffix",
        "fuse_unk",
        "byte_fallback",
        "ignore_merges",
        "vocab",
        "merges",
    ];
    let fields = model.as_object().ok_or("the model is not an object")?;
    if let Some(key) = fields.keys().find(|key| !known.contains(&key.as_str())) {
        return Err(format!("unknown BPE field {key:?}"));
    }
    match &model["dropout"] {
        Value::Null => {}
        dropout if dropout.as_f64() == Some(0.0) => {}
        other => return Err(format!("BPE dropout {other} is random")),
    }
    for affix in ["continuing_subword_prefix", "end_of_word_suffix"] {
        if !model[affix].is_null() {
            return Err(format!("BPE {affix} is set"));
        }
    }
    let may_need_unknown = !model["unk_token"].is_null() || model["byte_fallback"] == true;
    let ignore_merges = model["ignore_merges"] == true;
    let merges = model["merges"]
        .as_array()
        .ok_or("BPE merges are not a list")?
        .iter()
        .map(|merge| match merge.as_array().map(Vec::as_slice) {
            Some([Value::String(left), Value::String(right)]) => Ok((left.clone(), right.clone())),
            _ => Err(format!("BPE merge {merge} is not a pair of strings")),
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(ModelFacts {
        merges,
        ignore_merges,
        may_need_unknown,
    })
}
