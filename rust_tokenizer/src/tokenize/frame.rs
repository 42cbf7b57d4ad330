//! The framing of a row (docs/CONTRACTS.md section 2):
//! `[BOQ, tag ids..., instruction ids..., EOQ]` then `[response ids..., EOA]`.

use std::collections::BTreeMap;

use crate::error::{Error, Result};

/// Framing tokens as strings of the tokenizer's vocabulary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FramingSpec {
    pub boq: String,
    pub eoq: String,
    pub eoa: String,
    /// Tag (as written in a row's `condition`) -> token string.
    pub conditions: BTreeMap<String, String>,
}

/// Framing tokens resolved to ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Framing {
    pub boq: u32,
    pub eoq: u32,
    pub eoa: u32,
    pub tags: BTreeMap<String, u32>,
}

/// One framed row: its tokens and where the instruction part ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FramedRow {
    pub tokens: Vec<u32>,
    /// Length of `[BOQ, tags..., instruction..., EOQ]`; the response part is the rest.
    pub inst_len: usize,
}

impl FramedRow {
    pub fn resp_len(&self) -> usize {
        self.tokens.len() - self.inst_len
    }
}

impl Framing {
    /// Resolve every token of `spec` with `token_to_id`; a token missing from the vocabulary is
    /// an error naming it and its role.
    pub fn resolve(spec: &FramingSpec, token_to_id: impl Fn(&str) -> Option<u32>) -> Result<Self> {
        let lookup = |role: &str, token: &str| {
            token_to_id(token).ok_or_else(|| {
                Error::Config(format!(
                    "{role} token {token:?} is not in the tokenizer's vocabulary"
                ))
            })
        };
        let mut tags = BTreeMap::new();
        for (tag, token) in &spec.conditions {
            if tag.is_empty() || tag.contains(',') {
                return Err(Error::Config(format!(
                    "bad condition tag {tag:?}: tags are non-empty and contain no comma"
                )));
            }
            tags.insert(tag.clone(), lookup(&format!("condition '{tag}'"), token)?);
        }
        Ok(Framing {
            boq: lookup("BOQ", &spec.boq)?,
            eoq: lookup("EOQ", &spec.eoq)?,
            eoa: lookup("EOA", &spec.eoa)?,
            tags,
        })
    }

    /// The ids of a condition's tags in order; the empty condition has none. An unknown tag
    /// (including an empty one, as in `"cot,"`) is an error message naming the known tags.
    pub fn tag_ids(&self, condition: &str) -> Result<Vec<u32>, String> {
        if condition.is_empty() {
            return Ok(Vec::new());
        }
        condition
            .split(',')
            .map(|tag| {
                self.tags.get(tag).copied().ok_or_else(|| {
                    format!(
                        "unknown tag {tag:?} in condition {condition:?}; known tags: {}",
                        self.known_tags()
                    )
                })
            })
            .collect()
    }

    pub fn known_tags(&self) -> String {
        self.tags.keys().cloned().collect::<Vec<_>>().join(", ")
    }

    pub fn frame(&self, tag_ids: &[u32], instruction: &[u32], response: &[u32]) -> FramedRow {
        let mut tokens = Vec::with_capacity(3 + tag_ids.len() + instruction.len() + response.len());
        let inst_len = self.frame_into(&mut tokens, tag_ids, instruction, response);
        FramedRow { tokens, inst_len }
    }

    /// Append the framed row to `tokens`; returns the length of its instruction part.
    pub fn frame_into(
        &self,
        tokens: &mut Vec<u32>,
        tag_ids: &[u32],
        instruction: &[u32],
        response: &[u32],
    ) -> usize {
        let start = tokens.len();
        tokens.push(self.boq);
        tokens.extend_from_slice(tag_ids);
        tokens.extend_from_slice(instruction);
        tokens.push(self.eoq);
        let inst_len = tokens.len() - start;
        tokens.extend_from_slice(response);
        tokens.push(self.eoa);
        inst_len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> FramingSpec {
        FramingSpec {
            boq: "<b>".into(),
            eoq: "<e>".into(),
            eoa: "<a>".into(),
            conditions: [("cot", "<c>"), ("noisy", "<n>")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn vocab(token: &str) -> Option<u32> {
        ["<b>", "<e>", "<a>", "<c>", "<n>"]
            .iter()
            .position(|t| *t == token)
            .map(|i| 100 + i as u32)
    }

    #[test]
    fn frames_instruction_then_response() {
        let framing = Framing::resolve(&spec(), vocab).unwrap();
        let tags = framing.tag_ids("noisy,cot").unwrap();
        assert_eq!(tags, [104, 103]);
        let row = framing.frame(&tags, &[1, 2], &[3]);
        assert_eq!(row.tokens, [100, 104, 103, 1, 2, 101, 3, 102]);
        assert_eq!(row.inst_len, 6);
        assert_eq!(row.resp_len(), 2);
    }

    #[test]
    fn empty_condition_and_empty_texts() {
        let framing = Framing::resolve(&spec(), vocab).unwrap();
        let tags = framing.tag_ids("").unwrap();
        assert!(tags.is_empty());
        let row = framing.frame(&tags, &[], &[]);
        assert_eq!(row.tokens, [100, 101, 102]);
        assert_eq!((row.inst_len, row.resp_len()), (2, 1));
    }

    #[test]
    fn unknown_tag_names_known_tags() {
        let framing = Framing::resolve(&spec(), vocab).unwrap();
        let err = framing.tag_ids("cot,synth").unwrap_err();
        assert_eq!(
            err,
            "unknown tag \"synth\" in condition \"cot,synth\"; known tags: cot, noisy"
        );
        assert!(framing.tag_ids("cot,").is_err());
    }

    #[test]
    fn missing_token_names_role_and_token() {
        let mut bad = spec();
        bad.eoa = "<missing>".into();
        let err = Framing::resolve(&bad, vocab).unwrap_err().to_string();
        assert_eq!(
            err,
            "EOA token \"<missing>\" is not in the tokenizer's vocabulary"
        );
        let mut bad = spec();
        bad.conditions.insert("synth".into(), "<s>".into());
        let err = Framing::resolve(&bad, vocab).unwrap_err().to_string();
        assert!(err.contains("condition 'synth' token \"<s>\""), "{err}");
    }
}
