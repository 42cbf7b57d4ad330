"""Type stub of the Rust extension ``hrm_assets._core`` (bindings: rust_tokenizer/src/python/)."""

from collections.abc import Callable
from os import PathLike
from typing import Literal

from typing_extensions import Buffer

FORMAT_VERSION: str
"""Changes whenever the bytes written for the same input, tokenizer and framing could change."""
OWNER_MARKER: str
"""File name present in every tokenized folder this module writes (``.hrm-data``)."""
METADATA_FILE: str
MANIFEST_FILE: str
"""``manifest.json``: size and SHA-256 of every array of a tokenized folder."""
MANIFEST_FORMAT: str
"""The manifest's ``format`` field (``hrm-data-manifest/1``; see ``hrm_assets.common.manifest``)."""
TOKENIZED_KIND: str
"""The ``kind`` field of a tokenized folder's manifest (``tokenized``): which command wrote it."""
ARRAY_FILES: list[str]
SAMPLE_SOURCE_SHA256: str
"""SHA-256 of the Rust sources that decide sampled epoch bytes (rust_tokenizer/build.rs)."""
DEFAULT_BATCH_ROWS: int
NGRAM_DEFAULT_N: int
"""Default word n-gram size of the contamination index (13)."""
NGRAM_DEFAULT_MIN_WORDS: int
"""Default shortest evaluation item (in words) indexed whole when shorter than n (8)."""
SCAN_SIDECAR_FILE: str
"""A tokenized folder's contamination sidecar (``contamination.json``)."""
SCAN_SIDECAR_FORMAT: str
"""Its ``format`` field (``hrm-data-row-scan/1``)."""
KEYS_SIDECAR_FILE: str
"""A tokenized folder's duplicate-key sidecar (``duplicate_keys.u64``: a little-endian u64 a
row)."""

class Encoder:
    """A ``tokenizer.json`` with data_io's framing tokens, ready to encode files.

    Texts are encoded without automatic special tokens, and special-token strings inside texts
    are plain text (``encode_special_tokens = True``). Raises ``FileNotFoundError`` if the
    tokenizer is missing and ``ValueError`` if it cannot be loaded or a framing token is not in
    its vocabulary (the message names the token).

    ``engine`` picks the implementation; both give the same ids. ``"auto"`` (the default) uses
    the fast engine when the tokenizer is of data_io's family (NFC or no normaliser, data_io's
    split regex, ByteLevel, BPE, only special added tokens, no truncation or padding) and the
    ``tokenizers`` crate otherwise; ``"fast"`` raises ``ValueError`` (with the reason) for a
    tokenizer outside the family; ``"reference"`` always uses the ``tokenizers`` crate.
    """

    def __init__(
        self,
        tokenizer_path: str | PathLike[str],
        boq: str,
        eoq: str,
        eoa: str,
        conditions: dict[str, str],
        engine: Literal["auto", "fast", "reference"] = "auto",
    ) -> None: ...
    @property
    def engine(self) -> Literal["fast", "reference"]:
        """The engine in use."""
    @property
    def fallback_reason(self) -> str | None:
        """Why the reference engine is in use (``None`` when the fast one is)."""
    @property
    def vocab_size(self) -> int:
        """Vocabulary size including added tokens."""
    @property
    def framing_ids(self) -> dict[str, int | dict[str, int]]:
        """``{"boq": id, "eoq": id, "eoa": id, "conditions": {tag: id}}``."""
    def token_to_id(self, token: str) -> int | None: ...
    def encode_texts(self, texts: list[str], num_threads: int | None = None) -> list[list[int]]:
        """Token ids of each text, encoded in parallel without holding the GIL."""
    def tokenize_file(
        self,
        input_path: str | PathLike[str],
        output_dir: str | PathLike[str],
        metadata_json: str,
        num_threads: int | None = None,
        batch_rows: int = ...,
        storage_options: dict[str, str] | None = None,
    ) -> dict[str, int | float]:
        """Tokenize one cleaned ``.jsonl``/``.parquet`` file into ``output_dir``, atomically.

        Writes ``tokens.npy`` (``<u4``), ``inst_start/inst_len/resp_start/resp_len.npy``
        (``<u8``; headers as data_io's tokenizer writes them with Rust's ``ndarray-npy``),
        ``metadata.json`` (``metadata_json``, a JSON object, plus ``rows``, ``tokens``,
        ``text_bytes``, ``nulls``), ``manifest.json`` (size and SHA-256 of each array) and the
        ownership marker into a ``.tmp-`` sibling, then renames it into place. Encodes on
        ``num_threads`` threads (default: one per core) without holding the GIL, in batches of
        ``batch_rows`` rows.

        A null in a Parquet string column is read as the empty string, as data_io reads it;
        ``nulls`` counts them. Returns ``{"rows", "tokens", "text_bytes", "nulls", "seconds"}``.
        Raises
        ``hrm_assets.cleaning.rows.RowError`` (a ``ValueError``) for a bad row or unknown condition
        tag, naming file, row and field; ``ValueError`` for an unreadable file; ``OSError`` for IO.
        On error ``output_dir`` is unchanged. Either path may be an ``s3://bucket/key`` URL, as
        for ``tokenize_files``.
        """
    def tokenize_files(
        self,
        jobs: list[tuple[str | PathLike[str], str | PathLike[str], str]],
        num_threads: int | None = None,
        batch_rows: int = ...,
        progress: Callable[[int], object] | None = None,
        storage_options: dict[str, str] | None = None,
        observe: bool = False,
        scan_index: NgramIndex | None = None,
        scan_label: str | None = None,
    ) -> list[dict[str, int] | Exception]:
        """Tokenize many files as ``tokenize_file`` does for one, in one call: several files at
        once (largest first) on ``num_threads`` threads without the GIL, then one durable sync
        (``syncfs``) for every staged folder before they are renamed into place.

        With ``observe``, each job is also keyed for duplicates and, with ``scan_index``,
        scanned for contamination in the same read; the outcome is written into its folder as
        :data:`SCAN_SIDECAR_FILE` (recording ``scan_label``, a JSON text; with ``row_lines``,
        the line number and row position of each row after skipped blank lines) and
        :data:`KEYS_SIDECAR_FILE`, which no array or manifest covers
        (``hrm_assets.contamination.sidecar``). A remote folder's sidecars are published with
        its other objects, before its manifest; a previous write's are deleted when it has
        none.

        ``jobs`` are ``(input_path, output_dir, metadata_json)``. Returns one item per job, in
        order: ``{"rows", "tokens", "text_bytes", "nulls"}`` (files of a batch share their
        encoding time, so there is no per-file ``seconds``), or the exception it raised
        (returned, not raised, so one bad file does not hide the others). ``progress(bytes)``
        receives the input bytes of finished files, at most every 200 ms and once at the end.

        **Object storage.** Either path of a job may be a URL ``s3://bucket/key`` (a ``str``:
        ``pathlib.Path`` merges its slashes, and such a path raises ``ValueError``). Requests go
        through Apache Arrow's ``object_store`` configured from the standard AWS environment
        (``AWS_ENDPOINT_URL``/``AWS_ENDPOINT``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
        ``AWS_SESSION_TOKEN``, ``AWS_REGION``/``AWS_DEFAULT_REGION``, ``AWS_ALLOW_HTTP``) with
        ``storage_options`` on top: ``AmazonS3ConfigKey`` names such as ``aws_endpoint``,
        ``aws_access_key_id``, ``aws_secret_access_key``, ``aws_session_token``, ``aws_region``,
        ``aws_allow_http``; an unknown name raises ``ValueError`` naming it.

        A remote input is fetched whole (one GET) and read as a local file of the same
        extension; row errors name the URL. A remote folder is written locally first (a
        ``.tmp-`` folder in ``$TMPDIR``, removed afterwards), then published with the local
        run's bytes in this order: (1) DELETE ``<folder>/manifest.json`` (readers now see no
        folder), (2) PUT the five arrays (multipart, parts in parallel, above 16 MiB),
        ``metadata.json`` and ``.hrm-data``, (3) PUT ``manifest.json`` last. A folder with a
        manifest is complete and matches it; a failure during (2) leaves it without one; a
        failure before (1) (a bad row) leaves the previous folder as it was. No sync.

        Errors (returned per job like any other): ``PermissionError`` when credentials are
        refused (403, InvalidAccessKeyId, SignatureDoesNotMatch), naming the bucket and key;
        ``FileNotFoundError`` for a missing bucket (naming it) or object (naming the URL);
        ``OSError`` otherwise. A refused or failed request's ``filename`` is the URL (a body
        cut off while it downloads raises ``OSError`` naming the URL in its message).
        """

def concatenate_token_arrays(
    destination: str | PathLike[str],
    header: bytes,
    sources: list[tuple[str | PathLike[str], str, int, int]],
    dtype: str,
    workers: int = 2,
    block_elements: int = 524288,
    progress: Callable[[int], object] | None = None,
) -> tuple[int | None, str, int]:
    """Write ``header``, then every source's elements cast to ``dtype`` (a numpy type string;
    the low bits are kept, as numpy's unsafe cast does), into ``destination``, fsynced.

    ``sources`` are ``(path, numpy type string, element count, byte offset of the data)``.
    ``workers`` threads copy blocks of ``block_elements`` without the GIL while the calling
    thread hashes them in file order; ``progress(elements)`` receives the elements hashed since
    its last call, at most every 200 ms and once at the end.
    Returns ``(largest source value or None, SHA-256 hex of the file, its size in bytes)``.
    Raises ``ValueError`` for a source shorter than its header says or an unsupported type,
    ``OSError`` for IO.
    """

PhiloxState = tuple[list[int], list[int], list[int], int, bool, int]

def philox_permutation(state: PhiloxState, n: int) -> tuple[list[int], PhiloxState]:
    """``Generator(Philox).permutation(n)`` from numpy's Philox state (counter, key, buffer,
    buffer_pos, has_uint32, uinteger); returns the permutation and the state after it."""

def read_span_columns(
    folders: list[str | PathLike[str]],
    fields: list[str],
    progress: Callable[[int], object] | None = None,
) -> tuple[list[bytes], list[int]] | None:
    """Every folder's ``<field>.npy`` (the four span fields), back to back as int64 bytes
    (unchecked: the span rule is ``hrm_assets.sampling.span_table``'s); returns ``(columns,
    rows per folder)``, or None when a file is not a plain 1-D array (as
    ``numpy.save`` or data_io's ``ndarray-npy`` write them) or a folder's arrays differ in
    length (read those some other way). ``progress(folders)`` is called at most every 200 ms
    and once at the end."""

def copy_byte_ranges(
    source: Buffer,
    target: Buffer,
    starts: Buffer,
    lengths: Buffer,
    destinations: Buffer,
) -> None:
    """Copy ``lengths[i]`` bytes of ``source`` from ``starts[i]`` to ``destinations[i]`` in
    ``target`` for every ``i``, without the GIL. ``source`` and ``target`` are byte buffers
    (``memoryview(array).cast("B")``), ``target`` writable; the others C-contiguous int64
    arrays. A range outside either buffer raises ValueError naming it, and nothing is copied."""

def read_npy_header(
    path: str | PathLike[str],
) -> tuple[str, bool, tuple[int, ...], int] | None:
    """``(descr, fortran_order, shape, data_offset)`` of the ``.npy`` file at ``path``, read from
    its header alone, when that is a version 1.0 header of a 1-D integer array as
    ``numpy.save`` or data_io's ``ndarray-npy`` write it (``descr`` as the header spells it, for
    ``numpy.dtype``); None for any other header or a file shorter than its header (numpy's own
    parser reads those). The data's length is not checked. ``OSError`` (with errno and
    filename) if the file cannot be read."""

def scan_arrays(
    paths: list[str | PathLike[str]],
    num_threads: int | None = None,
) -> list[tuple[int, str, str | None, int | None, int | None] | OSError]:
    """Read each file of ``paths`` once, in parallel on ``num_threads`` threads (None: one per
    core) without the GIL (``rust_tokenizer/src/scan.rs``). Each slot holds ``(size in bytes,
    SHA-256 hex, descr, length, largest value)``: the last three are None unless the file is a
    version 1.0 ``.npy`` of a 1-D integer array as ``numpy.save`` or data_io's ``ndarray-npy``
    write it (``descr`` as its header spells it, for ``numpy.dtype``) holding all the data its
    header announces, and the largest value is None for an empty array. A file that cannot be
    read gets, in its slot, the ``OSError`` its read raised (with errno and filename); the
    other files are still read."""

def write_epoch_arrays(
    output_dir: str | PathLike[str],
    fields: list[tuple[str, object]],
    lengths: object,
    tasks: list[tuple[int, int]],
    epochs: int,
    state: PhiloxState,
    hits: object,
    progress: Callable[[], object] | None = None,
) -> tuple[list[int], list[tuple[str, int, str]], PhiloxState]:
    """Draw ``epochs`` epochs as data_io does and write ``output_dir/epoch_<n>/<field>.npy``
    (int64, fsynced) for the four ``(field, int64 array)`` of ``fields``. ``lengths`` (int64)
    are the rows' tokens, ``tasks`` ``(rows, rows_per_epoch)`` in table order; ``hits`` (a
    writable int64 array) gets each row's draw count added. ``progress()`` runs after each
    epoch; an exception it raises stops the draw. Returns ``(tokens per epoch, [(relative
    path, size, sha256)], state after)``. ``OSError`` (with errno and filename) for IO.
    """

class NgramIndex:
    """A hashed word-n-gram index of evaluation items (``rust_tokenizer/src/ngram/``).

    Texts are compared by their words after the normalization of docs/CONTAMINATION.md
    (lowercased runs of alphanumeric characters). An item of at least ``n`` words is indexed as
    its windows of ``n`` words; one of ``min_words`` to ``n - 1`` words is indexed whole; a
    shorter one is not indexed. ``ValueError`` if ``n`` is 0 or ``min_words`` not in
    ``1..=n``.
    """

    def __init__(self, n: int = 13, min_words: int = 8) -> None: ...
    @property
    def n(self) -> int: ...
    @property
    def min_words(self) -> int: ...
    def __len__(self) -> int: ...
    def add(self, set: int, texts: list[str], first_item: int = 0) -> tuple[int, int, int]:
        """Index ``texts`` as items ``first_item, first_item + 1, ...`` of evaluation set
        ``set``; returns how many were indexed as windows, indexed whole, and too short. A
        window already indexed keeps its first (set, item)."""
    def scan(self, texts: list[str]) -> list[tuple[int, int, int, int, int] | None]:
        """For each text, None or ``(set, item, start, end, windows)``: the evaluation item of
        its first matching window, the ``[start, end)`` character span covering every matching
        window, and the number of matching windows. In parallel, without the GIL."""
    def scan_file(
        self,
        path: str | PathLike[str],
        duplicates: DuplicateIndex | None = None,
        source: int = 0,
        batch_rows: int = 8192,
        max_span_chars: int = 300,
    ) -> tuple[int, list[tuple[int, int, int, int, int, int, int, str]], list[tuple[int, int]]]:
        """Both passes over the cleaned file ``path`` (JSONL or Parquet, read by the
        tokenizer's row reader) in one read, in parallel without the GIL: ``(rows, hits,
        repeated)``. ``hits``: the rows whose instruction (field 0) or else response (field 1)
        overlaps the index, as ``(row, field, set, item, start, end, windows, span)`` (``span``
        the matched text, at most ``max_span_chars`` characters). With ``duplicates`` the rows
        are recorded there as ``source``, and ``repeated`` holds ``(row, first source)`` of each
        row seen before. Rows count from 1. ``ValueError`` naming the file, row and field for a
        bad row; ``OSError`` if the file cannot be read."""

    def scan_files(
        self,
        paths: list[str | PathLike[str]],
        sources: list[int],
        duplicates: DuplicateIndex | None = None,
        batch_rows: int = 8192,
        max_span_chars: int = 300,
    ) -> list[
        tuple[int, list[tuple[int, int, int, int, int, int, int, str]], list[tuple[int, int]]]
    ]:
        """``scan_file`` of each of ``paths`` (``sources[i]`` being the source of
        ``paths[i]``), files in parallel; rows are recorded in ``duplicates`` in the order of
        ``paths``, as one file after the other would record them. The first file that fails,
        in that order, raises; ``ValueError`` if the lists differ in length."""

class DuplicateIndex:
    """Exact-duplicate keys seen so far and the source (a number) that first had each."""

    def __init__(self) -> None: ...
    def __len__(self) -> int: ...
    def add(self, source: int, keys: list[int]) -> list[int | None]:
        """Record ``keys`` of ``source``: for each, the source that had it first (``source``
        for a repeat within it) or None for a row not seen before."""
    def add_keys_file(self, source: int, path: str | PathLike[str]) -> list[tuple[int, int]]:
        """Record the keys of a duplicate-key sidecar (``duplicate_keys.u64``) as rows of
        ``source``; ``(row, first source)`` of each row repeating an earlier one (rows from 1).
        ``OSError`` if unreadable, ``ValueError`` if its size is not a multiple of 8."""

def normalized_words(text: str) -> list[str]:
    """The words of ``text`` after the contamination normalization (docs/CONTAMINATION.md)."""

def word_counts(texts: list[str]) -> list[int]:
    """How many words each text has after the contamination normalization (in parallel,
    without the GIL)."""

def duplicate_keys(instructions: list[str], responses: list[str]) -> list[int]:
    """The 64-bit exact-duplicate key of each row ``(instructions[i], responses[i])`` after the
    normalization; ``ValueError`` if the lists differ in length. In parallel, without the GIL."""

def json_lines(
    keys: list[str],
    offsets: list[Buffer],
    data: list[Buffer],
    valid: list[Buffer | None],
) -> bytes:
    """The rows of text columns as JSON lines, each byte for byte orjson's
    ``dumps({key: value, ...}) + b"\\n"``, keys in ``keys`` order, without the GIL. Column ``i``
    is ``offsets[i]`` (C-contiguous int64, rows + 1, Arrow's layout) into the bytes ``data[i]``,
    with ``valid[i]`` (uint8, one a row, 0: a null, written ``null``) or None. A bad shape or a
    value that is not UTF-8 raises ValueError naming the column and row (from 1)."""

class JsonLines:
    """``json_lines`` of one batch at a time, in a buffer kept from batch to batch (its
    memory touched once, not allocated again a batch) and read through the buffer protocol:
    ``file.write(lines)`` writes them without a copy."""

    def __init__(self) -> None: ...
    def __len__(self) -> int: ...
    def encode(
        self,
        keys: list[str],
        offsets: list[Buffer],
        data: list[Buffer],
        valid: list[Buffer | None],
    ) -> int:
        """Replace the lines held by those of the columns, as ``json_lines`` builds them
        (its errors too; the lines are then empty); returns their length in bytes.
        ``BufferError`` while a view of the lines is held."""

def gsm8k_rows(
    question: tuple[Buffer, Buffer, Buffer | None, int],
    answer: tuple[Buffer, Buffer, Buffer | None, int],
) -> tuple[bytes, bytes | None, bytes | None, bytes, bytes, bytes, bytes, bytes]:
    """GSM8K's rule on a batch's ``question`` and ``answer`` columns, each the buffers of an
    Arrow ``string`` array: (C-contiguous int32 offsets, rows + 1; the data; the validity
    bitmap or None; the bitmap's bit of row 0), in one pass without the GIL. A record gives the
    row ``(question.strip(), answer.split("#### ")[-1].strip())`` when its answer splits in
    two; a null answer, or a null question with such an answer, is malformed; another answer
    is skipped with its number of pieces. Returns ``(records, instruction_offsets,
    instructions, response_offsets, responses, malformed, bad_answers, pieces)``: positions
    in the batch and piece counts as int64 bytes, the two columns' Arrow ``string`` buffers
    (int32 offsets, data), the instruction's None when every record gives its row and keeps
    its whole question (the question column is the instruction column). Text that is not
    UTF-8 is kept (stripping stops at it); buffers that are not one Arrow array raise
    ValueError."""

def spill_groups(
    fd: int,
    position: int,
    columns: list[list[tuple[Buffer, Buffer]]],
    order: Buffer | None,
    bounds: Buffer,
) -> list[int]:
    """Write the groups of a batch's text columns into the open file ``fd`` from
    ``position``, one after the other, without the GIL. ``columns[i]`` is column ``i``'s
    chunks, each ``(offsets, data)``: C-contiguous int64 offsets (its rows + 1) into its data;
    group ``g`` is the rows ``order[bounds[g]:bounds[g+1]]`` of the chunks joined (int64;
    ``order`` None: the rows in batch order). A group
    of ``rows`` rows takes, for each column, ``8 * rows`` bytes of end offsets and its text.
    Returns the text bytes of each group's columns, group by group. A shape that names rows
    the columns lack raises ValueError; a failed write OSError."""

def memory_groups(
    columns: list[list[tuple[Buffer, Buffer]]],
    order: Buffer | None,
    bounds: Buffer,
) -> tuple[bytes, list[int]]:
    """The groups of ``spill_groups`` in a new ``bytes`` instead of a file, and their text
    sizes."""

def gather_groups(
    groups: list[tuple[int | Buffer, int, int, list[int]]],
    columns: int,
) -> list[tuple[bytes, bytes, int]]:
    """Stored groups, each ``(source, position, rows, text)`` (``source``: the descriptor of
    its spill file or its memory block; ``text``: its columns' text bytes as
    ``spill_groups`` gave them), joined in order: for each of the ``columns``, its offsets,
    its text and the offsets' width (4: Arrow ``string``, 8: ``large_string``). The text is
    read without the GIL, straight into place. A file shorter than its groups raises
    OSError."""

def question_answer_lines(
    block: Buffer,
    pending: bytes | None,
    first_line: int,
    last: bool,
) -> tuple[int, int, bytes, bytes, bytes, bytes, bytes | None]:
    """The question/answer pairs of the whole lines of ``block`` (a UTF-8 text file's bytes
    from where the previous block's lines ended: ``bytes``, or a view of the mapped file),
    after ``pending``, the question the previous block left without an answer. Lines end at
    ``\\n``, ``\\r\\n`` or ``\\r`` as in Python's text mode (not at the other ends
    ``str.splitlines`` knows) and are stripped as ``str.strip()`` does; ``last``: the block
    ends the file (text after the last line end is a line). Returns ``(consumed, lines,
    question_offsets, questions, answer_offsets, answers, unpaired)``: the bytes of ``block``
    its lines take (the rest starts the next block), their number, each column's Arrow
    ``large_string`` buffers (int64 offsets, data) and the unpaired last question or None.
    Text that is not UTF-8 raises ValueError naming the line (counted from ``first_line``,
    the file's number of the block's first line) and the byte."""
