"""tasksource-instruct (``tasksource/tasksource-instruct-v0``, split ``train``) -> one Parquet
file per selected task under ``tasksource/``.

data_io ``pipe_clustered/clean_tasksource.py`` keeps the records whose ``task`` is one of 194
hand-picked tasks (:data:`TASKS`) and writes, per task, ``tasksource/<safe task>.parquet`` (the
task name with every character outside ``[A-Za-z0-9_\\-. ]`` turned into ``_``, so
``recast/recast_ner`` -> ``tasksource/recast_recast_ner.parquet``). Each kept record is one
``direct`` row: ``inputs`` unchanged as instruction, ``targets`` with one trailing ``.`` removed
as response. Rows keep the dataset's order within each file; a task without records gets no
file. Records of other tasks give no row (a selection rule, not a defect: they are counted in
``records_read`` only). The Hub repository keeps its Parquet shards under ``data/``
(``data/train-*.parquet``), hence ``HubLayout(config_dir="data")``.

Deliberate differences (data_io crashes or writes a null; here the record is skipped and
reported, every other row is identical):

- a selected record whose ``targets`` is not a string (data_io: ``AttributeError`` on
  ``removesuffix``) -> reason :data:`BAD_TARGETS`;
- a selected record whose ``inputs`` is not a string (data_io: a null instruction in the
  Parquet file, or an Arrow error for other types) -> reason :data:`BAD_INPUTS`;
- a record whose ``task`` is not a string (data_io: silently not selected) -> reason
  :data:`BAD_TASK`; a record without ``task`` at all is reported as malformed by the framework
  (data_io: ``KeyError``).

data_io reads the whole split into per-task Python lists before writing; here a Parquet mirror
is cleaned on columns (:func:`clean_tasksource_batch`), rows grouped per task file within the
engine's memory budget, whatever the split's size.
data_io's "Tasks Not Found" print always lists nothing (it tests a dict that is never empty);
:func:`tasks_without_rows` gives the list it meant.
"""

from __future__ import annotations

import random
import string
from collections.abc import Iterable, Iterator

from hrm_assets.cleaning.columnar import (
    BatchSkip,
    CleanedBatch,
    ColumnarRule,
    constant,
    require_text_columns,
    rows_table,
    text,
)
from hrm_assets.cleaning.rows import INSTRUCTION_FIRST, Row
from hrm_assets.cleaning.sources.hub import HubLayout
from hrm_assets.cleaning.sources.spec import Record, SkipRecord, SourceSpec

OUTPUT_DIR = "tasksource"
CONDITION = "direct"

BAD_TASK = "task is not a string"
BAD_INPUTS = "inputs of a selected task is not a string"
BAD_TARGETS = "targets of a selected task is not a string"

# The tasks data_io keeps, in the order its script lists them (commented-out entries of the
# script are left out here as there).
TASKS: tuple[str, ...] = (
    "WANLI",
    "recast/recast_verbnet",
    "recast/recast_verbcorner",
    "recast/recast_ner",
    "recast/recast_sentiment",
    "recast/recast_puns",
    "recast/recast_factuality",
    "recast/recast_megaveridicality",
    "probability_words_nli/reasoning_1hop",
    "probability_words_nli/usnli",
    "probability_words_nli/reasoning_2hop",
    "nan-nli/joey234--nan-nli",
    "nli_fever",
    "breaking_nli",
    "conj_nli",
    "fracas",
    "dialogue_nli",
    "mpe",
    "dnc",
    "recast_white/fnplus",
    "recast_white/sprl",
    "recast_white/dpr",
    "robust_nli/IS_CS",
    "robust_nli/LI_LI",
    "robust_nli/ST_WO",
    "robust_nli/PI_SP",
    "robust_nli/PI_CD",
    "robust_nli/ST_SE",
    "robust_nli/ST_NE",
    "robust_nli/ST_LM",
    "robust_nli_is_sd",
    "robust_nli_li_ts",
    "gen_debiased_nli/snli_seq_z",
    "gen_debiased_nli/snli_z_aug",
    "gen_debiased_nli/snli_par_z",
    "gen_debiased_nli/mnli_par_z",
    "gen_debiased_nli/mnli_z_aug",
    "gen_debiased_nli/mnli_seq_z",
    "add_one_rte",
    "hlgd",
    "conll2003/pos_tags",
    "conll2003/chunk_tags",
    "conll2003/ner_tags",
    "fig-qa",
    "balanced-copa",
    "e-CARE",
    "vitaminc/tals--vitaminc",
    "rumoureval_2019/RumourEval2019",
    "tweet_eval/irony",
    "tweet_eval/hate",
    "tweet_eval/emoji",
    "tweet_eval/offensive",
    "tweet_eval/sentiment",
    "tweet_eval/emotion",
    "pragmeval/verifiability",
    "pragmeval/mrda",
    "pragmeval/switchboard",
    "pragmeval/emergent",
    "pragmeval/gum",
    "pragmeval/sarcasm",
    "pragmeval/stac",
    "pragmeval/pdtb",
    "lex_glue/ledgar",
    "language-identification",
    "rotten_tomatoes",
    "hate_speech18",
    "sms_spam",
    "snips_built_in_intents",
    "hate_speech_offensive",
    "citation_intent",
    "scicite",
    "lexical_relation_classification/CogALexV",
    "lexical_relation_classification/BLESS",
    "lexical_relation_classification/EVALution",
    "crowdflower/political-media-bias",
    "crowdflower/text_emotion",
    "crowdflower/political-media-message",
    "crowdflower/political-media-audience",
    "crowdflower/airline-sentiment",
    "crowdflower/sentiment_nuclear_power",
    "tweets_hate_speech_detection",
    "wnut_17/wnut_17",
    "ncbi_disease/ncbi_disease",
    "acronym_identification",
    "jnlpba/jnlpba",
    "ontonotes_english/SpeedOfMagic--ontonotes_english",
    "open_question_type",
    "discosense",
    "scientific-exaggeration-detection",
    "fever-evidence-related/mwong--fever-related",
    "dynasent/dynabench.dynasent.r1.all/r1",
    "dynasent/dynabench.dynasent.r2.all/r2",
    "sem_eval_2010_task_8",
    "medmcqa",
    "logiqa",
    "cycic_classification",
    "cycic_multiplechoice",
    "commonsense_qa_2.0",
    "lingnli",
    "monotonicity-entailment",
    "arct",
    "scinli",
    "naturallogic",
    "onestop_qa",
    "moral_stories/full",
    "prost",
    "dynahate",
    "syntactic-augmentation-nli",
    "autotnli",
    "CONDAQA",
    "scruples",
    "defeasible-nli/snli",
    "defeasible-nli/atomic",
    "help-nli",
    "nli-veridicality-transitivity",
    "natural-language-satisfiability",
    "lonli",
    "dadc-limit-nli",
    "FLUTE",
    "summarize_from_feedback/comparisons",
    "folio",
    "tomi-nli",
    "avicenna",
    "MedQA-USMLE-4-options-hf",
    "wikimedqa/medwiki",
    "mutual",
    "quote-repetition",
    "redefine-math",
    "puzzte",
    "implicatures",
    "race-c",
    "spartqa-yn",
    "spartqa-mchoice",
    "temporal-nli",
    "riddle_sense",
    "clcd-english",
    "twentyquestions",
    "reclor",
    "counterfactually-augmented-imdb",
    "counterfactually-augmented-snli",
    "cnli",
    "equate",
    "implicit-hate-stg1",
    "logiqa-2.0-nli",
    "PARARULE-Plus",
    "mindgames",
    "universal_dependencies/en_partut/deprel",
    "universal_dependencies/en_lines/deprel",
    "universal_dependencies/en_gum/deprel",
    "universal_dependencies/en_ewt/deprel",
    "cloth",
    "dgen",
    "I2D2",
    "Touche23-ValueEval",
    "starcon",
    "banking77",
    "ruletaker",
    "lsat_qa/all",
    "ConTRoL-nli",
    "tracie",
    "sherliic",
    "sen-making/1",
    "sen-making/2",
    "mbib-base/cognitive-bias",
    "mbib-base/gender-bias",
    "mbib-base/hate-speech",
    "mbib-base/political-bias",
    "mbib-base/racial-bias",
    "robustLR",
    "logical-fallacy",
    "parade",
    "cladder",
    "subjectivity",
    "MOH",
    "VUAC",
    "TroFi",
    "sharc_modified/mod",
    "conceptrules_v2",
    "disrpt/eng.dep.scidtb",
    "conll2000",
    "few-nerd/supervised",
    "com2sense",
    "scone",
    "winodict",
    "fool-me-twice",
    "monli",
    "corr2cause",
    "twitter-financial-news-sentiment",
    "SpaceNLI",
    "propsegment/nli",
    "HatemojiBuild",
    "regset",
    "esci",
    "dnd_style_intents",
)

_SAFE_CHARS = frozenset(string.ascii_letters + string.digits + "_-. ")


def safe_task_filename(task: str) -> str:
    """data_io's ``safe_filename``: every character outside ``[A-Za-z0-9_\\-. ]`` -> ``_``."""
    return "".join(c if c in _SAFE_CHARS else "_" for c in task)


def task_output(task: str) -> str:
    """The cleaned file of a task, relative to the cleaned root."""
    return f"{OUTPUT_DIR}/{safe_task_filename(task)}.parquet"


TASK_OUTPUTS: dict[str, str] = {task: task_output(task) for task in TASKS}

# Where the route sends records of tasks that are not selected. clean yields no row for them,
# so this file is never opened; it only keeps the route total.
NOT_SELECTED_OUTPUT = f"{OUTPUT_DIR}/not-selected.parquet"


def _check_tables() -> None:
    if len(TASK_OUTPUTS) != len(TASKS) or len(set(TASK_OUTPUTS.values())) != len(TASKS):
        raise ValueError("tasksource: duplicate task or two tasks with the same file name")
    if NOT_SELECTED_OUTPUT in TASK_OUTPUTS.values():
        raise ValueError(f"tasksource: {NOT_SELECTED_OUTPUT} is a task's file")


_check_tables()


def _task_of(record: Record) -> str:
    task = record["task"]
    if not isinstance(task, str):
        raise SkipRecord(BAD_TASK, f"task is {type(task).__name__}")
    return task


def route_tasksource(record: Record, part: str) -> str:
    return TASK_OUTPUTS.get(_task_of(record), NOT_SELECTED_OUTPUT)


def clean_tasksource(record: Record, part: str) -> Iterator[Row]:
    task = _task_of(record)
    if task not in TASK_OUTPUTS:
        return
    inputs, targets = record["inputs"], record["targets"]
    if not isinstance(inputs, str):
        raise SkipRecord(BAD_INPUTS, f"{task}: inputs is {type(inputs).__name__}")
    if not isinstance(targets, str):
        raise SkipRecord(BAD_TARGETS, f"{task}: targets is {type(targets).__name__}")
    yield Row(CONDITION, inputs, targets.removesuffix("."))


COLUMNS = ("task", "inputs", "targets")


def clean_tasksource_batch(batch, part: str) -> CleanedBatch:
    """:func:`clean_tasksource` and :func:`route_tasksource` on a record batch (text columns:
    a value that is not a string can only be a null here)."""
    import numpy as np
    import pyarrow.compute as pc

    from hrm_assets.cleaning.arrow_buffers import (
        index_array,
        integers,
        null_flags,
        string_array,
        true_flags,
    )

    task = text(batch.column("task"))
    inputs, targets = text(batch.column("inputs")), text(batch.column("targets"))
    null_task = null_flags(task)
    selected = true_flags(pc.is_in(task, value_set=string_array(TASKS)))
    bad_inputs = selected & null_flags(inputs)
    bad_targets = selected & ~bad_inputs & null_flags(targets)
    chosen = np.flatnonzero(selected & ~bad_inputs & ~bad_targets)
    take = index_array(chosen)
    kept_targets = targets.take(take)
    response = pc.if_else(
        pc.ends_with(kept_targets, "."), pc.utf8_slice_codeunits(kept_targets, 0, -1), kept_targets
    )
    tasks = task.take(take).dictionary_encode()

    def task_of(row: int) -> str:
        return batch.column("task")[row].as_py()

    return CleanedBatch(
        rows=rows_table(constant(CONDITION, len(chosen)), inputs.take(take), response),
        records=chosen,
        route_names=[TASK_OUTPUTS[name] for name in tasks.dictionary.to_pylist()],
        route_codes=integers(tasks.indices),
        skips=[
            BatchSkip(
                BAD_TASK,
                np.flatnonzero(null_task),
                detail=lambda _row: "task is NoneType",
                output=lambda _row: TASKSOURCE.output,
            ),
            BatchSkip(
                BAD_INPUTS,
                np.flatnonzero(bad_inputs),
                detail=lambda row: f"{task_of(row)}: inputs is NoneType",
                output=lambda row: TASK_OUTPUTS[task_of(row)],
            ),
            BatchSkip(
                BAD_TARGETS,
                np.flatnonzero(bad_targets),
                detail=lambda row: f"{task_of(row)}: targets is NoneType",
                output=lambda row: TASK_OUTPUTS[task_of(row)],
            ),
        ],
    )


TASKSOURCE_COLUMNAR = ColumnarRule(
    columns=COLUMNS,
    clean=clean_tasksource_batch,
    check_schema=lambda schema: require_text_columns(schema, COLUMNS),
)


def tasks_without_rows(written_outputs: Iterable[str]) -> list[str]:
    """Selected tasks (in :data:`TASKS` order) whose file is not among ``written_outputs``
    (relative paths, e.g. the keys of a ``CleaningReport.files``)."""
    written = set(written_outputs)
    return [task for task in TASKS if TASK_OUTPUTS[task] not in written]


# -- demo corpus: invented classification and choice prompts in the Hub schema ------------

_DEMO_TASKS = (
    "WANLI",
    "recast/recast_ner",
    "tweet_eval/emoji",
    "dynasent/dynabench.dynasent.r1.all/r1",
    "commonsense_qa_2.0",
    "sen-making/1",
)
_DEMO_UNSELECTED = ("social_i_qa", "ethics/justice", "mmlu/abstract_algebra")

_SUBJECTS = [
    "The chef",
    "A cyclist",
    "Die Lehrerin",
    "Le médecin",
    "小王",
    "The committee",
    "María",
    "An old sailor",
]
_ACTIONS = [
    "opened the window",
    "missed the bus",
    "wrote a long letter",
    "planted tomatoes",
    "fixed the radio",
    "read the contract twice",
    "sang in the choir",
]
_LABELS = ("entailment", "neutral", "contradiction")


def _nli(rng: random.Random, index: int) -> dict:
    subject, action = _SUBJECTS[index % len(_SUBJECTS)], rng.choice(_ACTIONS)
    turn = index // 7  # coprime with the task cycle, so each task sees every label and suffix
    label = _LABELS[turn % 3]
    hypothesis = {
        "entailment": f"{subject} did something.",
        "neutral": f"{subject} was tired afterwards.",
        "contradiction": f"{subject} never {action.split(' ', 1)[1]}.",
    }[label]
    inputs = (
        f'With no explanation, label the following with either "entailment", "neutral" or '
        f'"contradiction".\nPremise — {subject} {action}.\nHypothesis — {hypothesis}'
    )
    # Some targets end in '.', one in '..': data_io removes exactly one.
    targets = label + ("." if turn % 4 == 1 else ".." if turn % 5 == 3 else "")
    return {"inputs": inputs, "targets": targets}


def _choice(rng: random.Random, index: int) -> dict:
    subject, action = _SUBJECTS[index % len(_SUBJECTS)], rng.choice(_ACTIONS)
    options = ["A) because it rained", "B) because it was sunny", "C) für die Nachbarn"]
    turn = index // 7
    answer = options[turn % 3][0]
    inputs = (
        f'With no explanation, chose the best option from "A", "B" or "C". '
        f"Why {subject.lower() if subject.isascii() else subject} {action}?\n" + "\n".join(options)
    )
    return {"inputs": inputs, "targets": answer + ("." if turn % 2 == 0 else "")}


def _emoji(rng: random.Random, index: int) -> dict:
    emoji = ["❤", "😂", "🔥", "🎄", "☀"][(index // 7) % 5]
    tweet = f"{rng.choice(_ACTIONS)} today, {_SUBJECTS[index % len(_SUBJECTS)]} says ✨"
    inputs = f"With no explanation, chose the best emoji for the tweet.\n{tweet}"
    return {"inputs": inputs, "targets": emoji}


def demo_tasksource(rng: random.Random) -> dict[str, list[dict]]:
    records = []
    for index in range(240):
        if index % 8 == 3:
            task = _DEMO_UNSELECTED[index % len(_DEMO_UNSELECTED)]
        else:
            task = _DEMO_TASKS[index % len(_DEMO_TASKS)]
        if task == "tweet_eval/emoji":
            record = _emoji(rng, index)
        elif task in ("commonsense_qa_2.0", "sen-making/1", "social_i_qa"):
            record = _choice(rng, index)
        else:
            record = _nli(rng, index)
        records.append({**record, "task": task})
    return {"default": records}


TASKSOURCE = SourceSpec(
    name="tasksource",
    hub_id="tasksource/tasksource-instruct-v0",
    configs=("default",),
    split="train",
    output=f"{OUTPUT_DIR}/",
    format="parquet",
    columns=INSTRUCTION_FIRST,
    clean=clean_tasksource,
    route=route_tasksource,
    layout=HubLayout(config_dir="data"),
    demo=demo_tasksource,
    columnar=TASKSOURCE_COLUMNAR,
    description="tasksource-instruct, 194 selected tasks, one file per task (direct).",
)

SPECS = (TASKSOURCE,)
