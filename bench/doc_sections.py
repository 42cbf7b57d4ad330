"""Marked sections of a Markdown file, each owned by one benchmark, so that a benchmark that
writes its figures replaces its own section and leaves every other one as it was.

A section is the text between ``<!-- bench:NAME begin -->`` and ``<!-- bench:NAME end -->``;
a file without the section gets it appended.
"""

from __future__ import annotations

from pathlib import Path


def markers(name: str) -> tuple[str, str]:
    return f"<!-- bench:{name} begin -->", f"<!-- bench:{name} end -->"


def replace_section(path: Path, name: str, text: str, title: str = "") -> None:
    """Put ``text`` in ``path``'s section ``name`` (created, under ``title`` when given, at
    the end of the file, or of a new file)."""
    begin, end = markers(name)
    body = f"{begin}\n{text.strip()}\n{end}"
    existing = path.read_text(encoding="utf-8") if path.is_file() else ""
    if begin in existing and end in existing:
        before, _, rest = existing.partition(begin)
        _, _, after = rest.partition(end)
        document = before + body + after
    else:
        heading = f"{title}\n\n" if title else ""
        document = existing.rstrip() + ("\n\n" if existing.strip() else "") + heading + body + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(document, encoding="utf-8")
