"""The tokenizer build wherever its roots are: the cleaned files and the tokenizer folder on
disk or in object storage (:class:`~hrm_assets.common.data_root.DataRoot`).

A root in object storage is worked on through its working copy: the cleaned objects and the
tokenizer's files are brought down first (only those whose ETag changed), the tokenizer is
built there, and its files are put back when they changed. An adopted tokenizer (a
``tokenizer.json`` hrm-data did not write) is the user's: nothing is uploaded over it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hrm_assets.common.data_root import DataRoot
from hrm_assets.common.hashing import file_sha256
from hrm_assets.common.layout import is_cleaned_name, is_temporary
from hrm_assets.common.object_mirror import mirror_tree, note_uploaded
from hrm_assets.common.settings import TOKENIZER_JSON
from hrm_assets.common.storage import ObjectStore
from hrm_assets.contracts.prefix_rules import PrefixRule
from hrm_assets.tokenizer.train import (
    TokenizerOutcome,
    TrainingCorpus,
    build_tokenizer,
    record_path_of,
)

# The tokenizer folder's files: the tokenizer and the record of what it was trained on.
TOKENIZER_FILES = (TOKENIZER_JSON, record_path_of(Path(TOKENIZER_JSON)).name)


@dataclass(frozen=True)
class TokenizerBuild:
    """A build's outcome and where its ``tokenizer.json`` is (a path, or its object's URL)."""

    outcome: TokenizerOutcome
    where: str


def is_cleaned_object(relative: str) -> bool:
    return is_cleaned_name(relative.rsplit("/", 1)[-1]) and not is_temporary(relative)


def build_tokenizer_at(
    cleaned: DataRoot,
    tokenizer: DataRoot,
    *,
    rules: list[PrefixRule],
    vocab_size: int,
    seed: int,
    adopt_path: Path | None,
    retrain: bool,
    log: Callable[[str], None],
    corpus: TrainingCorpus | None,
) -> TokenizerBuild:
    """:func:`~hrm_assets.tokenizer.train.build_tokenizer` over ``cleaned`` into
    ``tokenizer``, either of which may be in object storage; ``corpus`` (adopted cleaned
    roots) replaces the cleaned root's files. Raises what ``build_tokenizer`` raises."""
    if cleaned.remote is not None and corpus is None:
        mirror_tree(cleaned.remote, select=is_cleaned_object)
    if tokenizer.remote is not None:
        mirror_tree(tokenizer.remote, select=lambda relative: relative in TOKENIZER_FILES)
    outcome = build_tokenizer(
        cleaned_root=cleaned.local,
        out_path=tokenizer.local / TOKENIZER_JSON,
        rules=rules,
        vocab_size=vocab_size,
        seed=seed,
        adopt_path=adopt_path,
        retrain=retrain,
        log=log,
        corpus=corpus,
    )
    if tokenizer.remote is None or outcome.adopted:
        return TokenizerBuild(outcome, str(outcome.path))
    upload_changed(ObjectStore(tokenizer.remote), tokenizer.local, TOKENIZER_FILES)
    return TokenizerBuild(outcome, str(tokenizer.remote.join(TOKENIZER_JSON)))


def upload_changed(store: ObjectStore, folder: Path, names: tuple[str, ...]) -> None:
    """PUT each local file whose SHA-256 differs from its object's; delete the objects of
    files that are gone (ours: they carry our SHA-256)."""
    heads = store.head_many(names)
    uploaded = []
    for name in names:
        path, known = folder / name, heads[name]
        if path.is_file():
            digest = file_sha256(path)
            if known is None or known.sha256 != digest:
                store.put_file(name, path, sha256=digest)
                uploaded.append(name)
        elif known is not None and known.sha256:
            store.delete([name])
    # The working copy holds these bytes already: no download of them next time.
    note_uploaded(folder, store, uploaded)
