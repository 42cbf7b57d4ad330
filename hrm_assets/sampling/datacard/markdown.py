"""``DATACARD.md``: the data card for a person, rendered from the card dict alone.

Everything shown comes from ``datacard.json`` (:mod:`hrm_assets.sampling.datacard.builder`), so the
two files never disagree and the same card renders to the same bytes. The share of the mix is
drawn as text bars, which any Markdown viewer shows and which need no image file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from hrm_assets.sampling.defaults import SETTINGS

BAR_WIDTH = 30
UNREGISTERED = "(no registered source)"


def _num(value: int | None) -> str:
    return "n/a" if value is None else f"{value:,}"


def _pct(share: float) -> str:
    return f"{share:.2%}"


def _cell(value: Any) -> str:
    """A table cell: pipes escaped and line breaks flattened, so a name cannot break a row."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def _code(value: Any) -> str:
    """``value`` as inline code, fit for a table cell (GitHub's tables split cells at a pipe
    even inside code, unless it is escaped)."""
    text = _cell(value)
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    padding = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{padding}{text}{padding}{fence}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], align: str) -> list[str]:
    """``align``: one of ``l``/``r`` per column."""
    marks = {"l": "---", "r": "---:"}
    return [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join(marks[a] for a in align) + " |",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def _bar(share: float) -> str:
    filled = round(share * BAR_WIDTH)
    return "█" * filled + "·" * (BAR_WIDTH - filled)


def _source_name(name: str | None) -> str:
    return UNREGISTERED if name is None else name


def _rule_text(rule: Mapping[str, Any]) -> str:
    cap = "all" if rule["max_per_file"] is None else _num(rule["max_per_file"])
    prefix = "default" if rule["prefix"] is None else _code(rule["prefix"])
    return f"{prefix}: cap {cap}, x{rule['repeat']}, {rule['long_context']}"


def _summary(card: Mapping[str, Any]) -> list[str]:
    totals, sampling = card["totals"], card["sampling"]
    rows = [
        ("Sources", _num(len(card["sources"]))),
        ("Tasks (files)", _num(len(card["tasks"]))),
        ("Epochs", _num(sampling["epochs"])),
        ("Seed", _num(sampling["seed"])),
        ("Rows available", _num(totals["rows_available"])),
        ("Tokens available", _num(totals["tokens_available"])),
        ("Rows kept after the length rules", _num(totals["rows_kept"])),
        ("Rows dropped", _num(totals["rows_dropped"])),
        ("Rows truncated", _num(totals["rows_truncated"])),
        ("Rows per epoch", _num(totals["rows_per_epoch"])),
        ("Tokens per epoch (mean, data_io's total_length)", _num(sampling["total_length"])),
        ("Rows sampled, all epochs", _num(totals["sampled_rows"])),
        ("Tokens sampled, all epochs", _num(totals["sampled_tokens"])),
        ("Unique rows sampled", _num(totals["unique_rows"])),
        ("Unique tokens sampled", _num(totals["unique_tokens"])),
    ]
    return ["## Summary", "", *_table(["Figure", "Value"], rows, "lr")]


def _shares(card: Mapping[str, Any]) -> list[str]:
    sources = sorted(card["sources"], key=lambda s: (-s["sampled_tokens"], _source_name(s["name"])))
    rows = [
        (
            _cell(_source_name(s["name"])),
            _num(s["sampled_tokens"]),
            _pct(s["token_share"]),
            _pct(s["row_share"]),
            f"`{_bar(s['token_share'])}`",
        )
        for s in sources
    ]
    return [
        "## Share of the mix per source",
        "",
        "Shares of the tokens and rows sampled over all epochs.",
        "",
        *_table(["Source", "Sampled tokens", "Token share", "Row share", ""], rows, "lrrrl"),
    ]


def _sources(card: Mapping[str, Any]) -> list[str]:
    rows = []
    for s in card["sources"]:
        hub = _code(s["hub_id"]) if s["hub_id"] else "local only"
        revision = _code(s["hub_revision"]) if s["hub_revision"] else "unpinned (default branch)"
        if not s["hub_id"]:
            revision = "n/a"
        rows.append(
            (
                _cell(_source_name(s["name"])),
                hub,
                revision,
                _num(s["tasks"]),
                _num(s["rows_available"]),
                _num(s["tokens_available"]),
                _num(s["rows_dropped"]),
                _num(s["rows_truncated"]),
                _num(s["rows_per_epoch"]),
                _num(round(s["sampled_tokens_per_epoch"])),
                _pct(s["token_share"]),
            )
        )
    header = [
        "Source",
        "Hub dataset",
        "Revision",
        "Tasks",
        "Rows available",
        "Tokens available",
        "Dropped",
        "Truncated",
        "Rows / epoch",
        "Tokens / epoch",
        "Share",
    ]
    return ["## Sources", "", *_table(header, rows, "lllrrrrrrrr")]


def _cleaned_corpora(corpora: Sequence[Mapping[str, Any]]) -> list[str]:
    rows = [
        (
            _code(c["hub_id"]),
            _code(c["revision"]) if c["revision"] else "unpinned",
            _num(c["tasks"]),
        )
        for c in corpora
    ]
    return [
        "## Cleaned corpus",
        "",
        "The rows come from this published cleaned corpus, made from the Hub datasets above:",
        "",
        *_table(["Hub dataset", "Revision", "Tasks"], rows, "llr"),
    ]


def _contamination(section: Mapping[str, Any]) -> list[str]:
    """docs/CONTAMINATION.md: rows sharing a word n-gram with an evaluation set, and exact
    duplicates of (instruction, response), from the tokenized folders' sidecars."""
    sets = section["scanned_against"]
    if sets:
        sizes = ", ".join(str(n) for n in section["n"])
        scanned = f"against {', '.join(_code(name) for name in sets)} (n = {sizes} words)"
    else:
        scanned = "against no evaluation set (none was saved when these folders were tokenized)"
    header = ["Source", "Rows", "Rows scanned", "Rows hit", *sets, "Duplicate rows"]
    rows = [
        (
            _source_name(s["name"]),
            _num(s["rows"]),
            _num(s["rows_scanned"]),
            _num(s["rows_hit"]),
            *(_num(s["hits_by_set"].get(name, 0)) for name in sets),
            _num(s["duplicate_rows"]),
        )
        for s in section["sources"]
    ]
    lines = [
        "## Contamination and duplicates",
        "",
        f"The sampled tasks' rows as tokenized (before the length rules), scanned {scanned}, "
        "and rows repeating an earlier row after normalization (docs/CONTAMINATION.md).",
        "",
        *_table(header, rows, "l" + "r" * (len(header) - 1)),
    ]
    if section["tasks_without_sidecars"]:
        lines += ["", f"{_num(section['tasks_without_sidecars'])} task(s) were not checked."]
    pairs = [
        (_source_name(p["first"]), _source_name(p["later"]), _num(p["rows"]))
        for p in section["duplicate_pairs"]
    ]
    if pairs:
        lines += ["", *_table(["First copy in", "Repeated in", "Rows"], pairs, "llr")]
    return lines


def _tasks(card: Mapping[str, Any]) -> list[str]:
    rows = [
        (
            _cell(t["name"]),
            _cell(_source_name(t["source"])),
            _rule_text(t["rule"]),
            _num(t["rows_available"]),
            _num(t["tokens_available"]),
            _num(t["rows_dropped"]),
            _num(t["rows_truncated"]),
            _num(t["rows_per_epoch"]),
            _num(round(t["sampled_tokens_per_epoch"])),
            _pct(t["token_share"]),
        )
        for t in card["tasks"]
    ]
    header = [
        "Task",
        "Source",
        "Rule",
        "Rows available",
        "Tokens available",
        "Dropped",
        "Truncated",
        "Rows / epoch",
        "Tokens / epoch",
        "Share",
    ]
    return [
        "## Tasks",
        "",
        "One task per tokenized file; the rule is the first prefix_config prefix the name starts "
        "with (cap: max_per_file, x: repeat, then long_context).",
        "",
        *_table(header, rows, "lllrrrrrrr"),
    ]


def _plain_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6f}"
    if value is None:
        return "n/a"
    return _cell(value)


def _records_table(records: Sequence[Mapping[str, Any]]) -> list[str]:
    columns: list[str] = []
    for record in records:
        columns += [key for key in record if key not in columns]
    rows = [[_plain_value(record.get(key)) for key in columns] for record in records]
    return _table([_cell(c) for c in columns], rows, "l" * len(columns))


_GROUP_COLUMNS = (
    ("group", "Group", "text"),
    ("weight", "Weight", "float"),
    ("target_share", "Target share", "pct"),
    ("achieved_share", "Achieved share", "pct"),
    ("target_tokens", "Target tokens", "round"),
    ("achieved_tokens", "Achieved tokens", "round"),
    ("target_rows", "Target rows", "decimal"),
    ("achieved_rows", "Rows", "round"),
    ("shortfall_tokens", "Unfilled tokens", "round"),
)


def _group_cell(value: Any, kind: str) -> str:
    if value is None:
        return "n/a"
    if kind == "pct":
        return _pct(value)
    if kind == "round":
        return _num(round(value))
    if kind == "float":
        return f"{value:g}"
    if kind == "decimal":
        return f"{value:,.2f}"
    return _cell(value)


def _mixture_phases(mixture: Mapping[str, Any]) -> list[str]:
    """The sampler's mixture report (``hrm_assets.sampling.mixture.report.MixtureReport``): per
    phase, target against achieved shares of each group, per epoch."""
    lines = [
        f"Groups by {_cell(mixture.get('group_by', 'n/a'))}; figures per epoch. Target share: "
        "of the phase's token budget; achieved: of the tokens drawn; unfilled: target tokens "
        "the group's rules cannot give.",
    ]
    for phase in mixture["phases"]:
        lines += [
            "",
            f"### Phase {phase.get('index')} (epoch_{phase.get('first_epoch')} to "
            f"epoch_{phase.get('last_epoch')})",
            "",
            f"Budget {_group_cell(phase.get('tokens_per_epoch'), 'round')} tokens per epoch, "
            f"temperature {_group_cell(phase.get('temperature'), 'float')}; drew "
            f"{_group_cell(phase.get('achieved_rows'), 'round')} rows and "
            f"{_group_cell(phase.get('achieved_tokens'), 'round')} tokens per epoch.",
            "",
        ]
        rows = [
            [_group_cell(group.get(key), kind) for key, _, kind in _GROUP_COLUMNS]
            for group in phase.get("groups", [])
        ]
        header = [title for _, title, _ in _GROUP_COLUMNS]
        lines += _table(header, rows, "l" + "r" * (len(header) - 1))
    warnings = mixture.get("warnings") or []
    if warnings:
        lines += ["", "Warnings:", "", *(f"- {_cell(warning)}" for warning in warnings)]
    return lines


def _mixture(mixture: Any) -> list[str]:
    """The mixture section: the sampler's phases report, or any other layout as tables for
    lists of records, figures for plain values and one subsection per nested part."""
    lines = ["## Mixture targets", ""]
    if isinstance(mixture, Mapping) and isinstance(mixture.get("phases"), list):
        return lines + _mixture_phases(mixture)

    def render(value: Any, title: str | None, level: int) -> None:
        if title is not None:
            lines.extend([f"{'#' * level} {_cell(title)}", ""])
        if isinstance(value, Mapping):
            plain = [(k, v) for k, v in value.items() if not isinstance(v, (Mapping, list))]
            if plain:
                rows = [(_cell(k), _plain_value(v)) for k, v in plain]
                lines.extend([*_table(["Figure", "Value"], rows, "ll"), ""])
            for key, item in value.items():
                if isinstance(item, (Mapping, list)):
                    render(item, key, min(level + 1, 6))
        elif isinstance(value, list) and all(isinstance(item, Mapping) for item in value):
            lines.extend([*_records_table(value), ""] if value else ["(none)", ""])
        elif isinstance(value, list):
            lines.extend([*(f"- {_plain_value(item)}" for item in value), ""])
        else:
            lines.extend([_plain_value(value), ""])

    render(mixture, None, 3)
    return lines[:-1] if lines[-1] == "" else lines


def _epochs(card: Mapping[str, Any]) -> list[str]:
    rows = [(f"epoch_{e['epoch']}", _num(e["rows"]), _num(e["tokens"])) for e in card["epochs"]]
    return ["## Epochs", "", *_table(["Epoch", "Rows", "Tokens"], rows, "lrr")]


def _tokenizer(card: Mapping[str, Any]) -> list[str]:
    tok = card["tokenizer"]
    conditions = tok["condition_mapping"] or {}
    rows = [
        ("SHA-256 of tokenizer.json", _code(tok["sha256"]) if tok["sha256"] else "unknown"),
        ("Vocabulary size", _num(tok["vocab_size"])),
        ("Shipped in `tokenizer/`", "yes" if tok["shipped"] else "no"),
        ("Instruction start (BOQ)", _code(tok["boq"])),
        ("Instruction end (EOQ)", _code(tok["eoq"])),
        ("Response end (EOA)", _code(tok["eoa"])),
        *((f"Tag `{_cell(tag)}`", _code(token)) for tag, token in sorted(conditions.items())),
    ]
    return ["## Tokenizer", "", *_table(["Field", "Value"], rows, "ll")]


# The settings hrm-sample takes, in its usage order.
_COMMAND_KEYS = tuple(setting.name for setting in SETTINGS)


def _setting_text(value: Any) -> str:
    """A setting as hrm-sample reads it (``false``, not Python's ``False``)."""
    return json.dumps(value) if isinstance(value, bool) or value is None else str(value)


def _settings(card: Mapping[str, Any]) -> list[str]:
    sampling, prefix = card["sampling"], card["prefix_config"]
    rows = [(_code(key), _code(_setting_text(value))) for key, value in sorted(sampling.items())]
    text = prefix["text"]
    fence = "`" * max(3, max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    command = " ".join(
        [
            "hrm-sample tokenized_path=TOKENIZED output_path=OUT",
            f"prefix_config_path={prefix['file']}",
            *(f"{key}={_setting_text(sampling[key])}" for key in _COMMAND_KEYS),
            # Shipped tokenizers are named, so the new folder ships one too.
            *(["tokenizer_path=TOKENIZER_JSON"] if card["tokenizer"]["shipped"] else []),
        ]
    )
    return [
        "## Sampling settings",
        "",
        *_table(["Setting", "Value"], rows, "ll"),
        "",
        "The same epochs again, from the same tokenized root with this prefix_config and the "
        "code version below"
        + (
            " (`TOKENIZER_JSON`: the tokenizer.json of the SHA-256 above)"
            if card["tokenizer"]["shipped"]
            else ""
        )
        + ":",
        "",
        "```",
        command,
        "```",
        "",
        f"### prefix_config ({_code(prefix['file'])}, SHA-256 {_code(prefix['sha256'])})",
        "",
        f"{fence}yaml",
        *(text.splitlines() or [""]),
        fence,
    ]


def _code_version(card: Mapping[str, Any]) -> list[str]:
    rows = [(_code(key), _code(value)) for key, value in sorted(card["code"].items())]
    return ["## Code", "", *_table(["Component", "Version"], rows, "ll")]


def _outputs(card: Mapping[str, Any]) -> list[str]:
    outputs = card["outputs"]
    rows = [
        (_code(name), _num(entry["size"]), _code(entry["sha256"]))
        for name, entry in sorted(outputs["files"].items())
    ]
    return [
        "## Output files",
        "",
        f"As listed in `manifest.json` (SHA-256 {_code(outputs['manifest_sha256'])}); "
        "`hrm-verify <folder>` checks them.",
        "",
        *_table(["File", "Bytes", "SHA-256"], rows, "lrl"),
    ]


def render_markdown(card: Mapping[str, Any]) -> str:
    """The card as Markdown (ends with one newline). The mixture section appears only when
    the card has one."""
    totals = card["totals"]
    intro = (
        f"Training data sampled by hrm-data {card['code']['hrm_data']} for HRM-Text: "
        f"{_num(len(card['tasks']))} tasks from {_num(len(card['sources']))} sources, "
        f"{_num(card['sampling']['epochs'])} epochs of {_num(totals['rows_per_epoch'])} rows "
        f"(seed {card['sampling']['seed']}). Publish this card next to a checkpoint trained on "
        f"it; `datacard.json` holds the same figures for programs."
    )
    sections = [
        ["# Data card", "", intro],
        _summary(card),
        _shares(card),
        _sources(card),
    ]
    if card.get("cleaned_corpora"):
        sections.append(_cleaned_corpora(card["cleaned_corpora"]))
    if "contamination" in card:
        sections.append(_contamination(card["contamination"]))
    if "mixture" in card:
        sections.append(_mixture(card["mixture"]))
    sections += [
        _tasks(card),
        _epochs(card),
        _tokenizer(card),
        _settings(card),
        _code_version(card),
        _outputs(card),
    ]
    return "\n\n".join("\n".join(section) for section in sections) + "\n"
