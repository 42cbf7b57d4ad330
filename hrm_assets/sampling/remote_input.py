"""A tokenized root in object storage, made readable by the sampler: the local working copy of
its complete folders, refreshed (only objects whose ETag changed are downloaded) and held under
its lock while the sampler reads it. The sampled asset and ``hrm-sample`` both sample this way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from hrm_assets.common.data_root import DataRoot
from hrm_assets.common.settings import TOKENIZER_JSON


@contextlib.contextmanager
def readable_tokenized(
    tokenized: DataRoot, tokenizer: DataRoot | None, log: Callable[[str], object]
) -> Iterator[tuple[Path, Path | None]]:
    """The tokenized root to sample from, and the tokenizer to ship (None: the one
    ``tokenizer_info.json`` records). A local root is itself; a remote one is its working copy,
    refreshed first and locked while the caller reads it. A remote tokenizer folder
    (``tokenizer``) is refreshed too and its working copy's ``tokenizer.json`` shipped, if it
    has one."""
    shipped = None
    if tokenizer is not None and tokenizer.remote is not None:
        from hrm_assets.common.object_mirror import mirror_tree

        mirror_tree(tokenizer.remote, select=lambda name: name == TOKENIZER_JSON)
        copied = tokenizer.local / TOKENIZER_JSON
        shipped = copied if copied.is_file() else None
    if tokenized.remote is None:
        yield tokenized.local, shipped
        return
    from hrm_assets.tokenization.remote import mirror_lock, mirror_tokenized

    local = tokenized.local
    with mirror_lock(local):
        mirror_tokenized(tokenized.remote, local)
        log(f"tokenized folders of {tokenized} refreshed into {local}")
        yield local, shipped
