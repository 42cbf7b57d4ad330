"""A declared source's cleaning function: raw record -> rows, by its field mapping or chat rule.

A mapped column missing from a record is a mapping error (:class:`DeclaredMappingError`, which
stops the run naming the source, the field, the column and the columns the record has): the
declaration does not fit the data. A null or non-string value, a separator not found, a
condition value outside the map and a malformed conversation skip the record under a reason;
a row that fails a filter is left out under a reason (``SkippedRow``). All of them are counted
in the cleaning report, nothing is dropped silently.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from hrm_assets.cleaning.rows import Row
from hrm_assets.cleaning.sources.declared.chat import ChatRendering, conversation_pairs
from hrm_assets.cleaning.sources.declared.layouts import UnreadableRecord
from hrm_assets.cleaning.sources.declared.model import (
    ChatRules,
    ConditionFromColumn,
    FieldRule,
    RowFilters,
    SourceDeclaration,
)
from hrm_assets.cleaning.sources.declared.template import parse_template
from hrm_assets.cleaning.sources.spec import Record, SkippedRow, SkipRecord


class DeclaredMappingError(RuntimeError):
    """A declared mapping names a column the records do not have."""


def column_value(source: str, record: Record, column: str, field: str, part: str) -> object:
    """``record[column]``; DeclaredMappingError naming source, field and column when absent."""
    if not isinstance(record, Mapping):
        raise SkipRecord("record is not an object", type(record).__name__)
    if column not in record:
        raise DeclaredMappingError(
            f"source {source!r}: field {field!r} maps column {column!r}, which a record of raw "
            f"part {part!r} does not have (its columns: {', '.join(map(str, record)) or 'none'})"
        )
    return record[column]


def text_value(source: str, record: Record, column: str, field: str, part: str) -> str:
    """A column's value as text; SkipRecord when it is null or not a string."""
    value = column_value(source, record, column, field, part)
    if value is None:
        raise SkipRecord(f"column {column!r} is null", f"field {field!r}")
    if not isinstance(value, str):
        raise SkipRecord(
            f"column {column!r} is not a string", f"{type(value).__name__}: {value!r}"[:200]
        )
    return value


@dataclass(frozen=True, eq=False)
class DeclaredCleaner:
    """``clean(record, part)`` of a declared source (a
    :data:`~hrm_assets.cleaning.sources.spec.CleanFn`)."""

    declaration: SourceDeclaration

    @property
    def source(self) -> str:
        return self.declaration.name

    def __call__(self, record: Record, part: str) -> Iterator[Row | SkippedRow]:
        if isinstance(record, UnreadableRecord):
            raise SkipRecord(record.reason, record.detail)
        condition = self.condition(record, part)
        for instruction, response in self.pairs(record, part):
            left_out = self.filtered_out(instruction, response)
            if left_out is not None:
                yield left_out
            else:
                yield Row(condition, instruction, response)

    # -- condition ---------------------------------------------------------------------------

    def condition(self, record: Record, part: str) -> str:
        rule = self.declaration.condition
        if not isinstance(rule, ConditionFromColumn):
            return rule
        value = text_value(self.source, record, rule.column, "condition", part)
        if rule.map is None:
            return value  # its tags are checked with the row (reason "unknown condition tag")
        if value not in rule.map:
            raise SkipRecord(
                f"condition: value of column {rule.column!r} not in map", repr(value)[:200]
            )
        return rule.map[value]

    # -- instruction and response ------------------------------------------------------------

    def pairs(self, record: Record, part: str) -> Iterator[tuple[str, str]]:
        if self.declaration.chat is not None:
            yield from self.chat_pairs(self.declaration.chat, record, part)
            return
        fields = self.declaration.fields
        yield (
            self.field_text(fields.rule("instruction"), "instruction", record, part),
            self.field_text(fields.rule("response"), "response", record, part),
        )

    def field_text(self, rule: FieldRule, field: str, record: Record, part: str) -> str:
        if rule.column is not None:
            text = text_value(self.source, record, rule.column, field, part)
            origin = f"column {rule.column!r}"
        else:
            template = parse_template(rule.template)
            values = {
                column: text_value(self.source, record, column, field, part)
                for column in template.columns
            }
            text = template.render(values)
            origin = f"template {rule.template!r}"
        if rule.after is not None:
            count = text.count(rule.after)
            if count != 1:
                raise SkipRecord(
                    f"{field}: {origin} does not hold {rule.after!r} exactly once",
                    f"{count} times",
                )
            text = text.split(rule.after)[-1]
        return text.strip() if rule.strip else text

    def chat_pairs(self, rules: ChatRules, record: Record, part: str) -> Iterator[tuple[str, str]]:
        messages = column_value(self.source, record, rules.column, "chat", part)
        rendering = ChatRendering(rules.turns, rules.history_template, rules.separator)
        for instruction, response in conversation_pairs(messages, rendering):
            if rules.strip:
                instruction, response = instruction.strip(), response.strip()
            yield instruction, response

    # -- filters -----------------------------------------------------------------------------

    def filtered_out(self, instruction: str, response: str) -> SkippedRow | None:
        """The reason a row is left out by the declared filters, or None to keep it."""
        return row_filter_failure(self.declaration.filters, instruction, response)


def row_filter_failure(filters: RowFilters, instruction: str, response: str) -> SkippedRow | None:
    """The first filter a row fails, as a :class:`SkippedRow`; None when it passes them all."""
    texts = {"instruction": instruction, "response": response}
    for name in filters.non_empty:
        if not texts[name]:
            return SkippedRow(f"filter: {name} empty")
    for name, bound in filters.min_chars.items():
        if len(texts[name]) < bound:
            return SkippedRow(
                f"filter: {name} shorter than {bound} characters", f"{len(texts[name])} characters"
            )
    for name, bound in filters.max_chars.items():
        if len(texts[name]) > bound:
            return SkippedRow(
                f"filter: {name} longer than {bound} characters", f"{len(texts[name])} characters"
            )
    return None
