"""Hub datasets as local folders: ``hf://datasets/<org>/<name>@<revision>[/<folder>]``.

A cleaned corpus published on the Hugging Face Hub (data_io's is
``sapientinc/HRM-Text-data-io-cleaned-20260515``) is adopted where the Hub's own tools keep it:
the snapshot folder of the local Hub cache (``$HF_HUB_CACHE``), downloaded there by
``huggingface_hub`` when missing. Its files are links into the cache's ``blobs/``, which
adoption follows; nothing is copied again. The revision is part of the address, so a pinned
commit keeps the corpus from changing under the tokenized folders made from it; a branch
(``@main``, also what no ``@`` means) is resolved once per process.
"""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path

HUB_SCHEME = "hf://"
_HUB_DATASET = re.compile(
    r"^hf://datasets/(?P<repo>[^/@]+/[^/@]+)(?:@(?P<revision>[^/]+))?(?P<folder>/.*)?$"
)


class HubAddressError(ValueError):
    """An ``hf://`` address that names no dataset snapshot we can use (one line)."""


def is_hub_address(value: str) -> bool:
    return value.startswith(HUB_SCHEME)


def parse_hub_address(address: str) -> tuple[str, str, str]:
    """``(repo id, revision, folder inside the snapshot)`` of a dataset address; the revision
    defaults to ``main`` and the folder to the snapshot's root (``""``).

    Raises :class:`HubAddressError` for anything but ``hf://datasets/<org>/<name>...``.
    """
    match = _HUB_DATASET.match(address)
    if match is None:
        raise HubAddressError(
            f"{address}: expected hf://datasets/<org>/<name>@<revision>[/<folder>]"
        )
    folder = (match["folder"] or "").strip("/")
    if ".." in folder.split("/"):
        raise HubAddressError(f"{address}: the folder must stay inside the snapshot")
    return match["repo"], match["revision"] or "main", folder


def hub_snapshot_folder(address: str) -> Path:
    """The local folder of a Hub dataset address: its snapshot in the Hub cache
    (``$HF_HUB_CACHE``, else huggingface_hub's default; downloaded when missing; offline, only
    the cache is read), plus the address's folder.

    Raises :class:`HubAddressError` naming the address when it is malformed, when the dataset
    or revision cannot be had (offline and not cached, unknown, refused), or when the folder is
    not in the snapshot.
    """
    return _snapshot_folder(address, os.environ.get("HF_HUB_CACHE") or None)


@cache
def _snapshot_folder(address: str, cache_dir: str | None) -> Path:
    repo_id, revision, folder = parse_hub_address(address)
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    try:
        snapshot = Path(
            snapshot_download(repo_id, repo_type="dataset", revision=revision, cache_dir=cache_dir)
        )
    except LocalEntryNotFoundError:
        raise HubAddressError(
            f"{address}: not in the Hub cache and the Hub is unreachable or disabled "
            "(HF_HUB_OFFLINE); download it once online, or adopt a local folder"
        ) from None
    except (HfHubHTTPError, OSError, ValueError) as error:
        raise HubAddressError(f"{address}: {error}".splitlines()[0]) from None
    root = snapshot / folder if folder else snapshot
    if not root.is_dir():
        raise HubAddressError(f"{address}: no folder {folder!r} in snapshot {snapshot}")
    return root
