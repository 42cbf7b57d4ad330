"""Small text templates over a record's columns: ``"{question}\\n\\n{context}"``.

A template is literal text with ``{column}`` placeholders; ``{{`` and ``}}`` are literal braces.
Nothing is evaluated: a placeholder is a column name and nothing else (no ``.attribute``,
``[index]``, ``!conversion`` or ``:format``), so a template cannot reach anything but the
record's own values, which must be strings.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass

_FORBIDDEN_IN_NAMES = frozenset(".[]!:{}")


class TemplateError(ValueError):
    """A template that is not literal text with plain ``{column}`` placeholders."""


@dataclass(frozen=True)
class Template:
    """A parsed template: ``pieces`` alternate literal text and column names."""

    text: str
    pieces: tuple[tuple[str, str | None], ...]  # (literal, column or None)

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns the template reads, in order of first use."""
        return tuple(dict.fromkeys(name for _, name in self.pieces if name is not None))

    def render(self, values: Mapping[str, str]) -> str:
        """The text with each placeholder replaced by ``values[column]`` (every column of
        :attr:`columns` must be there, as a string)."""
        return "".join(
            literal + (values[name] if name is not None else "") for literal, name in self.pieces
        )


def parse_template(text: str) -> Template:
    """Parse ``text``; TemplateError saying what is wrong (unbalanced braces, a placeholder
    that is empty or more than a column name)."""
    pieces = []
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as error:
        raise TemplateError(
            f"template {text!r}: {error} (write {{{{ and }}}} for braces)"
        ) from None
    for literal, name, format_spec, conversion in parsed:
        if name is None:
            pieces.append((literal, None))
            continue
        if not name:
            raise TemplateError(f"template {text!r}: empty placeholder {{}}: name a column")
        if conversion or format_spec or _FORBIDDEN_IN_NAMES & set(name):
            shown = (
                name
                + (f"!{conversion}" if conversion else "")
                + (f":{format_spec}" if format_spec else "")
            )
            raise TemplateError(
                f"template {text!r}: placeholder {{{shown}}} must be a plain column name "
                f"(no attribute, index, conversion or format)"
            )
        pieces.append((literal, name))
    return Template(text, tuple(pieces))
