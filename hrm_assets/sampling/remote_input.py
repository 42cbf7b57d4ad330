"""A tokenized root in object storage, made readable by the sampler: the local working copy of
its complete folders, refreshed (only objects whose ETag changed are downloaded) and held under
its lock while the sampler reads it. The sampled asset and ``hrm-sample`` both sample this way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from hrm_assets.common.object_mirror import mirror_tree
from hrm_assets.common.settings import TOKENIZER_JSON
from hrm_assets.common.storage import Location, ObjectRoot, mirror_path


@contextlib.contextmanager
def readable_tokenized(
    tokenized: Location, tokenizer: Location | None, log: Callable[[str], object]
) -> Iterator[tuple[Path, Path | None]]:
    """The tokenized root to sample from, and the tokenizer to ship (None: the one
    ``tokenizer_info.json`` records). A local root is itself; a remote one is its working copy,
    refreshed first and locked while the caller reads it. A remote tokenizer folder
    (``tokenizer``) is refreshed too and its working copy's ``tokenizer.json`` shipped, if it
    has one."""
    shipped = None
    if isinstance(tokenizer, ObjectRoot):
        mirror_tree(tokenizer, select=lambda name: name == TOKENIZER_JSON)
        copied = mirror_path(tokenizer) / TOKENIZER_JSON
        shipped = copied if copied.is_file() else None
    if not isinstance(tokenized, ObjectRoot):
        yield tokenized, shipped
        return
    from hrm_assets.tokenization.remote import mirror_lock, mirror_tokenized

    local = mirror_path(tokenized)
    with mirror_lock(local):
        mirror_tokenized(tokenized, local)
        log(f"tokenized folders of {tokenized} refreshed into {local}")
        yield local, shipped
