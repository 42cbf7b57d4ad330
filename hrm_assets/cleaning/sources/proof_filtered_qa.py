"""Science questions with reference answers, minus proofs: natural_reasoning, textbookreasoning.

Both data_io scripts drop "proofs" with the same rough rule: a question whose lower-cased text
contains ``prove`` or ``show that`` gets no ``direct`` row (:func:`asks_for_proof`).

``natural_reasoning`` (``facebook/natural_reasoning``, split ``train``) ->
``natural_reasoning.jsonl``, data_io ``pipe/clean_natural_reasoning.py``: one ``noisy,direct``
row per question whose stripped ``reference_answer`` is not empty and that is not a proof; the
question as is, the stripped reference answer as response.

``textbookreasoning`` (``MegaScience/TextbookReasoning``, split ``train``), data_io
``pipe_clustered/clean_textbookreasoning.py``, two Parquet files written together:
- ``textbookreasoning/cot.parquet``: a ``synth,cot`` row for every record (question, answer);
- ``textbookreasoning/direct.parquet``: a ``noisy,direct`` row (question, reference_answer) for
  every record that is not a proof. Nothing is stripped.

Local mirrors: ``facebook/natural_reasoning/train.jsonl`` (the repository keeps its JSONL at the
top) and ``MegaScience/TextbookReasoning/data/train-*.parquet``.

Deliberate differences:
- natural_reasoning: a record whose ``reference_answer`` or ``question`` is not a string makes
  data_io crash (``.strip()``/``.lower()`` on None); it is skipped here (reason
  ``reference_answer is not a string`` / ``question is not a string``).
- textbookreasoning: data_io writes whatever the fields hold; a null ``answer`` or
  ``reference_answer`` would reach its Parquet as a null. Such a row is counted as skipped by
  the row validation (``field missing or not a string``) instead; the other row of the same
  record is kept. A null ``question`` crashes data_io (``.lower()``): the record is skipped
  (``question is not a string``).
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from hrm_assets.cleaning.rows import INSTRUCTION_FIRST, Row
from hrm_assets.cleaning.sources.hub import HubLayout
from hrm_assets.cleaning.sources.spec import Record, SkipRecord, SourceSpec

PROOF_MARKERS = ("prove", "show that")
NOT_A_STRING = "{field} is not a string"


def asks_for_proof(question: str) -> bool:
    """data_io's rough proof filter: ``prove`` or ``show that`` anywhere, case-insensitively."""
    lower = question.lower()
    return any(marker in lower for marker in PROOF_MARKERS)


def string_field(record: Record, field: str) -> str:
    """``record[field]`` when it is a string; :class:`SkipRecord` otherwise (data_io crashes)."""
    value = record.get(field)
    if not isinstance(value, str):
        raise SkipRecord(NOT_A_STRING.format(field=field), f"got {type(value).__name__}")
    return value


def clean_natural_reasoning(record: Record, part: str) -> Iterator[Row]:
    reference_answer = string_field(record, "reference_answer").strip()
    if not reference_answer:
        return
    question = string_field(record, "question")
    if not asks_for_proof(question):
        yield Row("noisy,direct", question, reference_answer)


def clean_textbookreasoning(record: Record, part: str) -> Iterator[Row]:
    question = string_field(record, "question")
    yield Row("synth,cot", question, record["answer"])
    if not asks_for_proof(question):
        yield Row("noisy,direct", question, record["reference_answer"])


# -- demo corpus: invented science questions in the Hub schemas ----------------------------

_TOPICS = [
    (
        "a block of mass {m} kg sliding down a frictionless incline of {a} degrees",
        "What is its acceleration along the incline in m/s^2?",
        "g sin θ",
    ),
    (
        "an ideal gas at {m} atm and {a} °C in a sealed container",
        "What happens to the pressure if the temperature doubles in kelvin?",
        "it doubles",
    ),
    (
        "a resistor of {m} Ω in series with one of {a} Ω",
        "What is the equivalent resistance?",
        "the sum of the two",
    ),
    (
        "a population of bacteria that doubles every {m} hours for {a} hours",
        "By what factor does it grow?",
        "2^(t/T)",
    ),
    (
        "the reaction 2H₂ + O₂ → 2H₂O with {m} mol of H₂ and {a} mol of O₂",
        "Which reagent limits the reaction?",
        "the one in short supply",
    ),
]
_PROOFS = [
    "Prove that the sum of {m} and {a} consecutive integers is divisible by their count.",
    "Show that a body of {m} kg and one of {a} kg fall with the same acceleration.",
    "Using energy conservation, SHOW THAT the speed at the bottom is independent of mass {m}.",
]
_PREFIXES = ["Consider", "Suppose we have", "Imagine", "Étudions", "考虑"]


def _science_question(rng: random.Random, index: int) -> tuple[str, str, bool]:
    """(question, short answer, is a proof) for demo record ``index``."""
    m, a = rng.randint(2, 40), rng.randint(2, 60)
    if index % 9 == 4:
        return rng.choice(_PROOFS).format(m=m, a=a), "See the argument.", True
    setting, ask, answer = _TOPICS[index % len(_TOPICS)]
    prefix = _PREFIXES[index % len(_PREFIXES)]
    return f"{prefix} {setting.format(m=m, a=a)}. {ask}", answer, False


def demo_natural_reasoning(rng: random.Random) -> dict[str, list[dict]]:
    records = []
    for index in range(240):
        question, answer, _ = _science_question(rng, index)
        if index % 11 == 3:
            answer = "  \n "  # empty once stripped: no row
        elif index % 5 == 1:
            answer = f"  {answer} \n"
        responses = [{"response_model": "demo-model", "response": f"Reasoning... {answer}"}]
        records.append({"question": question, "reference_answer": answer, "responses": responses})
    return {"default": records}


def demo_textbookreasoning(rng: random.Random) -> dict[str, list[dict]]:
    records = []
    subjects = ["physics", "chemistry", "biology", "mathematics"]
    for index in range(220):
        question, answer, _ = _science_question(rng, index)
        records.append(
            {
                "question": question,
                "answer": f"Step 1: identify the quantities.\nStep 2: apply the law.\n"
                f"**Final answer:** {answer} ✓",
                "subject": subjects[index % len(subjects)],
                "reference_answer": answer,
            }
        )
    return {"default": records}


NATURAL_REASONING = SourceSpec(
    name="natural_reasoning",
    hub_id="facebook/natural_reasoning",
    configs=("default",),
    split="train",
    output="natural_reasoning.jsonl",
    format="jsonl",
    clean=clean_natural_reasoning,
    layout=HubLayout(config_dir="."),
    demo=demo_natural_reasoning,
    description="NaturalReasoning questions with reference answers, proofs dropped (noisy,direct).",
)

TEXTBOOKREASONING = SourceSpec(
    name="textbookreasoning",
    hub_id="MegaScience/TextbookReasoning",
    configs=("default",),
    split="train",
    output="textbookreasoning",
    format="parquet",
    columns=INSTRUCTION_FIRST,
    clean=clean_textbookreasoning,
    layout=HubLayout(config_dir="data"),
    demo=demo_textbookreasoning,
    outputs_by_condition=(
        ("synth,cot", "textbookreasoning/cot.parquet"),
        ("noisy,direct", "textbookreasoning/direct.parquet"),
    ),
    description="TextbookReasoning: synthetic answers (synth,cot) and reference answers of "
    "non-proof questions (noisy,direct).",
)

SPECS = (NATURAL_REASONING, TEXTBOOKREASONING)
