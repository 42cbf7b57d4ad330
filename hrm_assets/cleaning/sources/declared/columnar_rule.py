"""A declared source's mapping compiled to a columnar rule
(:class:`~hrm_assets.cleaning.columnar.ColumnarRule`), for the declarations whose rules are
column expressions and whose records come from Parquet: a Hub mirror in Parquet, or local
Parquet files.

Compiled: the output (one file, or a file per column value: the source's own route decides each
distinct value's file or skip once per batch), a condition (a constant, a column, a column
looked up in a map), fields (a column or a template, the text after a separator that occurs
exactly once, stripped or not) and the row filters. Left to the row path
(:class:`~.mapping.DeclaredCleaner`, which gives the same rows): conversations (``chat``: lists
of messages walked in Python), JSONL and CSV inputs, and any raw file whose columns are not
text or lack one the mapping names (the row path says which).

A record is skipped under the first check it fails, in the row path's order (its output file,
then the condition, the instruction's columns and separator, the response's); a row the
filters leave out is counted under the first filter it fails.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from hrm_assets.cleaning.columnar import (
    BatchSkip,
    CleanedBatch,
    ColumnarRule,
    constant,
    require_text_columns,
    rows_table,
    strip,
    text,
)
from hrm_assets.cleaning.sources.declared.layouts import LocalFilesLayout
from hrm_assets.cleaning.sources.declared.model import (
    ConditionFromColumn,
    FieldRule,
    SourceDeclaration,
)
from hrm_assets.cleaning.sources.declared.template import parse_template
from hrm_assets.cleaning.sources.local_files import relative_posix
from hrm_assets.cleaning.sources.spec import SkipRecord, SourceSpec

FIELD_NAMES = ("instruction", "response")


def declared_columnar_rule(declaration: SourceDeclaration, spec: SourceSpec) -> ColumnarRule | None:
    """The rule of ``declaration`` (whose spec, without a rule, is ``spec``), or None when a
    rule of it needs Python per record (see the module docstring)."""
    if declaration.chat is not None:
        return None
    if declaration.local is not None and declaration.local.file_format != "parquet":
        return None
    columns = _columns(declaration)
    return ColumnarRule(
        columns=columns,
        clean=_BatchCleaner(declaration, spec),
        check_schema=lambda schema: require_text_columns(schema, columns),
        parts_disjoint=False,  # parts may write the same files
        part_files=_local_part_files if declaration.local is not None else None,
    )


def _field_rules(declaration: SourceDeclaration) -> dict[str, FieldRule]:
    return {name: declaration.fields.rule(name) for name in FIELD_NAMES}


def _field_columns(rule: FieldRule) -> tuple[str, ...]:
    return (rule.column,) if rule.column is not None else parse_template(rule.template).columns


def _columns(declaration: SourceDeclaration) -> tuple[str, ...]:
    names: list[str] = []
    if declaration.output_layout.per_value_of is not None:
        names.append(declaration.output_layout.per_value_of)
    if isinstance(declaration.condition, ConditionFromColumn):
        names.append(declaration.condition.column)
    for rule in _field_rules(declaration).values():
        names.extend(_field_columns(rule))
    return tuple(dict.fromkeys(names))


def _local_part_files(spec: SourceSpec, raw_root: Path) -> list[tuple[str, list[Path]]]:
    """Each local file its own part, named as the row path names it."""
    layout = spec.layout
    if not isinstance(layout, LocalFilesLayout):
        raise ValueError(f"{spec.name}: not a local files layout")
    return [(relative_posix(path, layout.folder), [path]) for path in layout.files(spec)]


class _BatchCleaner:
    """``clean(batch, part)`` of a compiled declaration."""

    def __init__(self, declaration: SourceDeclaration, spec: SourceSpec):
        self.declaration = declaration
        self.spec = spec
        self.rules = _field_rules(declaration)

    def __call__(self, batch, part: str) -> CleanedBatch:
        import numpy as np
        import pyarrow as pa

        count = batch.num_rows
        alive = np.ones(count, dtype=bool)  # records no check has skipped yet
        skips: list[BatchSkip] = []
        names, codes, output_of = self._outputs(batch, part, alive, skips)

        def skip(reason: str, mask: np.ndarray, detail: Callable[[int], str]) -> None:
            rows = np.flatnonzero(mask & alive)
            if len(rows):
                skips.append(BatchSkip(reason, rows, detail, output_of))
                alive[rows] = False

        condition = self._condition(batch, skip)
        texts = {name: self._field(batch, name, rule, skip) for name, rule in self.rules.items()}
        kept = np.flatnonzero(alive)
        take = pa.array(kept)
        instruction, response = (texts[name].take(take) for name in FIELD_NAMES)
        rows = rows_table(condition.take(take), instruction, response)
        left_out = self._filtered(rows, kept, skips, output_of)
        if left_out.any():
            rows, kept = rows.filter(pa.array(~left_out)), kept[~left_out]
        if names is None:
            return CleanedBatch(rows=rows, records=kept, output=self.spec.output, skips=skips)
        return CleanedBatch(
            rows=rows, records=kept, route_names=names, route_codes=codes[kept], skips=skips
        )

    def _outputs(self, batch, part: str, alive, skips: list[BatchSkip]):
        """``(route names, each record's index into them, output_of(row))``; names None for
        the one output file. A value whose file the route refuses skips its records, under
        the reason the row path gives (the route is asked once per distinct value)."""
        import numpy as np

        column = self.declaration.output_layout.per_value_of
        if column is None:
            return None, None, lambda _row: self.spec.output
        encoded = text(batch.column(column)).dictionary_encode()
        values = encoded.dictionary.to_pylist()
        indices = encoded.indices.fill_null(len(values)).to_numpy(zero_copy_only=False)
        names: list[str] = []
        code_of_value = np.full(len(values) + 1, -1, dtype=np.int64)
        for index, value in enumerate([*values, None]):  # None: the null value
            outcome = self._route(value, part)
            mask = indices == index
            if isinstance(outcome, str):
                code_of_value[index] = len(names)
                names.append(outcome)
            elif mask.any():
                reason, detail = outcome
                rows = np.flatnonzero(mask & alive)
                skips.append(
                    BatchSkip(reason, rows, lambda _row, d=detail: d, lambda _row: self.spec.output)
                )
                alive[rows] = False
        codes = code_of_value[indices]

        def output_of(row: int) -> str:
            code = codes[row]
            return names[code] if code >= 0 else self.spec.output

        return names, codes, output_of

    def _route(self, value, part: str) -> str | tuple[str, str]:
        """The file of a record whose column holds ``value``, by the source's own route, or
        the reason and detail of its skip (as the row path counts it)."""
        column = self.declaration.output_layout.per_value_of
        try:
            return self.spec.output_of({column: value}, part)
        except SkipRecord as error:
            return error.reason, error.detail
        except (KeyError, TypeError, AttributeError, ValueError, IndexError) as error:
            kind = type(error).__name__
            return f"malformed raw record ({kind})", f"{kind}: {error}"

    def _condition(self, batch, skip):
        import pyarrow as pa
        import pyarrow.compute as pc

        rule = self.declaration.condition
        if not isinstance(rule, ConditionFromColumn):
            return constant(rule, batch.num_rows)
        values = text(batch.column(rule.column))
        skip(
            f"column {rule.column!r} is null",
            values.is_null().to_numpy(zero_copy_only=False),
            lambda _row: "field 'condition'",
        )
        if rule.map is None:
            return values
        keys = pa.array(list(rule.map), pa.string())
        found = pc.index_in(values, value_set=keys)
        skip(
            f"condition: value of column {rule.column!r} not in map",
            found.is_null().to_numpy(zero_copy_only=False),
            lambda row: repr(values[row].as_py())[:200],
        )
        return pa.array(list(rule.map.values()), pa.string()).take(found)

    def _field(self, batch, name: str, rule: FieldRule, skip):
        import pyarrow as pa
        import pyarrow.compute as pc

        for column in _field_columns(rule):
            values = text(batch.column(column))
            skip(
                f"column {column!r} is null",
                values.is_null().to_numpy(zero_copy_only=False),
                lambda _row, name=name: f"field {name!r}",
            )
        if rule.column is not None:
            value = text(batch.column(rule.column))
            origin = f"column {rule.column!r}"
        else:
            pieces = []
            for literal, column in parse_template(rule.template).pieces:
                if literal:
                    pieces.append(literal)
                if column is not None:
                    pieces.append(text(batch.column(column)))
            if not any(isinstance(piece, pa.Array) for piece in pieces):
                value = constant("".join(pieces), batch.num_rows)
            else:
                value = pc.binary_join_element_wise(*pieces, "")
            origin = f"template {rule.template!r}"
        if rule.after is not None:
            counts = pc.count_substring(value, rule.after)
            once = pc.fill_null(pc.equal(counts, 1), True).to_numpy(zero_copy_only=False)
            skip(
                f"{name}: {origin} does not hold {rule.after!r} exactly once",
                ~once,
                lambda row: f"{counts[row].as_py()} times",
            )
            # A record without the separator exactly once is skipped: split the separator alone.
            value = pc.if_else(pa.array(once), value, rule.after)
            value = pc.list_element(pc.split_pattern(value, rule.after), 1)
        return strip(value) if rule.strip else value

    def _filtered(self, rows, kept, skips: list[BatchSkip], output_of):
        """Rows the declared filters leave out, each counted under the first it fails."""
        import numpy as np
        import pyarrow.compute as pc

        filters = self.declaration.filters
        out = np.zeros(rows.num_rows, dtype=bool)
        lengths = {
            name: pc.utf8_length(rows.column(name)).to_numpy(zero_copy_only=False)
            for name in FIELD_NAMES
        }
        checks = [(f"filter: {name} empty", name, lengths[name] == 0) for name in filters.non_empty]
        checks += [
            (f"filter: {name} shorter than {bound} characters", name, lengths[name] < bound)
            for name, bound in filters.min_chars.items()
        ]
        checks += [
            (f"filter: {name} longer than {bound} characters", name, lengths[name] > bound)
            for name, bound in filters.max_chars.items()
        ]
        for reason, name, failed in checks:
            positions = np.flatnonzero(failed & ~out)
            if not len(positions):
                continue
            out[positions] = True
            sizes = dict(
                zip(kept[positions].tolist(), lengths[name][positions].tolist(), strict=True)
            )
            empty = reason.endswith(" empty")
            skips.append(
                BatchSkip(
                    reason,
                    kept[positions],
                    detail=lambda row, sizes=sizes, empty=empty: (
                        "" if empty else f"{sizes[row]} characters"
                    ),
                    output=output_of,
                    whole_record=False,
                )
            )
        return out
