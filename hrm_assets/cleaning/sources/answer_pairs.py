"""Question/answer pairs copied as they are: principia_collection, webinstruct_verified.

Neither data_io script filters or strips anything: every record gives one row.

``principia_collection`` (``facebook/principia-collection``, every split: ``mathematical_object``
then ``numerical``) -> ``principia_collection.jsonl``, data_io
``pipe/clean_principia_collection.py``: ``synth,direct`` rows, ``problem_statement`` ->
``answer``. Local mirror: ``facebook/principia-collection/data/<split>-*.parquet``.

``webinstruct_verified`` (``TIGER-Lab/WebInstruct-verified``, split ``train``) ->
``webinstruct_verified.jsonl``, data_io ``pipe/clean_webinstruct_verified.py``: ``direct`` rows,
``question`` -> ``answer``. Local mirror: ``TIGER-Lab/WebInstruct-verified/data/train-*.parquet``.

Deliberate difference: data_io would write a null field as JSON ``null`` (a row its tokenizer
cannot use); here such a row is counted as skipped by the row validation (``field missing or
not a string``).
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from hrm_assets.cleaning.rows import Row
from hrm_assets.cleaning.sources.hub import HubLayout
from hrm_assets.cleaning.sources.hub_splits import HubSplitsLayout
from hrm_assets.cleaning.sources.spec import Record, SourceSpec


def clean_principia_collection(record: Record, part: str) -> Iterator[Row]:
    yield Row("synth,direct", record["problem_statement"], record["answer"])


def clean_webinstruct_verified(record: Record, part: str) -> Iterator[Row]:
    yield Row("direct", record["question"], record["answer"])


# -- demo corpora: invented problems in the Hub schemas --------------------------------------

_PHYSICS_TOPICS = ["Quantum mechanics", "Fluid dynamics", "Statistical mechanics", "Optics"]
_MATH_TOPICS = ["11A41 Primes", "34A30 Linear ODEs", "15A18 Eigenvalues", "05A10 Factorials"]


def _principia_object(rng: random.Random, index: int) -> dict:
    a, b = rng.randint(1, 9), rng.randint(1, 9)
    if index % 2:
        problem = f"Solve $y'' + {a + b}y' + {a * b}y = 0$ for a general real solution $y(t)$."
        answer = f"$y(t) = C_1 e^{{-{a}t}} + C_2 e^{{-{b}t}}$"
    else:
        problem = (
            f"Give the eigenvalues of the matrix $\\begin{{pmatrix}} {a} & 0 \\\\ 0 & {b} "
            f"\\end{{pmatrix}}$ as a set; écrivez l'ensemble."
        )
        answer = f"$\\{{{min(a, b)}, {max(a, b)}\\}}$"
    return {
        "topic": _MATH_TOPICS[index % len(_MATH_TOPICS)],
        "problem_statement": problem,
        "answer": answer,
        "answer_type": "mathematical_object",
    }


def _principia_numerical(rng: random.Random, index: int) -> dict:
    mass, speed = rng.randint(1, 20), rng.randint(2, 30)
    problem = (
        f"A particle of mass {mass} kg moves at {speed} m/s. Compute its kinetic energy "
        f"in joules (½mv²)."
    )
    return {
        "topic": _PHYSICS_TOPICS[index % len(_PHYSICS_TOPICS)],
        "problem_statement": problem,
        "answer": f"{mass * speed * speed / 2:g}",
        "answer_type": "numerical",
    }


def demo_principia_collection(rng: random.Random) -> dict[str, list[dict]]:
    return {
        "mathematical_object": [_principia_object(rng, i) for i in range(120)],
        "numerical": [_principia_numerical(rng, i) for i in range(110)],
    }


_WEB_QUESTIONS = [
    ("What is the derivative of $x^{n}$ with respect to $x$?", "{n}x^{m}", "Expression"),
    ("A car travels {n} km in {k} hours. What is its average speed in km/h?", "{q:g}", "Float"),
    ("How many moles are in {n} g of water (18 g/mol)?", "{w:g}", "Float"),
    ("¿Cuántos lados tiene un polígono cuyos ángulos interiores suman {s}°?", "{sides}", "Integer"),
    ("Is {n} a prime number?", "{prime}", "Boolean"),
]


def demo_webinstruct_verified(rng: random.Random) -> dict[str, list[dict]]:
    records = []
    for index in range(250):
        n, k = rng.randint(2, 97), rng.randint(1, 8)
        sides = rng.randint(3, 12)
        values = {
            "n": n,
            "k": k,
            "m": n - 1,
            "q": n / k,
            "w": round(n / 18, 3),
            "s": (sides - 2) * 180,
            "sides": sides,
            "prime": "Yes" if all(n % d for d in range(2, n)) else "No",
        }
        question, answer, answer_type = _WEB_QUESTIONS[index % len(_WEB_QUESTIONS)]
        records.append(
            {
                "id": f"demo-{index:05d}",
                "question": question.format(**values),
                "answer": answer.format(**values),
                "answer_type": answer_type,
                "category": "Mathematics" if index % 2 else "Physics",
                "difficulty": ["Primary School", "Senior High School", "University"][index % 3],
            }
        )
    return {"default": records}


PRINCIPIA_COLLECTION = SourceSpec(
    name="principia_collection",
    hub_id="facebook/principia-collection",
    configs=("default",),
    split="mathematical_object+numerical",
    output="principia_collection.jsonl",
    format="jsonl",
    clean=clean_principia_collection,
    layout=HubSplitsLayout(config_dir="data"),
    demo=demo_principia_collection,
    description="Principia Collection synthetic problems and answers (synth,direct).",
)

WEBINSTRUCT_VERIFIED = SourceSpec(
    name="webinstruct_verified",
    hub_id="TIGER-Lab/WebInstruct-verified",
    configs=("default",),
    split="train",
    output="webinstruct_verified.jsonl",
    format="jsonl",
    clean=clean_webinstruct_verified,
    layout=HubLayout(config_dir="data"),
    demo=demo_webinstruct_verified,
    description="WebInstruct-verified questions with verified answers (direct).",
)

SPECS = (PRINCIPIA_COLLECTION, WEBINSTRUCT_VERIFIED)
