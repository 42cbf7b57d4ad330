"""What a tokenizer trains on when cleaned roots are adopted: every cleaned file of the roots,
links to files followed (a Hub cache), or the cleaned objects of ``s3://`` roots (read only
when a tokenizer is trained, their hashes kept in the memo file). Never written."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hrm_assets.adoption.cleaned import scan_adopted
from hrm_assets.adoption.objects import AdoptedObjects
from hrm_assets.common.storage import Location, ObjectRoot
from hrm_assets.tokenizer.train import LocalCorpus, TrainingCorpus


def adopted_corpus(roots: Sequence[Location], memo_file: Path) -> TrainingCorpus | None:
    """The training corpus of the adopted ``roots`` (None when there are none: the cleaned
    root is ours). Roots are all folders or all in object storage (settings refuse a mix)."""
    if not roots:
        return None
    in_buckets = [root for root in roots if isinstance(root, ObjectRoot)]
    if in_buckets:
        return AdoptedObjects(in_buckets, memo_file).training_corpus()
    return LocalCorpus(scan_adopted([Path(root) for root in roots]).files)
