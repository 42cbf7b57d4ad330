"""The ``tokenizer/`` folder of a sampled output, for HRM-Text's inference and export.

HRM-Text finds its tokenizer through ``tokenizer_info.tokenizer_path``, which the sampled
``metadata.json`` carries into a checkpoint's ``train_metadata.yaml``: its inference engine
passes that path to ``transformers.AutoTokenizer.from_pretrained``, and its Hugging Face export
does the same with the path's folder when the path names a ``tokenizer.json``, unless
``--tokenizer_path`` overrides it. data_io records the path its tokenizer was given, usually a
``tokenizer.json`` file (which ``from_pretrained`` cannot load), often relative, on the machine
that tokenized. So the sampler writes, next to the epochs, a folder ``from_pretrained`` loads:

    tokenizer/tokenizer.json           the bytes tokenization used (checked, copied as they are)
    tokenizer/tokenizer_config.json    PreTrainedTokenizerFast, BOQ as bos, EOA as eos
    tokenizer/special_tokens_map.json  the same bos and eos

(bos and eos as HRM-Text's export sets them). ``metadata.json`` keeps data_io's bytes, so its
``tokenizer_path`` is unchanged; ``docs/SAMPLING.md`` says how to point HRM-Text at the folder.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hrm_assets import _core
from hrm_assets.common.hashing import file_sha256
from hrm_assets.common.settings import TOKENIZER_JSON
from hrm_assets.tokenization.tokenize import resolve_tokenizer_json

TOKENIZER_DIR = "tokenizer"
TOKENIZER_CONFIG = "tokenizer_config.json"
SPECIAL_TOKENS_MAP = "special_tokens_map.json"
# transformers' class for a plain tokenizer.json; every release since 4.x loads it by this name.
TOKENIZER_CLASS = "PreTrainedTokenizerFast"


class TokenizerFolderError(ValueError):
    """The tokenizer cannot go with these epochs; the message names the file and the problem."""


@dataclass(frozen=True)
class TokenizerChoice:
    """The ``tokenizer.json`` to ship (``None``: none) and, if none, why not."""

    tokenizer_json: Path | None
    problem: str | None = None


def recorded_path_candidates(recorded: str, tokenized_path: Path) -> list[Path]:
    """Where ``tokenizer_info.tokenizer_path`` may point: as written (absolute, or relative to
    the current directory), then relative to the tokenized root (data_io's layout keeps
    ``trained_tokenizers/`` and the tokenized root side by side, and records the path relative
    to its ``tokenizer/`` folder)."""
    path = Path(recorded)
    if path.is_absolute():
        return [path]
    return [path, Path(tokenized_path) / path]


def check_tokenizer(
    tokenizer_json: Path, tokenizer_info: dict[str, Any], recorded_sha256: str | None
) -> None:
    """Raise :class:`TokenizerFolderError` unless ``tokenizer_json`` is the tokenizer the
    tokenized root was made with: the SHA-256 its task folders record (hrm-data's tokenizer
    records one; data_io's does not), the vocabulary size of ``tokenizer_info.json``, and every
    framing token of it in the vocabulary."""
    if recorded_sha256 is not None:
        digest = file_sha256(tokenizer_json)
        if digest != recorded_sha256:
            raise TokenizerFolderError(
                f"{tokenizer_json}: SHA-256 {digest[:12]} is not that of the tokenizer the "
                f"tokenized folders were made with ({recorded_sha256[:12]})"
            )
    framing = {key: tokenizer_info.get(key) for key in ("boq", "eoq", "eoa")}
    conditions = tokenizer_info.get("condition_mapping") or {}
    if not all(isinstance(token, str) for token in framing.values()) or not isinstance(
        conditions, dict
    ):
        raise TokenizerFolderError(
            "tokenizer_info.json lacks the framing tokens (boq, eoq, eoa, condition_mapping) "
            "a tokenizer config needs"
        )
    try:
        encoder = _core.Encoder(
            tokenizer_json, **framing, conditions=dict(conditions), engine="reference"
        )
    except ValueError as exc:
        raise TokenizerFolderError(f"{tokenizer_json}: {exc}") from None
    vocab_size = tokenizer_info.get("vocab_size")
    if vocab_size is not None and encoder.vocab_size != vocab_size:
        raise TokenizerFolderError(
            f"{tokenizer_json}: vocabulary of {encoder.vocab_size} tokens, but "
            f"tokenizer_info.json records {vocab_size}"
        )


def choose_tokenizer(
    given: Path | None,
    tokenizer_info: dict[str, Any],
    tokenized_path: Path,
    recorded_sha256: str | None,
) -> TokenizerChoice:
    """The ``tokenizer.json`` to ship with the epochs.

    ``given`` (a ``tokenizer.json`` or a folder holding one) must exist and pass
    :func:`check_tokenizer`, else :class:`TokenizerFolderError`. Without it the path
    ``tokenizer_info.json`` records is looked up (:func:`recorded_path_candidates`); when it is
    not found or fails the checks, no tokenizer is shipped and ``problem`` says why, since
    data_io samples such roots and so must we.
    """
    if given is not None:
        try:
            tokenizer_json = resolve_tokenizer_json(given)
        except FileNotFoundError as exc:
            raise TokenizerFolderError(f"tokenizer_path: {exc}") from None
        check_tokenizer(tokenizer_json, tokenizer_info, recorded_sha256)
        return TokenizerChoice(tokenizer_json)
    recorded = tokenizer_info.get("tokenizer_path")
    if not isinstance(recorded, str) or not recorded.strip():
        return TokenizerChoice(None, "tokenizer_info.json records no tokenizer_path")
    for candidate in recorded_path_candidates(recorded, tokenized_path):
        try:
            tokenizer_json = resolve_tokenizer_json(candidate)
        except FileNotFoundError:
            continue
        try:
            check_tokenizer(tokenizer_json, tokenizer_info, recorded_sha256)
        except TokenizerFolderError as exc:
            return TokenizerChoice(None, str(exc))
        return TokenizerChoice(tokenizer_json)
    return TokenizerChoice(
        None,
        f"tokenizer_info.json's tokenizer_path {recorded!r} is neither a tokenizer.json nor a "
        f"folder holding one, as written or under {tokenized_path}",
    )


def tokenizer_config(tokenizer_info: dict[str, Any], max_seq_len: int) -> dict[str, Any]:
    """``tokenizer_config.json``: the class to load, BOQ as bos and EOA as eos (as HRM-Text's
    export sets them), HRM-Text's ``max_seq_len`` as ``model_max_length``, and no clean-up of
    spaces on decoding (transformers 4 would otherwise drop spaces before punctuation)."""
    return {
        "tokenizer_class": TOKENIZER_CLASS,
        "bos_token": tokenizer_info["boq"],
        "eos_token": tokenizer_info["eoa"],
        "model_max_length": max_seq_len,
        "clean_up_tokenization_spaces": False,
    }


def special_tokens_map(tokenizer_info: dict[str, Any]) -> dict[str, str]:
    return {"bos_token": tokenizer_info["boq"], "eos_token": tokenizer_info["eoa"]}


def _json_bytes(value: dict[str, Any]) -> bytes:
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _write_synced(path: Path, data: bytes) -> dict[str, int | str]:
    """Write ``data``, fsync it, and return its manifest entry."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    return {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def write_tokenizer_folder(
    folder: Path, tokenizer_json: Path, tokenizer_info: dict[str, Any], max_seq_len: int
) -> dict[str, dict[str, int | str]]:
    """Write ``folder`` (inside the sampler's staged output, so it appears with the epochs or
    not at all); returns the manifest entry of each file by its path relative to the folder's
    parent (``tokenizer/tokenizer.json``, ...)."""
    folder.mkdir()
    files = {
        TOKENIZER_JSON: Path(tokenizer_json).read_bytes(),
        TOKENIZER_CONFIG: _json_bytes(tokenizer_config(tokenizer_info, max_seq_len)),
        SPECIAL_TOKENS_MAP: _json_bytes(special_tokens_map(tokenizer_info)),
    }
    return {
        f"{folder.name}/{name}": _write_synced(folder / name, data) for name, data in files.items()
    }
