"""Writing a run's data card into its output folder: ``datacard.json`` and ``DATACARD.md``.

The sampler calls :func:`write_sampled_data_card` on its staged folder after writing
``manifest.json``, so the card goes into place with the epochs in the one atomic rename, and a
folder in place always holds the card of its own bytes. The card files are not listed in the
manifest (which lists what HRM-Text reads, and which the card describes); the sampler's
ownership rule (``hrm_assets.sampling.output_folder``) knows them by name.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hrm_assets.common.atomic import atomic_write_bytes, atomic_write_text
from hrm_assets.common.manifest import manifest_bytes
from hrm_assets.contracts.cleaned_provenance import credited_corpora
from hrm_assets.sampling.datacard.builder import PrefixConfigRecord, build_data_card
from hrm_assets.sampling.datacard.canonical_json import canonical_json_bytes
from hrm_assets.sampling.datacard.code_version import code_version
from hrm_assets.sampling.datacard.markdown import render_markdown
from hrm_assets.sampling.datacard.task_sources import sources_of_tasks
from hrm_assets.sampling.prefix_config import PrefixConfigError, PrefixRule, load_prefix_rules

if TYPE_CHECKING:
    from hrm_assets.sampling.result import SamplingResult

DATACARD_JSON = "datacard.json"
DATACARD_MARKDOWN = "DATACARD.md"
CARD_FILES = (DATACARD_JSON, DATACARD_MARKDOWN)


class DataCardError(ValueError):
    """The card cannot be written truthfully; the message names the file and the problem."""


def read_prefix_config(path: Path, rules_applied: Sequence[PrefixRule]) -> PrefixConfigRecord:
    """The rules file verbatim, checked to still hold ``rules_applied`` (the rules the run
    read from it earlier): a file edited while sampling would publish rules that were not
    applied, so that is a :class:`DataCardError` naming the file."""
    path = Path(path)
    try:
        data = path.read_bytes()
        text = data.decode("utf-8")
        # The sampler's own parser (data_io's list, or rules beside a mixture), then the bytes
        # again: the rules compared are those of the text published.
        rules = load_prefix_rules(path)
        unchanged = path.read_bytes() == data
    except (OSError, UnicodeDecodeError, PrefixConfigError) as exc:
        raise DataCardError(f"{path}: unreadable after sampling: {exc}") from None
    if not unchanged or rules != list(rules_applied):
        raise DataCardError(
            f"{path}: prefix_config changed while sampling; the rules applied are no longer "
            f"the file's, so no data card can name them (sample again)"
        )
    return PrefixConfigRecord(
        file_name=path.name,
        text=text,
        sha256=hashlib.sha256(data).hexdigest(),
        rules=[rule.model_dump() for rule in rules],
    )


def write_data_card(folder: Path, card: Mapping[str, Any]) -> None:
    """Write ``datacard.json`` (canonical JSON) and ``DATACARD.md`` into ``folder``, each
    atomically."""
    folder = Path(folder)
    try:
        data = canonical_json_bytes(card)
    except (TypeError, ValueError) as exc:  # a figure JSON cannot hold, e.g. an infinite share
        raise DataCardError(f"{folder / DATACARD_JSON}: cannot be written: {exc}") from None
    atomic_write_bytes(folder / DATACARD_JSON, data)
    # Rendered from the figures as datacard.json holds them (rounded), as hrm-verify renders
    # them: a share of 0.0143499 would otherwise read 1.43% here and 1.44% there.
    atomic_write_text(folder / DATACARD_MARKDOWN, render_markdown(json.loads(data)))


def write_sampled_data_card(
    folder: Path,
    result: SamplingResult,
    *,
    manifest: Mapping[str, Any],
    rules: Sequence[PrefixRule],
    tokenizer_sha256: str | None,
) -> dict[str, Any]:
    """Build the card of a sampling run whose files (listed in ``manifest``, as written to
    ``folder/manifest.json``) are in ``folder`` and write it there; returns the card."""
    from hrm_assets.cleaning.sources import SOURCES
    from hrm_assets.contamination.datacard_section import contamination_section

    tasks = [task.name for task in result.tasks]
    card = build_data_card(
        result,
        files=manifest["files"],
        manifest_sha256=hashlib.sha256(manifest_bytes(dict(manifest))).hexdigest(),
        prefix_config=read_prefix_config(result.config.prefix_config_path, rules),
        tokenizer_sha256=tokenizer_sha256,
        code=code_version(),
        specs=SOURCES,
        cleaned_corpora=credited_corpora(result.config.tokenized_path, tasks),
        contamination=contamination_section(
            result.config.tokenized_path, tasks, sources_of_tasks(tasks, SOURCES)
        ),
    )
    write_data_card(folder, card)
    return card


def read_data_card(folder: Path) -> dict[str, Any] | None:
    """The card of a sampled folder, or ``None`` if it has none (sampled before cards)."""
    try:
        return json.loads((Path(folder) / DATACARD_JSON).read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise DataCardError(f"{Path(folder) / DATACARD_JSON}: unreadable: {exc}") from None
