//! Encoding rows with a `tokenizers` tokenizer, in parallel batches with bounded memory.
//!
//! A file is read batch by batch; each batch is encoded on all threads of the caller's rayon pool
//! while the next batch is being read, then appended to the output in row order. Only one batch
//! of rows and one of framed tokens are in memory at a time.
//!
//! Two engines give the same ids: the `tokenizers` crate itself (the reference), and the fast
//! engine ([`fast`]) for tokenizers of data_io's family, chosen automatically when it applies.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::str::FromStr;

use rayon::prelude::*;
use tokenizers::Tokenizer;

mod fast;

use crate::error::{Error, IoContext, Result};
use crate::ngram::observe::{FileObservation, RowObserver};
use crate::tokenize::frame::{FramedRow, Framing, FramingSpec};
use crate::tokenize::read::{Row, RowReader, SourceDigest};
use fast::FastEncoder;

/// Rows per batch: large enough to keep every thread busy, small enough to bound memory.
pub const DEFAULT_BATCH_ROWS: usize = 4096;

/// Where framed rows go: in memory (tests) or `.npy` files (`tokenize::write::NpyFolderWriter`).
pub trait TokenSink {
    fn append(&mut self, arrays: &TokenArrays) -> Result<()>;
}

/// The five arrays of a tokenized folder (or a slice of them).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TokenArrays {
    pub tokens: Vec<u32>,
    pub inst_start: Vec<u64>,
    pub inst_len: Vec<u64>,
    pub resp_start: Vec<u64>,
    pub resp_len: Vec<u64>,
}

impl TokenArrays {
    /// Lay out `rows` back to back; offsets count from `base`, the number of tokens already
    /// written before them.
    pub fn from_rows(rows: &[FramedRow], base: u64) -> Self {
        let mut arrays = TokenArrays {
            tokens: Vec::with_capacity(rows.iter().map(|row| row.tokens.len()).sum()),
            inst_start: Vec::with_capacity(rows.len()),
            inst_len: Vec::with_capacity(rows.len()),
            resp_start: Vec::with_capacity(rows.len()),
            resp_len: Vec::with_capacity(rows.len()),
        };
        for row in rows {
            let start = base + arrays.tokens.len() as u64;
            arrays.inst_start.push(start);
            arrays.inst_len.push(row.inst_len as u64);
            arrays.resp_start.push(start + row.inst_len as u64);
            arrays.resp_len.push(row.resp_len() as u64);
            arrays.tokens.extend_from_slice(&row.tokens);
        }
        arrays
    }

    /// Append one row, framed by `framing`; offsets count from this array's start.
    pub fn push_row(
        &mut self,
        framing: &Framing,
        tag_ids: &[u32],
        instruction: &[u32],
        response: &[u32],
    ) {
        let start = self.tokens.len() as u64;
        let inst_len = framing.frame_into(&mut self.tokens, tag_ids, instruction, response) as u64;
        self.inst_start.push(start);
        self.inst_len.push(inst_len);
        self.resp_start.push(start + inst_len);
        self.resp_len
            .push(self.tokens.len() as u64 - start - inst_len);
    }

    /// `parts` back to back, their offsets moved to count from `base`.
    pub fn concat(parts: Vec<TokenArrays>, base: u64) -> Self {
        let mut all = TokenArrays {
            tokens: Vec::with_capacity(parts.iter().map(|part| part.tokens.len()).sum()),
            ..TokenArrays::default()
        };
        for part in parts {
            let shift = base + all.tokens.len() as u64;
            all.tokens.extend_from_slice(&part.tokens);
            all.inst_start
                .extend(part.inst_start.iter().map(|start| start + shift));
            all.inst_len.extend_from_slice(&part.inst_len);
            all.resp_start
                .extend(part.resp_start.iter().map(|start| start + shift));
            all.resp_len.extend_from_slice(&part.resp_len);
        }
        all
    }

    pub fn rows(&self) -> usize {
        self.inst_start.len()
    }
}

impl TokenSink for TokenArrays {
    fn append(&mut self, arrays: &TokenArrays) -> Result<()> {
        self.tokens.extend_from_slice(&arrays.tokens);
        self.inst_start.extend_from_slice(&arrays.inst_start);
        self.inst_len.extend_from_slice(&arrays.inst_len);
        self.resp_start.extend_from_slice(&arrays.resp_start);
        self.resp_len.extend_from_slice(&arrays.resp_len);
        Ok(())
    }
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct EncodeStats {
    pub rows: u64,
    pub tokens: u64,
    /// UTF-8 bytes of the rows' condition, instruction and response.
    pub text_bytes: u64,
    /// Parquet nulls read as empty strings, as data_io reads them.
    pub nulls: u64,
    /// Size and SHA-256 of the bytes the rows were parsed from.
    pub source: SourceDigest,
}

/// The implementation that turns text into ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// [`fast`]: exact for data_io's tokenizer family, many times faster.
    Fast,
    /// The `tokenizers` crate: any tokenizer.
    Reference,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Fast => "fast",
            Engine::Reference => "reference",
        }
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which engine to use: `Auto` takes the fast one when the tokenizer is of its family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EngineChoice {
    #[default]
    Auto,
    Fast,
    Reference,
}

impl FromStr for EngineChoice {
    type Err = Error;

    fn from_str(name: &str) -> Result<Self> {
        match name {
            "auto" => Ok(EngineChoice::Auto),
            "fast" => Ok(EngineChoice::Fast),
            "reference" => Ok(EngineChoice::Reference),
            other => Err(Error::Config(format!(
                "unknown engine {other:?} (expected \"auto\", \"fast\" or \"reference\")"
            ))),
        }
    }
}

/// A tokenizer configured as data_io uses it, plus the resolved framing tokens.
pub struct Encoder {
    tokenizer: Tokenizer,
    framing: Framing,
    /// Present when the fast engine is in use.
    fast: Option<FastEncoder>,
    /// Why the reference engine is in use (`None` with the fast one).
    fallback_reason: Option<String>,
}

impl Encoder {
    /// Load `tokenizer.json` and resolve the framing tokens. Special-token strings inside texts
    /// are encoded as plain text (`encode_special_tokens = true`).
    pub fn from_file(tokenizer_json: &Path, spec: &FramingSpec) -> Result<Self> {
        Self::from_file_with_engine(tokenizer_json, spec, EngineChoice::Auto)
    }

    /// `from_file` with an explicit engine; `EngineChoice::Fast` for a tokenizer outside the fast
    /// engine's family is a configuration error giving the reason.
    pub fn from_file_with_engine(
        tokenizer_json: &Path,
        spec: &FramingSpec,
        engine: EngineChoice,
    ) -> Result<Self> {
        // `Tokenizer::from_file` folds IO failures into a generic error; check first so that a
        // wrong path surfaces as an IO error naming it.
        std::fs::metadata(tokenizer_json).at(tokenizer_json)?;
        let tokenizer = Tokenizer::from_file(tokenizer_json).map_err(|err| {
            Error::Config(format!(
                "{}: cannot load the tokenizer: {err}",
                tokenizer_json.display()
            ))
        })?;
        Self::with_engine(tokenizer, spec, engine)
    }

    pub fn new(tokenizer: Tokenizer, spec: &FramingSpec) -> Result<Self> {
        Self::with_engine(tokenizer, spec, EngineChoice::Auto)
    }

    pub fn with_engine(
        mut tokenizer: Tokenizer,
        spec: &FramingSpec,
        engine: EngineChoice,
    ) -> Result<Self> {
        tokenizer.set_encode_special_tokens(true);
        let framing = Framing::resolve(spec, |token| tokenizer.token_to_id(token))?;
        let (fast, fallback_reason) = match engine {
            EngineChoice::Reference => (None, Some("the reference engine was requested".into())),
            EngineChoice::Auto | EngineChoice::Fast => match FastEncoder::new(&tokenizer) {
                Ok(fast) => (Some(fast), None),
                Err(reason) if engine == EngineChoice::Auto => (None, Some(reason)),
                Err(reason) => {
                    return Err(Error::Config(format!(
                        "the fast engine cannot encode with this tokenizer: {reason}"
                    )))
                }
            },
        };
        Ok(Encoder {
            tokenizer,
            framing,
            fast,
            fallback_reason,
        })
    }

    /// The engine in use.
    pub fn engine(&self) -> Engine {
        if self.fast.is_some() {
            Engine::Fast
        } else {
            Engine::Reference
        }
    }

    /// Why the reference engine is in use; `None` when the fast engine is.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback_reason.as_deref()
    }

    /// Vocabulary size including added tokens (data_io's `vocab_size`).
    pub fn vocab_size(&self) -> usize {
        self.tokenizer.get_vocab_size(true)
    }

    pub fn framing(&self) -> &Framing {
        &self.framing
    }

    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.tokenizer.token_to_id(token)
    }

    /// The ids of one text, without automatic special tokens.
    pub fn encode_text(&self, text: &str) -> Result<Vec<u32>, String> {
        match &self.fast {
            Some(fast) => Ok(fast.encode(text)),
            None => self.reference_ids(text),
        }
    }

    fn reference_ids(&self, text: &str) -> Result<Vec<u32>, String> {
        self.tokenizer
            .encode_fast(text, false)
            .map(|encoding| encoding.get_ids().to_vec())
            .map_err(|err| format!("the tokenizer failed: {err}"))
    }

    /// Encode many texts in parallel on the current rayon pool, keeping their order.
    pub fn encode_texts(&self, texts: &[String]) -> Result<Vec<Vec<u32>>> {
        if let Some(fast) = &self.fast {
            return Ok(texts
                .par_iter()
                .map_init(
                    || fast.cache(),
                    |cache, text| {
                        let mut ids = Vec::new();
                        fast.encode_into(text, cache, &mut ids);
                        ids
                    },
                )
                .collect());
        }
        texts
            .par_iter()
            .enumerate()
            .map(|(index, text)| {
                self.reference_ids(text)
                    .map_err(|problem| Error::Config(format!("text {index}: {problem}")))
            })
            .collect()
    }

    /// Frame a batch of rows of `path` into arrays whose offsets count from `base`, encoding on
    /// the current rayon pool. Errors name the first bad row in file order.
    pub fn frame_batch(&self, path: &Path, rows: &[Row], base: u64) -> Result<TokenArrays> {
        let (lists, which) = self.batch_tags(path, rows)?;
        let tags: Vec<&[u32]> = which.iter().map(|&index| lists[index].as_slice()).collect();
        let Some(fast) = &self.fast else {
            let framed: Vec<Result<FramedRow>> = rows
                .par_iter()
                .zip(tags.par_iter())
                .map(|(row, tags)| {
                    let encode = |field: &'static str, text: &str| {
                        self.reference_ids(text)
                            .map_err(|problem| Error::row(path, row.number, Some(field), problem))
                    };
                    let instruction = encode("instruction", &row.instruction)?;
                    let response = encode("response", &row.response)?;
                    Ok(self.framing.frame(tags, &instruction, &response))
                })
                .collect();
            let framed = framed.into_iter().collect::<Result<Vec<_>>>()?;
            return Ok(TokenArrays::from_rows(&framed, base));
        };
        // Infallible. Contiguous runs of rows, each framed straight into its own arrays by a
        // worker holding one piece cache and two id buffers; a few runs per thread balance load.
        let run = rows
            .len()
            .div_ceil(4 * rayon::current_num_threads())
            .max(16);
        let parts: Vec<TokenArrays> = rows
            .par_chunks(run)
            .zip(tags.par_chunks(run))
            .map_init(
                || (fast.cache(), Vec::new(), Vec::new()),
                |(cache, instruction, response), (rows, tags)| {
                    let mut part = TokenArrays::default();
                    for (row, tags) in rows.iter().zip(tags) {
                        instruction.clear();
                        response.clear();
                        fast.encode_into(&row.instruction, cache, instruction);
                        fast.encode_into(&row.response, cache, response);
                        part.push_row(&self.framing, tags, instruction, response);
                    }
                    part
                },
            )
            .collect();
        Ok(TokenArrays::concat(parts, base))
    }

    /// The distinct tag-id lists of a batch, and which one each row has: a batch has few
    /// distinct conditions, each resolved once. Errors name the first bad row.
    fn batch_tags(&self, path: &Path, rows: &[Row]) -> Result<(Vec<Vec<u32>>, Vec<usize>)> {
        let mut seen: HashMap<&str, usize> = HashMap::new();
        let mut lists = Vec::new();
        let mut which = Vec::with_capacity(rows.len());
        for row in rows {
            let index = match seen.get(row.condition.as_str()) {
                Some(&index) => index,
                None => {
                    let ids = self.framing.tag_ids(&row.condition).map_err(|problem| {
                        Error::row(path, row.number, Some("condition"), problem)
                    })?;
                    lists.push(ids);
                    seen.insert(&row.condition, lists.len() - 1);
                    lists.len() - 1
                }
            };
            which.push(index);
        }
        Ok((lists, which))
    }

    /// Tokenize a whole cleaned file into `sink`, batch by batch, on the current rayon pool.
    pub fn encode_file(
        &self,
        path: &Path,
        sink: &mut (dyn TokenSink + Send),
        batch_rows: usize,
    ) -> Result<EncodeStats> {
        let reader = RowReader::open(path, batch_rows)?;
        self.encode_rows(path, reader, sink)
    }

    /// Tokenize every row `reader` gives into `sink`, as `encode_file` does; `path` names the
    /// file in errors (a path, or the URL of an object).
    pub fn encode_rows(
        &self,
        path: &Path,
        reader: RowReader,
        sink: &mut (dyn TokenSink + Send),
    ) -> Result<EncodeStats> {
        self.encode_rows_observed(path, reader, sink, None)
    }

    /// [`Encoder::encode_rows`], each batch also handed to `observer` (the contamination and
    /// duplicate passes, `ngram::observe`) while it is encoded, on the same pool: the rows are
    /// read and parsed once for both.
    pub fn encode_rows_observed(
        &self,
        path: &Path,
        mut reader: RowReader,
        sink: &mut (dyn TokenSink + Send),
        mut observer: Option<(&RowObserver<'_>, &mut FileObservation)>,
    ) -> Result<EncodeStats> {
        let mut stats = EncodeStats::default();
        let mut current = reader.next_batch()?;
        // The previous batch's arrays, not yet appended, and its rows, not yet freed.
        let mut pending: Option<(TokenArrays, Vec<Row>)> = None;
        while let Some(rows) = current {
            // Three things at once: encode this batch (here, and on every thread that is
            // free), read the next one and write the previous one (on another thread, which
            // then helps encode), so that neither reading nor writing holds the encoder up.
            // A write error comes first: its rows are earlier in the file.
            let base = stats.tokens;
            let (framed, (next, written)) = rayon::join(
                || {
                    let observe = || {
                        if let Some((observer, observed)) = observer.as_mut() {
                            observer.observe(&rows, observed);
                        }
                    };
                    rayon::join(|| self.frame_batch(path, &rows, base), observe).0
                },
                || {
                    rayon::join(
                        || reader.next_batch(),
                        || match pending.take() {
                            Some((arrays, _rows)) => sink.append(&arrays),
                            None => Ok(()),
                        },
                    )
                },
            );
            written?;
            let arrays = framed?;
            stats.rows += arrays.rows() as u64;
            stats.tokens += arrays.tokens.len() as u64;
            stats.text_bytes += rows.iter().map(|row| row.text_bytes() as u64).sum::<u64>();
            pending = Some((arrays, rows));
            current = next?;
        }
        if let Some((arrays, _rows)) = pending {
            sink.append(&arrays)?;
        }
        stats.nulls = reader.nulls();
        stats.source = reader.source_digest();
        Ok(stats)
    }
}

/// A rayon pool of `num_threads` threads (`None`: one per core).
pub fn thread_pool(num_threads: Option<usize>) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(num_threads.unwrap_or(0))
        .thread_name(|index| format!("hrm-tokenize-{index}"))
        .build()
        .map_err(|err| Error::Config(format!("cannot start the encoding threads: {err}")))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::io::Write;

    use tokenizers::models::wordlevel::WordLevel;
    use tokenizers::pre_tokenizers::whitespace::WhitespaceSplit;
    use tokenizers::{AddedToken, Tokenizer};

    /// A word-level tokenizer: each known word is one id, so expected ids are easy to write.
    pub(crate) fn word_tokenizer() -> Tokenizer {
        let words = [
            "[UNK]", "what", "is", "two", "plus", "three", "five", "<q>", "</q>", "</a>", "<cot>",
            "<noisy>",
        ];
        let vocab = words
            .iter()
            .enumerate()
            .map(|(id, word)| (word.to_string(), id as u32))
            .collect();
        let model = WordLevel::builder()
            .vocab(vocab)
            .unk_token("[UNK]".into())
            .build()
            .unwrap();
        let mut tokenizer = Tokenizer::new(model);
        tokenizer.with_pre_tokenizer(Some(WhitespaceSplit));
        let specials: Vec<AddedToken> = ["<q>", "</q>", "</a>", "<cot>", "<noisy>"]
            .iter()
            .map(|token| AddedToken::from(token.to_string(), true))
            .collect();
        tokenizer.add_special_tokens(specials).unwrap();
        tokenizer
    }

    pub(crate) fn word_spec() -> FramingSpec {
        FramingSpec {
            boq: "<q>".into(),
            eoq: "</q>".into(),
            eoa: "</a>".into(),
            conditions: BTreeMap::from([
                ("cot".to_string(), "<cot>".to_string()),
                ("noisy".to_string(), "<noisy>".to_string()),
            ]),
        }
    }

    pub(crate) fn jsonl(dir: &Path, name: &str, rows: &[(&str, &str, &str)]) -> std::path::PathBuf {
        let path = dir.join(name);
        let mut file = std::fs::File::create(&path).unwrap();
        for (condition, instruction, response) in rows {
            let line = serde_json::json!({
                "condition": condition, "instruction": instruction, "response": response,
            });
            writeln!(file, "{line}").unwrap();
        }
        path
    }

    #[test]
    fn special_token_strings_in_text_are_plain_text() {
        let encoder = Encoder::new(word_tokenizer(), &word_spec()).unwrap();
        assert_eq!(encoder.encode_text("what is two").unwrap(), [1, 2, 3]);
        // Were added tokens matched in text, "<q>what" would split into "<q>" + "what" = [7, 1];
        // as plain text it is one unknown word.
        assert_eq!(encoder.encode_text("<q>what").unwrap(), [0]);
        let mut matching = word_tokenizer();
        matching.set_encode_special_tokens(false);
        assert_eq!(
            matching.encode_fast("<q>what", false).unwrap().get_ids(),
            [7, 1]
        );
        assert_eq!(encoder.vocab_size(), 12);
    }

    #[test]
    fn file_is_framed_in_row_order_across_batches() {
        let dir = tempfile::tempdir().unwrap();
        let path = jsonl(
            dir.path(),
            "rows.jsonl",
            &[
                ("cot", "what is two plus three", "five"),
                ("", "two", ""),
                ("noisy,cot", "", "three"),
            ],
        );
        let encoder = Encoder::new(word_tokenizer(), &word_spec()).unwrap();
        let pool = thread_pool(Some(2)).unwrap();
        for batch_rows in [1, 2, 100] {
            let mut arrays = TokenArrays::default();
            let stats = pool
                .install(|| encoder.encode_file(&path, &mut arrays, batch_rows))
                .unwrap();
            assert_eq!(
                arrays.tokens,
                [
                    7, 10, 1, 2, 3, 4, 5, 8, 6, 9, // row 1
                    7, 3, 8, 9, // row 2: no tag, empty response
                    7, 11, 10, 8, 5, 9, // row 3: two tags, empty instruction
                ]
            );
            assert_eq!(arrays.inst_start, [0, 10, 14]);
            assert_eq!(arrays.inst_len, [8, 3, 4]);
            assert_eq!(arrays.resp_start, [8, 13, 18]);
            assert_eq!(arrays.resp_len, [2, 1, 2]);
            assert_eq!(stats.rows, 3);
            assert_eq!(stats.tokens, 20);
            assert_eq!(stats.text_bytes, 3 + 22 + 4 + 3 + 9 + 5);
        }
    }

    #[test]
    fn unknown_tag_error_names_file_row_and_known_tags() {
        let dir = tempfile::tempdir().unwrap();
        let path = jsonl(
            dir.path(),
            "tags.jsonl",
            &[
                ("cot", "two", "five"),
                ("cot", "two", "five"),
                ("synth", "two", "five"),
            ],
        );
        let encoder = Encoder::new(word_tokenizer(), &word_spec()).unwrap();
        let pool = thread_pool(Some(2)).unwrap();
        let err = pool
            .install(|| encoder.encode_file(&path, &mut TokenArrays::default(), 2))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{}: row 3, field 'condition': unknown tag \"synth\" in condition \"synth\"; \
                 known tags: cot, noisy",
                path.display()
            )
        );
    }

    #[test]
    fn missing_framing_token_is_a_config_error() {
        let mut spec = word_spec();
        spec.boq = "<|im_start|>".into();
        let err = Encoder::new(word_tokenizer(), &spec).err().unwrap();
        assert!(matches!(err, Error::Config(_)));
        assert!(err.to_string().contains("\"<|im_start|>\""), "{err}");
    }

    #[test]
    fn parts_concatenated_equal_rows_laid_out_at_once() {
        let framing =
            Framing::resolve(&word_spec(), |token| word_tokenizer().token_to_id(token)).unwrap();
        let texts: [(&[u32], &[u32], &[u32]); 4] = [
            (&[10], &[1, 2, 3], &[6]),
            (&[], &[], &[]),
            (&[11, 10], &[4], &[5, 5, 5]),
            (&[], &[2], &[]),
        ];
        let rows: Vec<FramedRow> = texts
            .iter()
            .map(|(tags, inst, resp)| framing.frame(tags, inst, resp))
            .collect();
        let mut first = TokenArrays::default();
        let mut second = TokenArrays::default();
        for (index, (tags, inst, resp)) in texts.iter().enumerate() {
            let part = if index < 1 { &mut first } else { &mut second };
            part.push_row(&framing, tags, inst, resp);
        }
        assert_eq!(
            TokenArrays::concat(vec![first, second], 100),
            TokenArrays::from_rows(&rows, 100)
        );
    }

    #[test]
    fn encode_texts_keeps_order() {
        let encoder = Encoder::new(word_tokenizer(), &word_spec()).unwrap();
        let texts: Vec<String> = (0..500)
            .map(|i| {
                if i % 2 == 0 {
                    "two five".into()
                } else {
                    "three".into()
                }
            })
            .collect();
        let pool = thread_pool(Some(2)).unwrap();
        let ids = pool.install(|| encoder.encode_texts(&texts)).unwrap();
        for (i, ids) in ids.iter().enumerate() {
            let expected: &[u32] = if i % 2 == 0 { &[3, 6] } else { &[5] };
            assert_eq!(ids, expected);
        }
    }
}
