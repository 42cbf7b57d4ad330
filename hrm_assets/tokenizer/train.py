"""Byte-level BPE training in data_io's configuration, with the Python ``tokenizers`` package.

The tokenizer matches data_io's ``train_tokenizer`` binary: NFC normalisation, data_io's split
regex (isolated), ByteLevel without prefix space or regex, BPE with ``min_frequency=2`` and the
31 special tokens, every instruction and response a document truncated to 10,000 characters,
and per-file caps of ``prefix_config.yaml`` times 10.

Deliberate differences (the trained vocabulary differs anyway, since data_io samples capped
files with Rust's ``DefaultHasher`` + PCG64):
- capped files are subsampled with ``numpy.random.Generator(Philox(seed ^ crc32(name)))``;
- the 256 ByteLevel symbols are always in the initial alphabet, so no byte of any later text
  can be silently dropped for want of a token (data_io's tokenizer drops unseen bytes).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from hrm_assets.cleaning.rows import iter_cleaned_rows
from hrm_assets.common.atomic import atomic_write_bytes, atomic_write_text
from hrm_assets.common.build_record import read_record
from hrm_assets.common.hashing import file_sha256, value_sha256
from hrm_assets.common.layout import CleanedFile, scan_cleaned_files
from hrm_assets.contracts.prefix_rules import PrefixRule, rule_for

if TYPE_CHECKING:
    from tokenizers import Tokenizer

DEFAULT_VOCAB_SIZE = 65_536
TRUNCATE_CHARS = 10_000
CAP_MULTIPLIER = 10

SPLIT_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)

SPECIAL_TOKENS = (
    "<|PAD|>",
    "<|direct|>", "<|cot|>", "<|noisy|>", "<|synth|>",
    "<|endoftext|>",
    "<|im_start|>", "<|im_end|>",
    "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>",
    "<|quad_start|>", "<|quad_end|>",
    "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>",
    "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>",
    "<tool_call>", "</tool_call>",
    "<tool_response>", "</tool_response>",
    "<think>", "</think>",
)  # fmt: skip


def build_untrained_tokenizer() -> Tokenizer:
    """An empty BPE tokenizer with data_io's normaliser, pre-tokenizer and decoders."""
    from tokenizers import (
        Regex,
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
    )

    tokenizer = Tokenizer(models.BPE())
    tokenizer.normalizer = normalizers.NFC()
    byte_level = dict(add_prefix_space=False, trim_offsets=False, use_regex=False)
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(SPLIT_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(**byte_level),
        ]
    )
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


def train_tokenizer(
    documents: Iterable[str], vocab_size: int = DEFAULT_VOCAB_SIZE, show_progress: bool = False
) -> Tokenizer:
    """Train data_io's BPE on already-truncated documents."""
    if vocab_size < len(SPECIAL_TOKENS) + 256:
        raise ValueError(
            f"vocab_size {vocab_size} is too small: it must hold the {len(SPECIAL_TOKENS)} "
            "special tokens and the 256 byte symbols"
        )
    from tokenizers import pre_tokenizers, trainers

    tokenizer = build_untrained_tokenizer()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        show_progress=show_progress,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(documents, trainer=trainer)
    return tokenizer


def truncate_chars(text: str, limit: int = TRUNCATE_CHARS) -> str:
    return text[:limit]


def file_documents(item: CleanedFile, rules: list[PrefixRule], seed: int = 0) -> list[str]:
    """One file's training documents: each instruction and response, truncated, then capped.

    A file whose rule has ``max_per_file`` keeps at most ``10 * max_per_file`` documents,
    chosen by a per-file seeded permutation.
    """
    docs: list[str] = []
    for row in iter_cleaned_rows(item.path):
        docs.append(truncate_chars(row.instruction))
        docs.append(truncate_chars(row.response))
    cap = rule_for(item.safe_name, rules).max_per_file
    if cap is not None and len(docs) > CAP_MULTIPLIER * cap:
        limit = CAP_MULTIPLIER * cap
        import numpy as np

        file_seed = seed ^ zlib.crc32(item.safe_name.encode("utf-8"))
        rng = np.random.Generator(np.random.Philox(file_seed))
        chosen = np.sort(rng.permutation(len(docs))[:limit])
        docs = [docs[i] for i in chosen]
    return docs


def corpus_documents(
    cleaned_roots: list[Path],
    rules: list[PrefixRule],
    seed: int = 0,
    files: Sequence[CleanedFile] | None = None,
) -> Iterator[tuple[CleanedFile, list[str]]]:
    """Every cleaned file's documents (of ``files`` when given, else of the files under
    ``cleaned_roots``), file by file in safe-name order."""
    chosen = scan_cleaned_files(cleaned_roots) if files is None else list(files)
    for item in sorted(chosen, key=lambda item: item.safe_name):
        yield item, file_documents(item, rules, seed)


def vocab_size_of(tokenizer: Tokenizer) -> int:
    """Vocabulary size including added tokens, as data_io records it."""
    return tokenizer.get_vocab_size(with_added_tokens=True)


@dataclass(frozen=True)
class TokenizerOutcome:
    path: Path
    sha256: str
    vocab_size: int
    trained: bool  # False when adopted from a given file or kept from an earlier training
    documents: int
    corpus_changed: bool = False  # kept, although the cleaned corpus changed since training
    adopted: bool = False  # a tokenizer.json this project did not write: recorded, never touched


class TokenizerOwnershipError(ValueError):
    """A step would replace a ``tokenizer.json`` this project did not write."""


def record_path_of(out_path: Path) -> Path:
    """The build record kept next to ``tokenizer.json``: ``tokenizer.json.inputs.json``."""
    out_path = Path(out_path)
    return out_path.with_name(out_path.name + ".inputs.json")


def is_ours(out_path: Path) -> bool:
    """True when ``out_path`` was written by :func:`build_tokenizer` (trained, or copied from a
    given file): its build record is there and names the file's current SHA-256.

    A record without ``sha256`` was written before the record held one; it still marks the
    file as ours. A file whose bytes no longer match its record was replaced by someone else,
    and is then theirs.
    """
    record = read_record(record_path_of(out_path))
    if record is None or not Path(out_path).is_file():
        return False
    if "sha256" not in record:
        return True
    return file_sha256(out_path) in (record["sha256"], record.get("pending_sha256"))


class TrainingCorpus(Protocol):
    """The cleaned files a tokenizer trains on: their content entries (for the build record's
    fingerprint, without reading rows) and, for training, the files to read."""

    def entries(self) -> list[tuple[str, int, str]]:
        """(safe name, size, SHA-256) of each file."""
        ...

    def opened(self) -> contextlib.AbstractContextManager[Sequence[CleanedFile]]:
        """The files as local paths while the context is open."""
        ...


@dataclass(frozen=True)
class LocalCorpus:
    """Cleaned files on this machine (links to files are read through)."""

    files: Sequence[CleanedFile]

    def entries(self) -> list[tuple[str, int, str]]:
        return [(f.safe_name, f.path.stat().st_size, file_sha256(f.path)) for f in self.files]

    def opened(self) -> contextlib.AbstractContextManager[Sequence[CleanedFile]]:
        return contextlib.nullcontext(list(self.files))


def _corpus_fingerprint(corpus: TrainingCorpus) -> str:
    return value_sha256(sorted(corpus.entries()))


def _write_owned(out_path: Path, data: bytes, record: dict) -> str:
    """Write ``data`` to ``out_path`` (only when its bytes change) and its build record;
    returns the file's SHA-256.

    The record is written first, naming both the bytes there now and the bytes to come, so a
    crash between the two writes leaves a file that is still ours (and, without settings in
    that record, is trained again rather than kept)."""
    digest = hashlib.sha256(data).hexdigest()
    record_path = record_path_of(out_path)
    if not out_path.exists() or out_path.read_bytes() != data:
        before = file_sha256(out_path) if out_path.exists() else None
        atomic_write_text(record_path, json.dumps({"sha256": before, "pending_sha256": digest}))
        atomic_write_bytes(out_path, data)
    atomic_write_text(record_path, json.dumps({**record, "sha256": digest}))
    return digest


def _adopted(out_path: Path, log: Callable[[str], None]) -> TokenizerOutcome:
    """The outcome of a ``tokenizer.json`` someone else wrote: read, hashed, never written."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(out_path))
    digest = file_sha256(out_path)
    vocab = vocab_size_of(tokenizer)
    log(
        f"adopting {out_path} (not trained by hrm-data: no build record of ours beside it): "
        f"sha256 {digest[:12]}, {vocab:,} ids; it is never modified"
    )
    return TokenizerOutcome(out_path, digest, vocab, False, 0, adopted=True)


def adopted_tokenizer(
    out_path: Path, log: Callable[[str], None] = lambda message: None
) -> TokenizerOutcome | None:
    """The outcome of adopting the ``tokenizer.json`` at ``out_path`` when this project did
    not write it (None when there is none, or it is ours); nothing is written."""
    out_path = Path(out_path)
    if not out_path.is_file() or is_ours(out_path):
        return None
    return _adopted(out_path, log)


def build_tokenizer(
    cleaned_root: Path,
    out_path: Path,
    rules: list[PrefixRule],
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    seed: int = 0,
    adopt_path: Path | None = None,
    retrain: bool = False,
    log: Callable[[str], None] = lambda message: None,
    corpus: TrainingCorpus | None = None,
) -> TokenizerOutcome:
    """Write ``out_path`` (a ``tokenizer.json``): adopt ``adopt_path``, or train on the corpus:
    the files under ``cleaned_root``, or ``corpus`` when given (an adopted corpus's files,
    links or objects included; read only when a tokenizer is trained).

    A ``tokenizer.json`` already at ``out_path`` that this project did not write (no build
    record of ours, see :func:`is_ours`: data_io's shipped tokenizer, a Hub download) is
    adopted: hashed and reported, never written. Replacing it, by training (``retrain``) or
    by copying another file there (``adopt_path``), raises :class:`TokenizerOwnershipError`:
    a tokenizer is trained into a folder of its own.

    A new tokenizer re-tokenizes the whole corpus, so an existing one trained with the same
    settings (vocab size, seed, rules) is kept even when the corpus changed since (reported as
    ``corpus_changed``); ``retrain=True`` trains anew. Files are only written when their bytes
    change, atomically.
    """
    from tokenizers import Tokenizer

    out_path = Path(out_path)
    foreign = out_path.exists() and not is_ours(out_path)
    if adopt_path is not None:
        data = Path(adopt_path).read_bytes()
        tokenizer = Tokenizer.from_file(str(adopt_path))
        if foreign:
            if out_path.read_bytes() != data:
                raise TokenizerOwnershipError(
                    f"{out_path} was not written by hrm-data and differs from {adopt_path}: it "
                    "is not replaced; point the tokenizer root at another folder to use "
                    f"{adopt_path}"
                )
            return _adopted(out_path, log)
        digest = _write_owned(out_path, data, {"copied_from": str(adopt_path)})
        return TokenizerOutcome(out_path, digest, vocab_size_of(tokenizer), False, 0)

    if foreign:
        if retrain:
            raise TokenizerOwnershipError(
                f"retrain refused: {out_path} was not trained by hrm-data (no build record of "
                "ours beside it) and is never replaced in place; to train a tokenizer, point "
                "HRM_TOKENIZER_ROOT at another folder (the adopted one stays as it is)"
            )
        return _adopted(out_path, log)

    if corpus is None:
        corpus = LocalCorpus(scan_cleaned_files(cleaned_root))
    settings = value_sha256(
        {
            "vocab_size": vocab_size,
            "seed": seed,
            "rules": [rule.model_dump() for rule in rules],
            "special": SPECIAL_TOKENS,
        }
    )
    fingerprint = _corpus_fingerprint(corpus)
    record = read_record(record_path_of(out_path))
    if not retrain and out_path.exists() and record and record.get("settings") == settings:
        changed = record.get("corpus") != fingerprint
        log(
            "keeping tokenizer.json"
            + (": the corpus changed since training (retrain to use it)" if changed else "")
        )
        tokenizer = Tokenizer.from_file(str(out_path))
        return TokenizerOutcome(
            out_path,
            file_sha256(out_path),
            vocab_size_of(tokenizer),
            False,
            record.get("documents", 0),
            changed,
        )

    documents: list[str] = []
    with corpus.opened() as files:
        for item, docs in corpus_documents([Path(cleaned_root)], rules, seed, files):
            log(f"{item.safe_name}: {len(docs):,} documents")
            documents.extend(docs)
    log(f"training BPE (vocab {vocab_size:,}) on {len(documents):,} documents")
    tokenizer = train_tokenizer(documents, vocab_size=vocab_size)
    digest = _write_owned(
        out_path,
        tokenizer.to_str(pretty=True).encode("utf-8"),
        {"settings": settings, "corpus": fingerprint, "documents": len(documents)},
    )
    return TokenizerOutcome(out_path, digest, vocab_size_of(tokenizer), True, len(documents))
