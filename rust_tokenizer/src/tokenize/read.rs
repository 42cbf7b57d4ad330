//! Readers of cleaned files: JSONL lines or Parquet record batches, handed out in batches of
//! owned rows. A JSONL file is streamed (memory bounded whatever its size); a Parquet file is
//! held in memory while it is read (see below), as its decoder holds a row group anyway.
//!
//! The rules match Python's `hrm_assets.cleaning.rows.iter_cleaned_rows`: rows count from 1 (JSONL: the
//! line number, blank lines skipped but counted; Parquet: the row index + 1), the three fields
//! must be strings (a JSON null is an error naming the row and the field), other fields are
//! ignored. One exception, data_io's: a null in a Parquet string column is read as the empty
//! string (its reader takes the null slot's empty value), and counted ([`RowReader::nulls`]).
//!
//! The bytes a reader parses are the bytes it hashes ([`RowReader::source_digest`]): a JSONL
//! stream is hashed as its lines are read; a Parquet file (its reader seeks) is read whole once
//! and hashed from memory, or, above [`WHOLE_READ_LIMIT`], hashed in one pass and decoded from a
//! file whose status must not move meanwhile ([`ParquetReader::open`]). So a file rewritten
//! while it is tokenized is caught by comparing that digest with the one the decision to
//! tokenize it was taken on, in memory bounded whatever the file's size.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use bytes::Bytes;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;
use parquet::file::reader::ChunkReader;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::error::{Error, IoContext, Result};

pub const FIELDS: [&str; 3] = ["condition", "instruction", "response"];

/// A JSONL batch also ends once its text reaches this many bytes, so that a file of very long
/// rows does not hold thousands of them at once.
const MAX_BATCH_BYTES: usize = 64 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// 1-based position in the file, used in error messages.
    pub number: u64,
    pub condition: String,
    pub instruction: String,
    pub response: String,
}

impl Row {
    pub fn text_bytes(&self) -> usize {
        self.condition.len() + self.instruction.len() + self.response.len()
    }
}

/// Size and SHA-256 of the bytes a [`RowReader`] parsed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SourceDigest {
    pub size: u64,
    pub sha256: [u8; 32],
}

impl SourceDigest {
    fn of(hasher: &Sha256, size: u64) -> Self {
        SourceDigest {
            size,
            sha256: hasher.clone().finalize().into(),
        }
    }

    /// The SHA-256 as lowercase hex, as manifests and `metadata.json` record it.
    pub fn sha256_hex(&self) -> String {
        self.sha256
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }
}

/// A source that hashes every byte as it hands it out.
struct DigestingRead {
    inner: Box<dyn Read + Send>,
    hasher: Sha256,
    size: u64,
}

impl Read for DigestingRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.hasher.update(&buf[..read]);
        self.size += read as u64;
        Ok(read)
    }
}

/// Rows of one cleaned file, batch by batch.
pub enum RowReader {
    Jsonl(JsonlReader),
    Parquet(ParquetReader),
}

impl RowReader {
    /// Open `path` by its extension (`.jsonl` or `.parquet`); batches hold at most `batch_rows`.
    pub fn open(path: &Path, batch_rows: usize) -> Result<Self> {
        let batch_rows = batch_rows.max(1);
        match Format::of(path)? {
            Format::Jsonl => Ok(RowReader::Jsonl(JsonlReader::open(path, batch_rows)?)),
            Format::Parquet => Ok(RowReader::Parquet(ParquetReader::open(path, batch_rows)?)),
        }
    }

    /// JSONL rows from `source` (an object as it downloads), named `name` (its URL) in errors.
    pub fn jsonl_from(name: &Path, source: Box<dyn Read + Send>, batch_rows: usize) -> Self {
        RowReader::Jsonl(JsonlReader::new(name, source, batch_rows.max(1)))
    }

    /// Parquet rows from a whole file in memory (an object fetched from storage), named
    /// `name` (its URL) in errors.
    pub fn parquet_from(name: &Path, bytes: Bytes, batch_rows: usize) -> Result<Self> {
        Ok(RowReader::Parquet(ParquetReader::new(
            name,
            bytes,
            batch_rows.max(1),
        )?))
    }

    /// The next non-empty batch, or `None` at the end of the file.
    pub fn next_batch(&mut self) -> Result<Option<Vec<Row>>> {
        match self {
            RowReader::Jsonl(reader) => reader.next_batch(),
            RowReader::Parquet(reader) => reader.next_batch(),
        }
    }

    /// Null fields read as empty strings so far (Parquet only; a JSON null is an error).
    pub fn nulls(&self) -> u64 {
        match self {
            RowReader::Jsonl(_) => 0,
            RowReader::Parquet(reader) => reader.nulls,
        }
    }

    /// Size and SHA-256 of the bytes parsed: once [`RowReader::next_batch`] has returned
    /// `None`, of the whole file as it was read (a Parquet file's from the start).
    pub fn source_digest(&self) -> SourceDigest {
        match self {
            RowReader::Jsonl(reader) => {
                let source = reader.lines.get_ref();
                SourceDigest::of(&source.hasher, source.size)
            }
            RowReader::Parquet(reader) => reader.digest,
        }
    }
}

/// The two formats of cleaned files, told apart by extension.
pub enum Format {
    Jsonl,
    Parquet,
}

impl Format {
    /// The format of `path` by its extension (an error naming it for any other).
    pub fn of(path: &Path) -> Result<Self> {
        match path.extension().and_then(|ext| ext.to_str()) {
            Some("jsonl") => Ok(Format::Jsonl),
            Some("parquet") => Ok(Format::Parquet),
            other => Err(Error::file(
                path,
                format!(
                    "unsupported file type {:?} (expected .jsonl or .parquet)",
                    other.map(|ext| format!(".{ext}")).unwrap_or_default()
                ),
            )),
        }
    }
}

pub struct JsonlReader {
    path: PathBuf,
    // Boxed: a file or an object's bytes, hashed as they are read. The buffer calls it once
    // per MiB, so the dynamic call costs nothing measurable.
    lines: BufReader<DigestingRead>,
    line_number: u64,
    batch_rows: usize,
    buffer: Vec<u8>,
}

/// The fast path: three strings. Anything else (null, missing, other types, duplicate keys)
/// fails here and is re-parsed by `diagnose_json_row` for a precise answer.
#[derive(Deserialize)]
struct JsonRow {
    condition: String,
    instruction: String,
    response: String,
}

impl JsonlReader {
    pub fn open(path: &Path, batch_rows: usize) -> Result<Self> {
        let file = File::open(path).at(path)?;
        Ok(JsonlReader::new(path, Box::new(file), batch_rows))
    }

    /// Lines of `source`, named `path` in errors.
    fn new(path: &Path, source: Box<dyn Read + Send>, batch_rows: usize) -> Self {
        JsonlReader {
            path: path.to_path_buf(),
            lines: BufReader::with_capacity(
                1 << 20,
                DigestingRead {
                    inner: source,
                    hasher: Sha256::new(),
                    size: 0,
                },
            ),
            line_number: 0,
            batch_rows,
            buffer: Vec::new(),
        }
    }

    pub fn next_batch(&mut self) -> Result<Option<Vec<Row>>> {
        let mut rows = Vec::new();
        let mut bytes = 0usize;
        while rows.len() < self.batch_rows && bytes < MAX_BATCH_BYTES {
            self.buffer.clear();
            let read = self
                .lines
                .read_until(b'\n', &mut self.buffer)
                .at(&self.path)?;
            if read == 0 {
                break;
            }
            self.line_number += 1;
            let mut line = self.buffer.as_slice();
            if self.line_number == 1 {
                // Python's json.loads accepts a UTF-8 byte order mark; so do we.
                line = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line);
            }
            let line = trim_json_whitespace(line);
            if line.is_empty() {
                continue;
            }
            let row = parse_json_row(line, &self.path, self.line_number)?;
            bytes += row.text_bytes();
            rows.push(row);
        }
        Ok((!rows.is_empty()).then_some(rows))
    }
}

/// `line` without the whitespace JSON allows around a value (space, tab, CR, LF), as
/// data_io's serde_json stream reads it. Other ASCII whitespace (a form feed) stays, and makes
/// the line malformed, as with data_io and Python's `json.loads`.
fn trim_json_whitespace(line: &[u8]) -> &[u8] {
    let is_space = |byte: &u8| matches!(byte, b' ' | b'\t' | b'\r' | b'\n');
    let start = line.iter().position(|b| !is_space(b)).unwrap_or(line.len());
    let end = line
        .iter()
        .rposition(|b| !is_space(b))
        .map_or(start, |last| last + 1);
    &line[start..end]
}

fn parse_json_row(line: &[u8], path: &Path, number: u64) -> Result<Row> {
    if line.first() != Some(&b'{') {
        // serde reads a struct from a JSON array too (`["cot","q","a"]`); a row is an object.
        return diagnose_json_row(line, path, number);
    }
    match serde_json::from_slice::<JsonRow>(line) {
        Ok(row) => Ok(Row {
            number,
            condition: row.condition,
            instruction: row.instruction,
            response: row.response,
        }),
        Err(_) => diagnose_json_row(line, path, number),
    }
}

/// Slow path for lines the typed parse rejected: either a precise error, or the row when the
/// line was valid after all (e.g. a duplicated key, where the last value wins as in Python).
fn diagnose_json_row(line: &[u8], path: &Path, number: u64) -> Result<Row> {
    let value: serde_json::Value = serde_json::from_slice(line)
        .map_err(|err| Error::row(path, number, None, format!("malformed JSON: {err}")))?;
    let object = value.as_object().ok_or_else(|| {
        Error::row(
            path,
            number,
            None,
            format!("expected a JSON object, got {}", python_kind(&value)),
        )
    })?;
    let mut values = Vec::with_capacity(FIELDS.len());
    for field in FIELDS {
        match object.get(field) {
            None => return Err(Error::row(path, number, Some(field), "missing")),
            Some(serde_json::Value::String(text)) => values.push(text.clone()),
            Some(other) => {
                return Err(Error::row(
                    path,
                    number,
                    Some(field),
                    format!("expected a string, got {}", python_kind(other)),
                ))
            }
        }
    }
    let [condition, instruction, response]: [String; 3] =
        values.try_into().expect("three fields were pushed");
    Ok(Row {
        number,
        condition,
        instruction,
        response,
    })
}

/// Python's name for the type a JSON value decodes to, as `rows.RowError` reports it.
fn python_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "bool",
        serde_json::Value::Number(number) if number.is_f64() => "float",
        serde_json::Value::Number(_) => "int",
        serde_json::Value::String(_) => "str",
        serde_json::Value::Array(_) => "list",
        serde_json::Value::Object(_) => "dict",
    }
}

pub struct ParquetReader {
    path: PathBuf,
    batches: ParquetRecordBatchReader,
    rows_seen: u64,
    nulls: u64,
    digest: SourceDigest,
    watch: Option<UnchangedWatch>,
}

/// Local Parquet files up to this size are read whole into memory (one read proves what was
/// decoded); larger ones are hashed, then decoded from the file under an [`UnchangedWatch`].
pub const WHOLE_READ_LIMIT: u64 = 64 << 20;

/// What a write to a file moves: its size, modification and change times, and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStatus {
    size: u64,
    modified: (i64, i64),
    changed: (i64, i64),
    inode: u64,
}

impl FileStatus {
    fn of(file: &File) -> std::io::Result<Self> {
        use std::os::unix::fs::MetadataExt;
        let meta = file.metadata()?;
        Ok(FileStatus {
            size: meta.len(),
            modified: (meta.mtime(), meta.mtime_nsec()),
            changed: (meta.ctime(), meta.ctime_nsec()),
            inode: meta.ino(),
        })
    }
}

/// A file's status before it was hashed, to compare with its status after it was decoded.
struct UnchangedWatch {
    file: File,
    before: FileStatus,
}

impl UnchangedWatch {
    fn check(&self, path: &Path) -> Result<()> {
        let after = FileStatus::of(&self.file).at(path)?;
        if after == self.before {
            return Ok(());
        }
        Err(Error::file(
            path,
            format!(
                "changed while it was tokenized: {} bytes when it was hashed, {} bytes (and a \
                 new change time) after its last row was read; nothing was written: run again \
                 once the file is no longer being written",
                self.before.size, after.size
            ),
        ))
    }
}

impl ParquetReader {
    /// Rows of a local Parquet file. Its reader seeks about the file, so the bytes it decodes
    /// cannot be hashed as they are read; they are proven to be the bytes hashed
    /// ([`RowReader::source_digest`]) one of two ways. A file up to [`WHOLE_READ_LIMIT`] is read
    /// whole once and decoded from memory. A larger one is hashed in one streaming pass and
    /// decoded from the file, and its status (size, modification and change times, inode) must
    /// be the same after its last row as before the hash: any write in between, a rewrite with
    /// the same bytes included, moves the change time, and fails the file at its end. So memory
    /// stays bounded by the reader's batches whatever the file's size.
    pub fn open(path: &Path, batch_rows: usize) -> Result<Self> {
        ParquetReader::open_with_limit(path, batch_rows, WHOLE_READ_LIMIT)
    }

    fn open_with_limit(path: &Path, batch_rows: usize, whole_read_limit: u64) -> Result<Self> {
        let mut file = File::open(path).at(path)?;
        let before = FileStatus::of(&file).at(path)?;
        if before.size <= whole_read_limit {
            let mut bytes = Vec::with_capacity(before.size as usize);
            file.read_to_end(&mut bytes).at(path)?;
            return ParquetReader::new(path, Bytes::from(bytes), batch_rows);
        }
        let mut hashing = DigestingRead {
            inner: Box::new(file.try_clone().at(path)?),
            hasher: Sha256::new(),
            size: 0,
        };
        std::io::copy(&mut hashing, &mut std::io::sink()).at(path)?;
        let digest = SourceDigest::of(&hashing.hasher, hashing.size);
        let watch = UnchangedWatch {
            file: file.try_clone().at(path)?,
            before,
        };
        ParquetReader::from_source(path, file, batch_rows, digest, Some(watch))
    }

    /// Record batches of a whole file's `bytes`, named `path` in errors.
    fn new(path: &Path, bytes: Bytes, batch_rows: usize) -> Result<Self> {
        let mut hasher = Sha256::new();
        hasher.update(&bytes);
        let digest = SourceDigest::of(&hasher, bytes.len() as u64);
        ParquetReader::from_source(path, bytes, batch_rows, digest, None)
    }

    /// Record batches of `source`, whose bytes hash to `digest`; with `watch`, the file must
    /// not have changed by the time the last batch is read.
    fn from_source<T: ChunkReader + 'static>(
        path: &Path,
        source: T,
        batch_rows: usize,
        digest: SourceDigest,
        watch: Option<UnchangedWatch>,
    ) -> Result<Self> {
        let builder = ParquetRecordBatchReaderBuilder::try_new(source)
            .map_err(|err| Error::file(path, format!("cannot read as Parquet: {err}")))?;
        let schema = builder.schema().clone();
        let mut roots = Vec::with_capacity(FIELDS.len());
        for field in FIELDS {
            let (index, column) = schema.column_with_name(field).ok_or_else(|| {
                Error::row(
                    path,
                    0,
                    Some(field),
                    "column missing from the Parquet schema",
                )
            })?;
            if !is_string_type(column.data_type()) {
                return Err(Error::row(
                    path,
                    0,
                    Some(field),
                    format!("expected a string column, got {}", column.data_type()),
                ));
            }
            roots.push(index);
        }
        let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
        let batches = builder
            .with_projection(mask)
            .with_batch_size(batch_rows)
            .build()
            .map_err(|err| Error::file(path, format!("cannot read as Parquet: {err}")))?;
        Ok(ParquetReader {
            path: path.to_path_buf(),
            batches,
            rows_seen: 0,
            nulls: 0,
            digest,
            watch,
        })
    }

    pub fn next_batch(&mut self) -> Result<Option<Vec<Row>>> {
        loop {
            let Some(batch) = self.batches.next() else {
                if let Some(watch) = &self.watch {
                    watch.check(&self.path)?;
                }
                return Ok(None);
            };
            let batch = batch.map_err(|err| {
                Error::file(
                    &self.path,
                    format!(
                        "cannot read Parquet rows after row {}: {err}",
                        self.rows_seen
                    ),
                )
            })?;
            if batch.num_rows() == 0 {
                continue;
            }
            let rows = self.rows_of(&batch)?;
            self.rows_seen += batch.num_rows() as u64;
            return Ok(Some(rows));
        }
    }

    fn rows_of(&mut self, batch: &RecordBatch) -> Result<Vec<Row>> {
        let columns = FIELDS.map(|field| {
            let array = batch
                .column_by_name(field)
                .expect("the projection keeps the three fields");
            StringColumn::new(array.as_ref()).expect("types were checked against the schema")
        });
        let mut nulls = 0u64;
        let mut text = |column: &StringColumn, index| match column.value(index) {
            Some(value) => value.to_owned(),
            None => {
                nulls += 1;
                String::new()
            }
        };
        let rows_seen = self.rows_seen;
        let rows = (0..batch.num_rows())
            .map(|index| Row {
                number: rows_seen + index as u64 + 1,
                condition: text(&columns[0], index),
                instruction: text(&columns[1], index),
                response: text(&columns[2], index),
            })
            .collect();
        self.nulls += nulls;
        Ok(rows)
    }
}

fn is_string_type(data_type: &DataType) -> bool {
    match data_type {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, values) => is_string_type(values),
        _ => false,
    }
}

/// Uniform access to the string layouts Parquet files decode to (pyarrow writes Utf8, Polars
/// LargeUtf8 or Utf8View, and dictionary-encoded columns keep their dictionary type).
enum StringColumn<'a> {
    Utf8(&'a arrow_array::StringArray),
    LargeUtf8(&'a arrow_array::LargeStringArray),
    View(&'a arrow_array::StringViewArray),
    Dictionary {
        array: &'a dyn Array,
        keys: Vec<usize>,
        values: Box<StringColumn<'a>>,
    },
}

impl<'a> StringColumn<'a> {
    fn new(array: &'a dyn Array) -> Option<Self> {
        if let Some(strings) = array.as_string_opt::<i32>() {
            return Some(StringColumn::Utf8(strings));
        }
        if let Some(strings) = array.as_string_opt::<i64>() {
            return Some(StringColumn::LargeUtf8(strings));
        }
        if let Some(strings) = array.as_string_view_opt() {
            return Some(StringColumn::View(strings));
        }
        let dictionary = array.as_any_dictionary_opt()?;
        Some(StringColumn::Dictionary {
            array,
            keys: dictionary.normalized_keys(),
            values: Box::new(StringColumn::new(dictionary.values().as_ref())?),
        })
    }

    /// The string at `index`, or `None` for a null.
    fn value(&self, index: usize) -> Option<&'a str> {
        match self {
            StringColumn::Utf8(strings) => strings.is_valid(index).then(|| strings.value(index)),
            StringColumn::LargeUtf8(strings) => {
                strings.is_valid(index).then(|| strings.value(index))
            }
            StringColumn::View(strings) => strings.is_valid(index).then(|| strings.value(index)),
            StringColumn::Dictionary {
                array,
                keys,
                values,
            } => {
                if array.is_null(index) {
                    None
                } else {
                    values.value(keys[index])
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::Arc;

    use arrow_array::types::Int32Type;
    use arrow_array::{ArrayRef, DictionaryArray, LargeStringArray, StringArray, StringViewArray};
    use parquet::arrow::ArrowWriter;

    fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::File::create(&path)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        path
    }

    fn read_all(path: &Path, batch_rows: usize) -> Result<Vec<Vec<Row>>> {
        let mut reader = RowReader::open(path, batch_rows)?;
        let mut batches = Vec::new();
        while let Some(batch) = reader.next_batch()? {
            batches.push(batch);
        }
        Ok(batches)
    }

    fn write_parquet(dir: &Path, name: &str, columns: Vec<(&str, ArrayRef)>) -> PathBuf {
        let path = dir.join(name);
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        let mut writer =
            ArrowWriter::try_new(File::create(&path).unwrap(), batch.schema(), None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        path
    }

    #[test]
    fn jsonl_rows_are_numbered_by_line_and_batched() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(
            dir.path(),
            "a.jsonl",
            concat!(
                "{\"condition\":\"cot\",\"instruction\":\"q1\",\"response\":\"a1\"}\n",
                "\n",
                "  {\"condition\":\"\",\"instruction\":\"q2 \\u00e9\",\"response\":\"a2\",\"extra\":1}\r\n",
                "{\"response\":\"a3\",\"instruction\":\"q3\",\"condition\":\"noisy\"}",
            ),
        );
        let batches = read_all(&path, 2).unwrap();
        assert_eq!(batches.len(), 2);
        let rows: Vec<Row> = batches.into_iter().flatten().collect();
        assert_eq!(rows.iter().map(|r| r.number).collect::<Vec<_>>(), [1, 3, 4]);
        assert_eq!(rows[1].instruction, "q2 é");
        assert_eq!(rows[1].condition, "");
        assert_eq!(rows[2].condition, "noisy");
        assert_eq!(rows[2].response, "a3");
    }

    #[test]
    fn jsonl_errors_name_row_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            (
                "{\"condition\":\"\",\"instruction\":null,\"response\":\"a\"}",
                "row 2, field 'instruction': expected a string, got null",
            ),
            (
                "{\"condition\":\"\",\"instruction\":\"q\"}",
                "row 2, field 'response': missing",
            ),
            (
                "{\"condition\":3,\"instruction\":\"q\",\"response\":\"a\"}",
                "row 2, field 'condition': expected a string, got int",
            ),
            (
                "{\"condition\":\"\",\"instruction\":[\"q\"],\"response\":\"a\"}",
                "row 2, field 'instruction': expected a string, got list",
            ),
            ("[1, 2]", "row 2: expected a JSON object, got list"),
            (
                "[\"\", \"q\", \"a\"]",
                "row 2: expected a JSON object, got list",
            ),
            ("\"text\"", "row 2: expected a JSON object, got str"),
            ("{\"condition\": \"", "row 2: malformed JSON"),
        ];
        for (line, expected) in cases {
            let text = format!(
                "{{\"condition\":\"\",\"instruction\":\"q\",\"response\":\"a\"}}\n{line}\n"
            );
            let path = write_file(dir.path(), "bad.jsonl", &text);
            let err = read_all(&path, 10).unwrap_err();
            let message = err.to_string();
            assert!(matches!(err, Error::Row { row: 2, .. }), "{message}");
            assert!(
                message.starts_with(&path.display().to_string()),
                "{message}"
            );
            assert!(
                message.contains(expected),
                "{message} should contain {expected}"
            );
        }
    }

    #[test]
    fn jsonl_duplicate_key_takes_the_last_value_like_python() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(
            dir.path(),
            "dup.jsonl",
            "{\"condition\":\"\",\"instruction\":\"old\",\"instruction\":\"new\",\"response\":\"a\"}\n",
        );
        let rows: Vec<Row> = read_all(&path, 10).unwrap().into_iter().flatten().collect();
        assert_eq!(rows[0].instruction, "new");
    }

    #[test]
    fn jsonl_byte_order_mark_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(
            dir.path(),
            "bom.jsonl",
            "\u{feff}{\"condition\":\"\",\"instruction\":\"q\",\"response\":\"a\"}\n",
        );
        let rows: Vec<Row> = read_all(&path, 10).unwrap().into_iter().flatten().collect();
        assert_eq!(rows[0].instruction, "q");
    }

    #[test]
    fn jsonl_form_feed_and_lone_surrogate_are_malformed_json() {
        // data_io's serde_json rule: only space, tab, CR and LF around a value; a \u escape
        // must be valid Unicode (a lone surrogate is not).
        let dir = tempfile::tempdir().unwrap();
        let row = "{\"condition\":\"\",\"instruction\":\"q\",\"response\":\"a\"}";
        let lone = "{\"condition\":\"\",\"instruction\":\"\\ud800\",\"response\":\"a\"}";
        for (name, text) in [
            ("leading_ff.jsonl", format!("{row}\n\u{c}{row}\n")),
            ("trailing_ff.jsonl", format!("{row}\n{row}\u{c}\n")),
            ("only_ff.jsonl", format!("{row}\n\u{c}\n")),
            ("surrogate.jsonl", format!("{row}\n{lone}\n")),
        ] {
            let path = write_file(dir.path(), name, &text);
            let err = read_all(&path, 10).unwrap_err();
            assert!(matches!(err, Error::Row { row: 2, .. }), "{name}: {err}");
            assert!(err.to_string().contains("malformed JSON"), "{name}: {err}");
        }
        let path = write_file(dir.path(), "spaces.jsonl", &format!(" \t{row}\r\n\t\n"));
        assert_eq!(
            read_all(&path, 10).unwrap().into_iter().flatten().count(),
            1
        );
    }

    #[test]
    fn jsonl_invalid_utf8_is_a_row_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bytes.jsonl");
        let mut line = b"{\"condition\":\"\",\"instruction\":\"".to_vec();
        line.extend_from_slice(&[0xff, 0xfe]);
        line.extend_from_slice(b"\",\"response\":\"a\"}\n");
        std::fs::write(&path, line).unwrap();
        let err = read_all(&path, 10).unwrap_err();
        assert!(matches!(err, Error::Row { row: 1, .. }), "{err}");
    }

    #[test]
    fn parquet_reads_every_string_layout() {
        let dir = tempfile::tempdir().unwrap();
        let texts = ["a", "bé", "日本"];
        let layouts: Vec<(&str, ArrayRef)> = vec![
            ("utf8", Arc::new(StringArray::from(texts.to_vec()))),
            ("large", Arc::new(LargeStringArray::from(texts.to_vec()))),
            ("view", Arc::new(StringViewArray::from(texts.to_vec()))),
            (
                "dict",
                Arc::new(
                    texts
                        .iter()
                        .copied()
                        .collect::<DictionaryArray<Int32Type>>(),
                ),
            ),
        ];
        for (name, array) in layouts {
            let path = write_parquet(
                dir.path(),
                &format!("{name}.parquet"),
                vec![
                    ("response", array.clone()),
                    ("other", Arc::new(StringArray::from(vec!["x", "y", "z"]))),
                    (
                        "condition",
                        Arc::new(StringArray::from(vec!["", "cot", "noisy,cot"])),
                    ),
                    ("instruction", array),
                ],
            );
            let batches = read_all(&path, 2).unwrap();
            assert_eq!(batches.len(), 2, "{name}");
            let rows: Vec<Row> = batches.into_iter().flatten().collect();
            assert_eq!(rows.len(), 3);
            for (index, row) in rows.iter().enumerate() {
                assert_eq!(row.number, index as u64 + 1);
                assert_eq!(row.instruction, texts[index], "{name}");
                assert_eq!(row.response, texts[index], "{name}");
            }
            assert_eq!(rows[2].condition, "noisy,cot");
        }
    }

    #[test]
    fn parquet_nulls_are_empty_strings_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_parquet(
            dir.path(),
            "nulls.parquet",
            vec![
                (
                    "condition",
                    Arc::new(StringArray::from(vec![None, Some(""), Some("")])) as ArrayRef,
                ),
                (
                    "instruction",
                    Arc::new(StringArray::from(vec!["q", "q", "q"])),
                ),
                (
                    "response",
                    Arc::new(StringArray::from(vec![Some("a"), None, None])),
                ),
            ],
        );
        let mut reader = RowReader::open(&path, 2).unwrap();
        let mut rows = Vec::new();
        while let Some(batch) = reader.next_batch().unwrap() {
            rows.extend(batch);
        }
        let fields: Vec<[&str; 3]> = rows
            .iter()
            .map(|row| [&row.condition, &row.instruction, &row.response].map(String::as_str))
            .collect();
        assert_eq!(fields, [["", "q", "a"], ["", "q", ""], ["", "q", ""]]);
        assert_eq!(reader.nulls(), 3);
    }

    #[test]
    fn parquet_schema_problems_name_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let missing = write_parquet(
            dir.path(),
            "missing.parquet",
            vec![
                (
                    "condition",
                    Arc::new(StringArray::from(vec![""])) as ArrayRef,
                ),
                ("instruction", Arc::new(StringArray::from(vec!["q"]))),
            ],
        );
        let err = read_all(&missing, 2).unwrap_err().to_string();
        assert!(err.contains("field 'response': column missing"), "{err}");

        let wrong = write_parquet(
            dir.path(),
            "wrong.parquet",
            vec![
                (
                    "condition",
                    Arc::new(StringArray::from(vec![""])) as ArrayRef,
                ),
                (
                    "instruction",
                    Arc::new(arrow_array::Int64Array::from(vec![1])),
                ),
                ("response", Arc::new(StringArray::from(vec!["a"]))),
            ],
        );
        let err = read_all(&wrong, 2).unwrap_err().to_string();
        assert!(
            err.contains("field 'instruction': expected a string column, got Int64"),
            "{err}"
        );
    }

    #[test]
    fn unsupported_and_corrupt_files_are_file_errors() {
        let dir = tempfile::tempdir().unwrap();
        let csv = write_file(dir.path(), "rows.csv", "a,b\n");
        assert!(matches!(RowReader::open(&csv, 1), Err(Error::File { .. })));
        let corrupt = write_file(dir.path(), "corrupt.parquet", "not parquet at all");
        let err = RowReader::open(&corrupt, 1).err().unwrap();
        assert!(matches!(err, Error::File { .. }), "{err}");
        let missing = dir.path().join("absent.jsonl");
        assert!(matches!(
            RowReader::open(&missing, 1),
            Err(Error::Io { .. })
        ));
    }

    #[test]
    fn the_digest_is_of_the_bytes_parsed() {
        let dir = tempfile::tempdir().unwrap();
        let jsonl = write_file(
            dir.path(),
            "a.jsonl",
            "{\"condition\":\"cot\",\"instruction\":\"q\",\"response\":\"a\"}\n\n",
        );
        let parquet = write_parquet(
            dir.path(),
            "a.parquet",
            FIELDS
                .iter()
                .map(|name| {
                    let column: ArrayRef = Arc::new(StringArray::from(vec!["x", "y"]));
                    (*name, column)
                })
                .collect(),
        );
        for path in [jsonl, parquet] {
            let bytes = std::fs::read(&path).unwrap();
            let mut reader = RowReader::open(&path, 1).unwrap();
            while reader.next_batch().unwrap().is_some() {}
            let digest = reader.source_digest();
            assert_eq!(digest.size, bytes.len() as u64, "{path:?}");
            assert_eq!(digest.sha256, <[u8; 32]>::from(Sha256::digest(&bytes)));
        }
    }

    fn xy_parquet(dir: &Path, rows: usize) -> PathBuf {
        let values: Vec<String> = (0..rows).map(|row| format!("text {row}")).collect();
        write_parquet(
            dir,
            "large.parquet",
            FIELDS
                .iter()
                .map(|name| {
                    let column: ArrayRef = Arc::new(StringArray::from(values.clone()));
                    (*name, column)
                })
                .collect(),
        )
    }

    fn parquet_rows(reader: &mut ParquetReader) -> Result<Vec<Row>> {
        let mut rows = Vec::new();
        while let Some(batch) = reader.next_batch()? {
            rows.extend(batch);
        }
        Ok(rows)
    }

    #[test]
    fn a_parquet_file_above_the_limit_is_hashed_then_decoded_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = xy_parquet(dir.path(), 100);
        let bytes = std::fs::read(&path).unwrap();
        let mut whole = ParquetReader::open_with_limit(&path, 7, u64::MAX).unwrap();
        let mut streamed = ParquetReader::open_with_limit(&path, 7, 0).unwrap();
        assert!(whole.watch.is_none() && streamed.watch.is_some());
        assert_eq!(
            parquet_rows(&mut whole).unwrap(),
            parquet_rows(&mut streamed).unwrap()
        );
        for digest in [whole.digest, streamed.digest] {
            assert_eq!(digest.size, bytes.len() as u64);
            assert_eq!(digest.sha256, <[u8; 32]>::from(Sha256::digest(&bytes)));
        }
    }

    #[test]
    fn a_parquet_file_rewritten_with_the_same_bytes_while_decoded_fails_at_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = xy_parquet(dir.path(), 100);
        let bytes = std::fs::read(&path).unwrap();
        let mut reader = ParquetReader::open_with_limit(&path, 7, 0).unwrap();
        // What `cp` over the file does: truncate, then write the same bytes again (after a
        // pause longer than the kernel's coarse clock tick, so the change time moves).
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&path, &bytes).unwrap();
        let err = parquet_rows(&mut reader).unwrap_err().to_string();
        assert!(err.contains("large.parquet"), "{err}");
        assert!(err.contains("changed while it was tokenized"), "{err}");
    }

    #[test]
    fn empty_files_have_no_batches() {
        let dir = tempfile::tempdir().unwrap();
        let empty = write_file(dir.path(), "empty.jsonl", "\n\n");
        assert!(read_all(&empty, 4).unwrap().is_empty());
    }
}
