"""Synthetic reasoning traces with the thinking cut out: acereason, openthoughts2.

Both data_io scripts keep a model's answer without its ``<think>...</think>`` block
(:func:`remove_think_tags`: every shortest ``<think>``-to-``</think>`` span, across lines, is
deleted; nothing else is touched, not even the whitespace around it) and tag it ``synth,cot``.

``acereason`` (``nvidia/AceReason-1.1-SFT``, split ``train``) -> ``acereason/all.parquet``, data_io
``pipe_clustered/clean_acereason.py``: records of ``category == "math"`` only; ``input`` as
instruction, ``output`` without its thinking as response. data_io asserts that such an output
holds exactly one ``<think>``.

``openthoughts2`` (``open-thoughts/OpenThoughts2-1M``, split ``train``) ->
``openthoughts2/all.parquet``, data_io ``pipe_clustered/clean_openthoughts2.py``: records whose
``source`` is not a code source nor ``nvidia_math`` (:data:`OPENTHOUGHTS2_REMOVED_SOURCES`);
data_io asserts two turns, ``user`` then ``assistant``; then code is filtered out by a simple
heuristic: no ``python`` (any case) in the user turn or the answer, and no triple-backtick
code fence in the answer.
The user turn is the instruction, the answer without its thinking the response.

Local mirrors: ``<hub id>/data/train-*.parquet``.

Deliberate differences: where data_io's asserts fail (and it stops), the record is skipped and
reported: ``math output does not hold exactly one <think>`` (acereason),
``conversation is not user then assistant`` (openthoughts2). Rows of every other record are
identical.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

from hrm_assets.cleaning.rows import INSTRUCTION_FIRST, Row
from hrm_assets.cleaning.sources.hub import HubLayout
from hrm_assets.cleaning.sources.spec import Record, SkipRecord, SourceSpec

_THINK_BLOCK = re.compile(r"<think>.*?</think>", flags=re.DOTALL)

ACEREASON_CATEGORY = "math"
BAD_THINK_COUNT = "math output does not hold exactly one <think>"

OPENTHOUGHTS2_REMOVED_SOURCES = frozenset(
    {
        "dolphin",
        "evolcodegolf",
        "glaive",
        "magicoder",
        "sharegpt",
        "codefeedback",  # code
        "nvidia_math",  # already included through OpenMathInstruct-2
    }
)
BAD_CONVERSATION = "conversation is not user then assistant"


def remove_think_tags(text: str) -> str:
    """``text`` without its ``<think>...</think>`` blocks (non-greedy, spanning lines)."""
    return _THINK_BLOCK.sub("", text)


def clean_acereason(record: Record, part: str) -> Iterator[Row]:
    if record["category"] != ACEREASON_CATEGORY:
        return
    output = record["output"]
    count = output.count("<think>")
    if count != 1:
        raise SkipRecord(BAD_THINK_COUNT, f"{count} <think> tags")
    yield Row("synth,cot", record["input"], remove_think_tags(output))


def _conversation_turns(record: Record) -> tuple[str, str]:
    """(user text, assistant text) of a two-turn conversation; SkipRecord otherwise."""
    turns = record["conversations"]
    if len(turns) != 2:
        raise SkipRecord(BAD_CONVERSATION, f"{len(turns)} turns")
    roles = [turn["from"] for turn in turns]
    if roles != ["user", "assistant"]:
        raise SkipRecord(BAD_CONVERSATION, f"roles {roles}")
    return turns[0]["value"], turns[1]["value"]


def looks_like_code(instruction: str, output: str) -> bool:
    """data_io's heuristic: ``python`` in either text (any case) or a code fence in the output."""
    output_lower = output.lower()
    return "python" in instruction.lower() or "python" in output_lower or "```" in output_lower


def clean_openthoughts2(record: Record, part: str) -> Iterator[Row]:
    if record["source"] in OPENTHOUGHTS2_REMOVED_SOURCES:
        return
    instruction, output = _conversation_turns(record)
    if not looks_like_code(instruction, output):
        yield Row("synth,cot", instruction, remove_think_tags(output))


# -- demo corpus: invented problems with invented thinking, in the Hub schemas ---------------

_PROBLEMS = [
    ("Find the sum of all positive divisors of {n}.", "The divisors add up to {s}."),
    ("What is {n} modulo 7?", "The remainder is {r}."),
    ("Compute the number of ways to arrange {k} distinct books on a shelf.", "There are {f} ways."),
    ("Résoudre : combien vaut {n} + {k} ?", "La somme vaut {t}."),
    ("计算 {n} 乘以 {k} 的结果。", "结果是 {p}。"),
]


def _problem(rng: random.Random, index: int) -> tuple[str, str, str]:
    """(question, thinking, final answer) for demo record ``index``."""
    n, k = rng.randint(12, 400), rng.randint(2, 7)
    factorial = 1
    for i in range(2, k + 1):
        factorial *= i
    values = {
        "n": n,
        "k": k,
        "s": sum(d for d in range(1, n + 1) if n % d == 0),
        "r": n % 7,
        "f": factorial,
        "t": n + k,
        "p": n * k,
    }
    question, answer = _PROBLEMS[index % len(_PROBLEMS)]
    thinking = f"Let me work this out carefully.\nFirst, n = {n} and k = {k}.\nDone thinking."
    return question.format(**values), thinking, answer.format(**values)


def demo_acereason(rng: random.Random) -> dict[str, list[dict]]:
    records = []
    for index in range(260):
        question, thinking, answer = _problem(rng, index)
        category = "code" if index % 4 == 3 else ACEREASON_CATEGORY
        if category == "code":
            question = f"Write a function that solves: {question}"
            output = f"<think>\n{thinking}\n</think>\n```python\nprint({index})\n```"
        elif index % 6 == 1:
            output = f"<think>{thinking}</think>\n\n{answer}\n"
        else:
            output = f"<think>\n{thinking}\n</think>\n{answer}"
        records.append(
            {
                "input": question,
                "output": output,
                "category": category,
                "license": "cc-by-4.0",
                "generator": "demo",
            }
        )
    return {"default": records}


def demo_openthoughts2(rng: random.Random) -> dict[str, list[dict]]:
    sources = [
        "ai2-adapt-dev/openmath-2-math",
        "organic-chemistry-questions",
        "magicoder",
        "nvidia_math",
        "stackexchange-physics",
        "glaive",
    ]
    records = []
    for index in range(300):
        question, thinking, answer = _problem(rng, index)
        output = f"<think>\n{thinking}\n</think>\n\n{answer}"
        if index % 13 == 5:
            output += "\n\nCheck with Python: `print(42)`"  # the code heuristic drops it
        elif index % 17 == 8:
            question = f"Explain step by step.\n```\n{question}\n```"  # fence in the question only
        records.append(
            {
                "conversations": [
                    {"from": "user", "value": question},
                    {"from": "assistant", "value": output},
                ],
                "question": question,
                "source": sources[index % len(sources)],
                "id": index,
            }
        )
    return {"default": records}


ACEREASON = SourceSpec(
    name="acereason",
    hub_id="nvidia/AceReason-1.1-SFT",
    configs=("default",),
    split="train",
    output="acereason/all.parquet",
    format="parquet",
    columns=INSTRUCTION_FIRST,
    clean=clean_acereason,
    layout=HubLayout(config_dir="data"),
    demo=demo_acereason,
    description="AceReason-1.1-SFT math answers without their thinking (synth,cot).",
)

OPENTHOUGHTS2 = SourceSpec(
    name="openthoughts2",
    hub_id="open-thoughts/OpenThoughts2-1M",
    configs=("default",),
    split="train",
    output="openthoughts2/all.parquet",
    format="parquet",
    columns=INSTRUCTION_FIRST,
    clean=clean_openthoughts2,
    layout=HubLayout(config_dir="data"),
    demo=demo_openthoughts2,
    description="OpenThoughts2 answers without their thinking, code removed (synth,cot).",
)

SPECS = (ACEREASON, OPENTHOUGHTS2)
