"""The Platypus sources (data_io ``pipe/clean_platypus/``) -> ``Platypus/*.jsonl``.

One asset per script, each a ``direct``/``cot`` JSONL file as data_io writes it:

- ``arb`` (``clean_arb.py``, local ``Platypus/ARB/<subject>.json``) -> ``Platypus/arb_math``,
  ``arb_reading``, ``arb_law``, ``arb_science``, ``arb_physics`` ``.jsonl``: per record, the
  subject's fixed instruction, a blank line and ``instruction``; ``response`` as is; ``direct``
  for law, ``cot`` for the others. All five files are written, even when empty. Keys come in
  data_io's ARB order, ``instruction, response, condition`` (the other scripts put
  ``condition`` first).
- ``openbookqa`` (``allenai/openbookqa`` config ``additional``, train then validation) ->
  ``Platypus/openbookqa.jsonl``: one ``direct`` row, the fixed question preamble, the stem, a
  space and the lettered choices (the first on a new line), then the fact; response
  ``answerKey``.
- ``reclor`` (``metaeval/reclor``, train then validation) -> ``Platypus/reclor.jsonl``: one
  ``direct`` row, ``question``, ``context`` and the lettered ``answers``; response the letter
  of ``label``.
- ``scibench`` (local ``Platypus/scibench/dataset/original/*.json``) ->
  ``Platypus/scibench.jsonl``: every text field stripped; a ``cot`` row (solution) when there
  is a solution, then always a ``direct`` row with ``answer_latex``, or ``answer_number`` when
  ``answer_latex`` is just ``$<answer_number>$``.
- ``scienceqa`` (``metaeval/ScienceQA_text_only``, train, validation, test) ->
  ``Platypus/scienceqa.jsonl``: a ``cot`` row when there is a solution, then a ``direct`` row;
  a lecture, when there is one, changes the preamble and is appended.
- ``theoremqa`` (``TIGER-Lab/TheoremQA``, test) -> ``Platypus/theoremqa.jsonl``: a ``direct``
  row ``Question``/``Answer`` for each record without a picture (pictured records give no row:
  data_io's selection rule, they count in ``records_read`` only).

Deliberate differences from data_io (rows of every other record are identical):

- Records data_io would crash on are skipped and reported: a record that is not a JSON object
  (:data:`NOT_AN_OBJECT`), a text field that is missing or not a string where data_io calls
  ``.strip()`` or concatenates (:data:`BAD_TEXT`), an ``answerKey`` that indexes no choice
  (:data:`BAD_ANSWER_KEY`), a label or answer that is no valid ``chr(65 + label)``
  (:data:`BAD_LABEL`).
- Text fields that data_io formats with an f-string are required to be strings too: data_io
  would write ``None`` (or a number's text) into the instruction; here the record is skipped
  under :data:`BAD_TEXT`. A response that is not a string (data_io would write a JSON number)
  is counted by the framework's row validation.
- scibench's files are read in sorted name order; data_io takes ``os.listdir``'s order, which
  depends on the file system. Rows within a file keep the file's order.
- TheoremQA follows the script's rule as written (rows of records whose ``Picture`` is null),
  which is what data_io does under pandas 2. From pandas 3 on, ``DataFrame.iterrows`` turns
  that null into NaN, ``is None`` never holds and data_io writes an empty file.
- Splits are streamed one after the other (data_io concatenates pandas frames); JSON arrays
  are read element by element (data_io loads each file whole).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from hrm_assets.cleaning.rows import INSTRUCTION_FIRST, Row
from hrm_assets.cleaning.sources.hub_splits import HubSplitsLayout
from hrm_assets.cleaning.sources.platypus_demo import (
    demo_arb,
    demo_openbookqa,
    demo_reclor,
    demo_scibench,
    demo_scienceqa,
    demo_theoremqa,
)
from hrm_assets.cleaning.sources.platypus_raw import (
    HubSplitFiles,
    JsonArrayFiles,
    UndecodedImagesHubLayout,
)
from hrm_assets.cleaning.sources.spec import Record, SkipRecord, SourceSpec

OUTPUT_DIR = "Platypus"

NOT_AN_OBJECT = "raw record is not a JSON object"
BAD_TEXT = "raw text field missing or not a string"
BAD_ANSWER_KEY = "answerKey does not index a choice"
BAD_LABEL = "answer index is not a valid option letter"


def _record(record: Any) -> Mapping:
    if not isinstance(record, Mapping):
        raise SkipRecord(NOT_AN_OBJECT, f"got {type(record).__name__}")
    return record


def _text(record: Mapping, key: str, default: str | None = None) -> str:
    """``record[key]`` (``record.get(key, default)`` when a default is given), a string."""
    if key not in record and default is not None:
        return default
    value = record.get(key)
    if not isinstance(value, str):
        kind = "missing" if key not in record else type(value).__name__
        raise SkipRecord(BAD_TEXT, f"{key}: {kind}")
    return value


def _texts(record: Mapping, key: str) -> list[str]:
    values = record.get(key)
    if not isinstance(values, Sequence) or isinstance(values, str):
        kind = "missing" if key not in record else type(values).__name__
        raise SkipRecord(BAD_TEXT, f"{key}: {kind}, not a list")
    for index, value in enumerate(values):
        if not isinstance(value, str):
            raise SkipRecord(BAD_TEXT, f"{key}[{index}]: {type(value).__name__}")
    return list(values)


def option_letter(index: Any) -> str:
    """data_io's ``chr(65 + index)`` (whatever the index, as data_io); SkipRecord where it
    raises."""
    try:
        return chr(65 + index)
    except (TypeError, ValueError, OverflowError) as error:
        raise SkipRecord(BAD_LABEL, f"{index!r}: {error}") from None


# -- ARB ---------------------------------------------------------------------------------------

ARB_SUBJECTS: dict[str, tuple[str, str]] = {
    "math.json": ("Solve the math problem.", "cot"),
    "reading.json": ("Solve the reading comprehension problem.", "cot"),
    "law.json": ("Choose the correct option letter.", "direct"),
    "science.json": ("Solve the science problem.", "cot"),
    "physics.json": ("Solve the physics problem.", "cot"),
}
"""File -> (instruction preamble, condition), in data_io's order."""


def arb_output(subject_file: str) -> str:
    """``math.json`` -> ``Platypus/arb_math.jsonl`` (data_io: ``arb_{filename}l``)."""
    return f"{OUTPUT_DIR}/arb_{subject_file}l"


def clean_arb(record: Record, part: str) -> Iterator[Row]:
    preamble, condition = ARB_SUBJECTS[part]
    record = _record(record)
    instruction = _text(record, "instruction")
    if "response" not in record:
        raise SkipRecord(BAD_TEXT, "response: missing")
    yield Row(condition, f"{preamble}\n\n{instruction}", record["response"])


def route_arb(record: Record, part: str) -> str:
    return arb_output(part)


# -- OpenBookQA --------------------------------------------------------------------------------

OPENBOOKQA_PREAMBLE = (
    "Based on the given fact, which of the following option is the correct answer to the question?"
)


def clean_openbookqa(record: Record, part: str) -> Iterator[Row]:
    record = _record(record)
    choices_field = record.get("choices")
    if not isinstance(choices_field, Mapping):
        raise SkipRecord(BAD_TEXT, "choices: not a {text, label} object")
    choices = _texts(choices_field, "text")
    stem, fact = _text(record, "question_stem"), _text(record, "fact1")
    answer_key = _text(record, "answerKey")
    try:  # data_io looks the answer up (and never uses it): it crashes when that fails
        choices[ord(answer_key) - 65]
    except (TypeError, IndexError) as error:
        raise SkipRecord(BAD_ANSWER_KEY, f"{answer_key!r}: {error}") from None
    formatted = "\n".join(
        f"\n{chr(65 + i)}: {choice}" if i == 0 else f"{chr(65 + i)}: {choice}"
        for i, choice in enumerate(choices)
    )
    instruction = f"{OPENBOOKQA_PREAMBLE}\n\n{stem} {formatted}\n\nFact: {fact}"
    yield Row("direct", instruction, answer_key)


# -- ReClor ------------------------------------------------------------------------------------


def clean_reclor(record: Record, part: str) -> Iterator[Row]:
    record = _record(record)
    question, context = _text(record, "question"), _text(record, "context")
    answers = _texts(record, "answers")
    letter = option_letter(record.get("label"))
    instruction = f"{question}\n\n{context}\n\nOptions:"
    for i, answer in enumerate(answers):
        instruction += "\n" + chr(65 + i) + ": " + answer
    yield Row("direct", instruction, letter)


# -- SciBench ----------------------------------------------------------------------------------


def clean_scibench(record: Record, part: str) -> Iterator[Row]:
    record = _record(record)
    problem = _text(record, "problem_text", "").strip()
    solution = _text(record, "solution", "").strip()
    answer_latex = _text(record, "answer_latex", "").strip()
    answer_number = _text(record, "answer_number", "").strip()
    if answer_latex == f"${answer_number}$":
        answer_latex = answer_number
    if solution:
        yield Row("cot", problem, solution)
    yield Row("direct", problem, answer_latex)


# -- ScienceQA ---------------------------------------------------------------------------------

SCIENCEQA_COT_PREAMBLE = (
    "Solve the following question using the information provided in the lecture."
)
SCIENCEQA_DIRECT_PREAMBLE = (
    "Choose the correct option letter for the following question based on the information "
    "from the lecture."
)


def clean_scienceqa(record: Record, part: str) -> Iterator[Row]:
    record = _record(record)
    question = _text(record, "question").strip()
    choices = _texts(record, "choices")
    lecture = _text(record, "lecture").strip()
    solution = _text(record, "solution").strip()
    letter = option_letter(record.get("answer"))
    options = "\n".join(f"{chr(65 + i)}: {choice.strip()}" for i, choice in enumerate(choices))
    plain = f"{question}\nOptions:\n{options}"
    if solution:
        instruction = plain
        if lecture:
            instruction = f"{SCIENCEQA_COT_PREAMBLE}\n\n{plain}\n\nLecture: {lecture}"
        yield Row("cot", instruction, f"{solution}\n\nAnswer: {letter}")
    instruction = plain
    if lecture:
        instruction = f"{SCIENCEQA_DIRECT_PREAMBLE}\n\n{plain}\n\nLecture: {lecture}"
    yield Row("direct", instruction, letter)


# -- TheoremQA ---------------------------------------------------------------------------------


def clean_theoremqa(record: Record, part: str) -> Iterator[Row]:
    record = _record(record)
    if "Picture" not in record:
        raise SkipRecord(BAD_TEXT, "Picture: missing")
    if record["Picture"] is None:
        if "Question" not in record or "Answer" not in record:
            raise SkipRecord(BAD_TEXT, "Question or Answer: missing")
        yield Row("direct", record["Question"], record["Answer"])


# -- specs -------------------------------------------------------------------------------------

ARB = SourceSpec(
    name="arb",
    hub_id=None,
    configs=None,
    split="",
    output=OUTPUT_DIR,
    format="jsonl",
    columns=INSTRUCTION_FIRST,
    clean=clean_arb,
    layout=JsonArrayFiles(
        folder="Platypus/ARB",
        files=tuple(ARB_SUBJECTS),
        download_hint="hf download imone/ARB --repo-type dataset --local-dir <raw>/Platypus/ARB",
    ),
    demo=demo_arb,
    route=route_arb,
    route_outputs=tuple(arb_output(name) for name in ARB_SUBJECTS),
    description="ARB advanced reasoning problems, one file per subject.",
)

OPENBOOKQA = SourceSpec(
    name="openbookqa",
    hub_id="allenai/openbookqa",
    configs=("additional",),
    split="train+validation",
    output=f"{OUTPUT_DIR}/openbookqa.jsonl",
    format="jsonl",
    clean=clean_openbookqa,
    layout=HubSplitsLayout(config_dir="additional", config="additional"),
    demo=demo_openbookqa,
    description="OpenBookQA questions with their supporting fact, answer letters (direct).",
)

RECLOR = SourceSpec(
    name="reclor",
    hub_id="metaeval/reclor",
    configs=None,
    split="train+validation",
    output=f"{OUTPUT_DIR}/reclor.jsonl",
    format="jsonl",
    clean=clean_reclor,
    layout=HubSplitFiles(files={"train": "train.json", "validation": "val.json"}),
    demo=demo_reclor,
    description="ReClor logical reasoning questions, answer letters (direct).",
)

SCIBENCH = SourceSpec(
    name="scibench",
    hub_id=None,
    configs=None,
    split="",
    output=f"{OUTPUT_DIR}/scibench.jsonl",
    format="jsonl",
    clean=clean_scibench,
    layout=JsonArrayFiles(
        folder="Platypus/scibench/dataset/original",
        download_hint=(
            "git clone https://github.com/mandyyyyii/scibench.git <raw>/Platypus/scibench"
        ),
    ),
    demo=demo_scibench,
    description="SciBench college science problems: solutions (cot) and answers (direct).",
)

SCIENCEQA = SourceSpec(
    name="scienceqa",
    hub_id="metaeval/ScienceQA_text_only",
    configs=("default",),
    split="train+validation+test",
    output=f"{OUTPUT_DIR}/scienceqa.jsonl",
    format="jsonl",
    clean=clean_scienceqa,
    layout=HubSplitsLayout(),
    demo=demo_scienceqa,
    description="ScienceQA text-only questions: explanations (cot) and answer letters (direct).",
)

THEOREMQA = SourceSpec(
    name="theoremqa",
    hub_id="TIGER-Lab/TheoremQA",
    configs=("default",),
    split="test",
    output=f"{OUTPUT_DIR}/theoremqa.jsonl",
    format="jsonl",
    clean=clean_theoremqa,
    layout=UndecodedImagesHubLayout(config_dir="data", image_columns=("Picture",)),
    demo=demo_theoremqa,
    description="TheoremQA questions without pictures, final answers (direct).",
)

SPECS = (ARB, OPENBOOKQA, RECLOR, SCIBENCH, SCIENCEQA, THEOREMQA)
