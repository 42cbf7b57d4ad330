"""GSM8K (``openai/gsm8k``, config ``main``, split ``train``) -> ``gsm8k_train.jsonl``.

data_io ``pipe/clean_gsm8k_train.py``: one ``direct`` row per problem, the stripped question
as instruction and the stripped final answer (the text after ``#### ``) as response.

Deliberate difference: data_io asserts that the answer splits into exactly two parts on
``"#### "`` and crashes otherwise; here such a record is skipped and reported (reason
``answer does not split in two on '#### '``). Rows of every other record are identical.

A Parquet mirror (the Hub's own format) is cleaned on columns (:func:`clean_gsm8k_batch`, the
rule in one pass of the Rust core over the Arrow buffers).
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from hrm_assets.cleaning.columnar import (
    BatchSkip,
    CleanedBatch,
    ColumnarRule,
    constant,
    require_text_columns,
    rows_table,
    text,
)
from hrm_assets.cleaning.rows import Row
from hrm_assets.cleaning.sources.hub import HubLayout
from hrm_assets.cleaning.sources.spec import Record, SkipRecord, SourceSpec

ANSWER_SEPARATOR = "#### "
BAD_ANSWER = "answer does not split in two on '#### '"


def clean_gsm8k(record: Record, part: str) -> Iterator[Row]:
    pieces = record["answer"].split(ANSWER_SEPARATOR)
    if len(pieces) != 2:
        raise SkipRecord(BAD_ANSWER, f"{len(pieces)} parts")
    yield Row("direct", record["question"].strip(), pieces[-1].strip())


COLUMNS = ("question", "answer")
MALFORMED = "malformed raw record (AttributeError)"


def clean_gsm8k_batch(batch, part: str) -> CleanedBatch:
    """:func:`clean_gsm8k` on a record batch, in one pass of the Rust core over the columns'
    buffers (``rust_tokenizer/src/gsm8k_answers.rs``: the pieces counted as ``str.split``
    does, stripped of exactly ``str.isspace()``'s characters; text that is not UTF-8 is kept
    for the engine's check to name). A null answer or question is the malformed record the
    row path reports (``None.split``, ``None.strip``)."""
    import numpy as np

    from hrm_assets._core import gsm8k_rows
    from hrm_assets.cleaning.arrow_buffers import string_array_of, string_buffers

    question, answer = text(batch.column("question")), text(batch.column("answer"))
    records, *columns, malformed, bad, pieces = gsm8k_rows(
        string_buffers(question), string_buffers(answer)
    )
    # None: every record gives its row and keeps its whole question, the instruction column.
    instruction = question if columns[0] is None else string_array_of(*columns[:2])
    records = np.frombuffer(records, dtype=np.int64)
    bad, pieces = np.frombuffer(bad, dtype=np.int64), np.frombuffer(pieces, dtype=np.int64)
    output = GSM8K_TRAIN.output

    def parts(row: int) -> str:
        return f"{pieces[np.searchsorted(bad, row)]} parts"

    def malformed_detail(row: int) -> str:
        attribute = "strip" if answer[row].is_valid else "split"
        return f"AttributeError: 'NoneType' object has no attribute '{attribute}'"

    return CleanedBatch(
        rows=rows_table(
            constant("direct", len(records)),
            instruction,
            string_array_of(*columns[2:]),
        ),
        records=records,
        output=output,
        skips=[
            BatchSkip(
                MALFORMED,
                np.frombuffer(malformed, dtype=np.int64),
                detail=malformed_detail,
                output=lambda _row: output,
            ),
            BatchSkip(BAD_ANSWER, bad, detail=parts, output=lambda _row: output),
        ],
    )


GSM8K_COLUMNAR = ColumnarRule(
    columns=COLUMNS,
    clean=clean_gsm8k_batch,
    check_schema=lambda schema: require_text_columns(schema, COLUMNS),
)


# -- demo corpus: invented grade-school word problems in the Hub schema -------------------

_PEOPLE = ["Maya", "Tom", "Aiko", "Lukas", "Priya", "Omar", "Sofia", "Chen", "Zoë", "José"]
_ITEMS = [
    ("apples", "apple"),
    ("stickers", "sticker"),
    ("marbles", "marble"),
    ("pencils", "pencil"),
    ("cookies", "cookie"),
    ("stamps", "stamp"),
]


def _buy_and_give(rng: random.Random, name: str) -> dict:
    plural, _ = rng.choice(_ITEMS)
    boxes, per_box, given = rng.randint(2, 9), rng.randint(3, 12), rng.randint(1, 10)
    total = boxes * per_box
    left = total - given
    question = (
        f"{name} buys {boxes} boxes of {plural}. Each box holds {per_box} {plural}. "
        f"{name} gives {given} {plural} to a friend. How many {plural} does {name} have left?"
    )
    answer = (
        f"{name} buys {boxes} * {per_box} = <<{boxes}*{per_box}={total}>>{total} {plural}.\n"
        f"After giving some away, {name} has {total} - {given} = <<{total}-{given}={left}>>{left} "
        f"{plural} left.\n#### {left}"
    )
    return {"question": question, "answer": answer}


def _wage(rng: random.Random, name: str) -> dict:
    rate, hours, days = rng.randint(8, 25), rng.randint(2, 8), rng.randint(2, 6)
    daily = rate * hours
    total = daily * days
    question = (
        f"{name} earns ${rate} an hour and works {hours} hours a day for {days} days. "
        f"How much money does {name} earn in total?"
    )
    answer = (
        f"Each day {name} earns {rate} * {hours} = $<<{rate}*{hours}={daily}>>{daily}.\n"
        f"Over {days} days that is {daily} * {days} = $<<{daily}*{days}={total}>>{total}.\n"
        f"#### {total}"
    )
    return {"question": question, "answer": answer}


def _multilingual(rng: random.Random, index: int) -> dict:
    a, b = rng.randint(3, 40), rng.randint(3, 40)
    templates = [
        (
            f"小明有{a}个苹果，又买了{b}个。他现在一共有几个苹果？",
            f"小明一共有 {a} + {b} = <<{a}+{b}={a + b}>>{a + b} 个苹果。\n#### {a + b}",
        ),
        (
            f"Léa a {a} crayons et en reçoit {b} de plus. Combien de crayons a-t-elle ?",
            f"Léa a {a} + {b} = <<{a}+{b}={a + b}>>{a + b} crayons.\n#### {a + b}",
        ),
        (
            f"  Ein Zug fährt {a} km, dann noch {b} km weiter. Wie weit fährt er insgesamt? 🚆  ",
            f"Er fährt {a} + {b} = <<{a}+{b}={a + b}>>{a + b} km.\n####  {a + b}  ",
        ),
    ]
    question, answer = templates[index % len(templates)]
    return {"question": question, "answer": answer}


def demo_gsm8k(rng: random.Random) -> dict[str, list[dict]]:
    records = []
    for index in range(300):
        name = _PEOPLE[index % len(_PEOPLE)]
        if index % 25 == 7:
            records.append(_multilingual(rng, index))
        elif index % 2:
            records.append(_wage(rng, name))
        else:
            records.append(_buy_and_give(rng, name))
    return {"main": records}


GSM8K_TRAIN = SourceSpec(
    name="gsm8k_train",
    hub_id="openai/gsm8k",
    configs=("main",),
    split="train",
    output="gsm8k_train.jsonl",
    format="jsonl",
    clean=clean_gsm8k,
    layout=HubLayout(),
    demo=demo_gsm8k,
    columnar=GSM8K_COLUMNAR,
    description="GSM8K grade-school math, final answers only (direct).",
)

SPECS = (GSM8K_TRAIN,)
