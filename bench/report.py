"""The benchmark report: the machine, the ratio table and ``docs/BENCHMARKS.md``.

A stage of ``python -m bench`` hands back a :class:`StageReport`: its ratios against the
baselines measured in the same run (:class:`Ratio`, one summary row each), a Markdown section
with its scale curve, and its raw figures for ``--json``. This module only formats them: a whole
document (:func:`markdown_document`), or an existing one with some stages' sections and summary
rows replaced (:func:`merged_document`), so that running one stage keeps the others' figures.
"""

from __future__ import annotations

import os
import platform
import subprocess
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DOC_PATH = REPO_ROOT / "docs" / "BENCHMARKS.md"
PACKAGES = ("numpy", "pyarrow", "dagster", "tokenizers", "datasets")


@dataclass
class Ratio:
    """One summary row: ``ours`` against ``baseline``, both measured in this run.

    ``ratio`` is defined by ``figure`` (e.g. "speedup: data_io time / ours"); ``met`` is None
    where the issue sets no target and the figure is reported only.
    """

    figure: str
    ours: str
    baseline: str
    ratio: float | None
    target: str = ""
    met: bool | None = None


@dataclass
class StageReport:
    name: str
    title: str
    ratios: list[Ratio] = field(default_factory=list)
    section: str = ""  # Markdown: what was measured, the scale curve, the verdict lines
    figures: dict = field(default_factory=dict)
    seconds: float = 0.0  # wall time of the whole stage
    error: str | None = None  # the stage failed or could not run: why

    def as_dict(self) -> dict:
        return asdict(self)


def _read_first(path: str, prefix: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.startswith(prefix):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _command_output(command: list[str]) -> str | None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def _package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def load_average() -> str:
    try:
        return " / ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def machine_info() -> dict[str, str]:
    """What the figures were measured on: CPU, cores, RAM, OS, interpreter and toolchain."""
    mem_kib = _read_first("/proc/meminfo", "MemTotal")
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    commit = _command_output(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"])
    dirty = _command_output(["git", "-C", str(REPO_ROOT), "status", "--porcelain"])
    return {
        "cpu": _read_first("/proc/cpuinfo", "model name") or platform.processor() or "unknown",
        "cores": f"{os.cpu_count()} logical, {usable} usable by this process",
        "ram": f"{int(mem_kib.split()[0]) / 2**20:.1f} GiB" if mem_kib else "unknown",
        "os": f"{platform.system()} {platform.release()} {platform.machine()}",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "rust": _command_output(["rustc", "--version"]) or "rustc not found",
        "packages": ", ".join(f"{name} {_package_version(name)}" for name in PACKAGES),
        "commit": (commit or "unknown") + (" with uncommitted changes" if dirty else ""),
    }


def _cell(value: str) -> str:
    return value.replace("|", "\\|")


def ratio_table(stages: list[StageReport]) -> str:
    """Every stage's ratios as one Markdown table (failed stages say why)."""
    lines = [
        "| stage | figure | ours | baseline (same run) | ratio | target | met |",
        "|---|---|---:|---:|---:|---|---|",
    ]
    for stage in stages:
        if stage.error:
            lines.append(f"| {stage.title} | not measured: {_cell(stage.error)} | | | | | |")
            continue
        for row in stage.ratios:
            ratio = "" if row.ratio is None else f"{row.ratio:,.2f}x"
            met = "" if row.met is None else ("yes" if row.met else "**no**")
            lines.append(
                f"| {stage.title} | {_cell(row.figure)} | {_cell(row.ours)} | "
                f"{_cell(row.baseline)} | {ratio} | {_cell(row.target)} | {met} |"
            )
    return "\n".join(lines)


def growth_line(label: str, sizes: list[float], values: list[float], unit: str) -> str:
    """e.g. ``ours: size x16 -> time x14.2 (per unit of size x0.89)``, smallest to largest."""
    if len(sizes) < 2 or not sizes[0] or not values[0]:
        return ""
    size_factor, value_factor = sizes[-1] / sizes[0], values[-1] / values[0]
    return (
        f"- {label}: size x{size_factor:,.1f} -> {unit} x{value_factor:,.2f} "
        f"(per unit of size x{value_factor / size_factor:,.2f})"
    )


def markdown_document(
    command: str,
    size: str,
    machine: dict[str, str],
    stages: list[StageReport],
    started: str,
    load_before: str,
    load_after: str,
    total_seconds: float,
) -> str:
    """The whole ``docs/BENCHMARKS.md``."""
    rows = [
        ("CPU", machine["cpu"]),
        ("cores", machine["cores"]),
        ("RAM", machine["ram"]),
        ("OS", machine["os"]),
        ("Python", machine["python"]),
        ("Rust", machine["rust"]),
        ("packages", machine["packages"]),
        ("commit", machine["commit"]),
        ("load average (1/5/15 min) before / after", f"{load_before} — {load_after}"),
    ]
    machine_table = "\n".join(
        ["| | |", "|---|---|"] + [f"| {key} | {_cell(value)} |" for key, value in rows]
    )
    sections = [stage_section(stage) for stage in stages]
    return (
        "# Benchmarks\n\n"
        f"Written by `{command}` (size `{size}`) on {started}, in {total_seconds:,.0f} s. Every "
        "ratio compares figures measured in this same run, on this machine; each measured run "
        "is a fresh process that times only its own work and reports its own peak memory "
        "(`bench/measure.py`). Rerun the command to refresh this file.\n\n"
        f"## Machine\n\n{machine_table}\n\n"
        "A high load average means other work shared the cores while this ran; the times "
        "are then upper bounds (each stage's notes say how repeats are combined).\n\n"
        f"## Summary\n\n{ratio_table(stages)}\n\n" + "\n\n".join(sections) + "\n"
    )


def stage_section(stage: StageReport, provenance: str = "") -> str:
    """A stage's ``## <title>`` section; ``provenance`` (when the stage ran alone) says which
    command, commit and load produced it, since the document's header names another run."""
    body = f"Not measured: {stage.error}" if stage.error else stage.section
    # A stage written from saved figures (no run timed here) has no wall time to give.
    parts = [f"Stage wall time: {stage.seconds:,.0f} s."] if stage.seconds else []
    parts += [provenance] if provenance else []
    footer = f"_{' '.join(parts)}_" if parts else ""
    return f"## {stage.title}\n\n{body}" + (f"\n\n{footer}" if footer else "")


def split_sections(document: str) -> tuple[str, list[tuple[str, str]]]:
    """(the text before the first ``## `` heading, [(heading title, section text)]), each
    section's text running from its heading to the next, without trailing blank lines."""
    preamble, sections = [], []
    for line in document.splitlines():
        if line.startswith("## "):
            sections.append((line[3:].strip(), [line]))
        elif sections:
            sections[-1][1].append(line)
        else:
            preamble.append(line)
    return "\n".join(preamble).rstrip("\n"), [
        (title, "\n".join(lines).rstrip("\n")) for title, lines in sections
    ]


def _join(preamble: str, sections: list[tuple[str, str]]) -> str:
    return "\n\n".join([preamble, *(text for _, text in sections)]) + "\n"


def _summary_with(summary: str, stages: list[StageReport]) -> str:
    """The Summary section with every row of ``stages`` replaced (new stages' rows appended)."""
    lines = summary.splitlines()
    for stage in stages:
        fresh = ratio_table([stage]).splitlines()[2:]
        mine = [i for i, line in enumerate(lines) if line.startswith(f"| {stage.title} |")]
        if mine:
            lines[mine[0] : mine[-1] + 1] = fresh
            continue
        table = [i for i, line in enumerate(lines) if line.startswith("|")]
        at = table[-1] + 1 if table else len(lines)
        lines[at:at] = fresh
    return "\n".join(lines)


def merged_document(
    existing: str, stages: list[StageReport], stage_titles: set[str], provenance: str
) -> str:
    """``existing`` with each of ``stages``' section and summary rows replaced by the new ones.

    A stage new to the document gets its section after the last stage section (a title in
    ``stage_titles``) and its rows at the end of the Summary table. Everything else (header,
    machine, other stages, hand-written sections) is kept as it is.
    """
    preamble, sections = split_sections(existing)
    for stage in stages:
        fresh = (stage.title, stage_section(stage, provenance))
        titles = [title for title, _ in sections]
        if stage.title in titles:
            sections[titles.index(stage.title)] = fresh
            continue
        last_stage = max((i for i, t in enumerate(titles) if t in stage_titles), default=None)
        at = len(sections) if last_stage is None else last_stage + 1
        sections.insert(at, fresh)
    sections = [
        (title, _summary_with(text, stages) if title == "Summary" else text)
        for title, text in sections
    ]
    return _join(preamble, sections)


def with_kept_sections(document: str, existing: str, stage_titles: set[str]) -> str:
    """A freshly written ``document`` followed by the sections of ``existing`` that it has not
    got and that no stage writes (hand-written ones, e.g. notes appended by another tool)."""
    preamble, sections = split_sections(document)
    present = {title for title, _ in sections} | stage_titles
    kept = [(t, text) for t, text in split_sections(existing)[1] if t not in present]
    return _join(preamble, sections + kept)
