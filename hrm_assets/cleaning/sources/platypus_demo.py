"""Demo corpora of the Platypus sources: invented records in each source's raw schema.

Deterministic for a given ``random.Random``; a few records use non-ASCII text, and each corpus
exercises the branches of its cleaning rules (no solution, no lecture, ``$x$`` answers,
pictured TheoremQA records, ...). Nothing here is taken from the real datasets.
"""

from __future__ import annotations

import random

_NAMES = ["Ada", "Bruno", "Chiara", "Dmitri", "Émilie", "Farid", "Grete", "Hiro", "Inés", "Jun"]
_UNICODE_TOPICS = ["Schrödinger", "Ångström", "Δx·Δp ≥ ħ/2", "温度", "μ-Teilchen", "naïve Bayes"]


# -- ARB ---------------------------------------------------------------------------------------


def _arb_math(rng: random.Random, i: int) -> dict:
    a, b = rng.randint(2, 30), rng.randint(2, 30)
    return {
        "instruction": f"Evaluate $\\int_0^{{{a}}} {b}x\\,dx$.",
        "response": f"The integral is ${b}\\cdot {a}^2/2 = {b * a * a / 2:g}$.",
    }


def _arb_reading(rng: random.Random, i: int) -> dict:
    name = _NAMES[i % len(_NAMES)]
    return {
        "instruction": f"Passage: {name} walked {rng.randint(2, 9)} km to the library.\n"
        f"Question: Where did {name} go?",
        "response": f"{name} went to the library.",
    }


def _arb_law(rng: random.Random, i: int) -> dict:
    answer = rng.choice("ABCD")
    return {
        "instruction": f"Case {i}: a contract was signed under duress. Is it enforceable?\n"
        "A. Yes\nB. No\nC. Only in part\nD. Only if ratified",
        "response": answer,
    }


def _arb_science(rng: random.Random, i: int) -> dict:
    moles = rng.randint(1, 9)
    return {
        "instruction": f"How many grams are in {moles} mol of water?",
        "response": f"Water has a molar mass of 18 g/mol, so {moles} mol weigh {18 * moles} g.",
    }


def _arb_physics(rng: random.Random, i: int) -> dict:
    mass, speed = rng.randint(1, 20), rng.randint(1, 15)
    return {
        "instruction": f"A {mass} kg cart moves at {speed} m/s. What is its kinetic energy?",
        "response": f"$E = \\tfrac12 m v^2 = {mass * speed * speed / 2:g}$ J.",
    }


_ARB_MAKERS = {
    "math.json": _arb_math,
    "reading.json": _arb_reading,
    "law.json": _arb_law,
    "science.json": _arb_science,
    "physics.json": _arb_physics,
}


def demo_arb(rng: random.Random) -> dict[str, list[dict]]:
    parts: dict[str, list[dict]] = {}
    for file_name, make in _ARB_MAKERS.items():
        records = [make(rng, i) for i in range(45)]
        topic = _UNICODE_TOPICS[len(parts) % len(_UNICODE_TOPICS)]
        records[7] = {"instruction": f"  Explain {topic} briefly.  ", "response": f"{topic}: …"}
        parts[file_name] = records
    return parts


# -- SciBench ----------------------------------------------------------------------------------

_SCIBENCH_BOOKS = ["atkins", "calculus", "stat"]


def _scibench_record(rng: random.Random, book: str, i: int, with_solution: bool) -> dict:
    value = round(rng.uniform(0.5, 90.0), 2)
    kind = i % 4
    if kind == 0:
        latex = f"${value}$"  # equal to $answer_number$: the number itself is the answer
    elif kind == 1:
        latex = f" $ {value} \\times 10^{{-3}}$ "
    elif kind == 2:
        latex = f"${value}$  "  # strip first, then it matches
    else:
        latex = ""
    record = {
        "problem_text": f" Problem {i} of {book}: compute the quantity for x = {value}. ",
        "answer_latex": latex,
        "answer_number": f" {value} ",
        "unit": rng.choice(["J", "m/s", "mol", ""]),
        "source": book,
        "problemid": f" {i}.{rng.randint(1, 40)} ",
        "comment": "",
    }
    if i == 5:
        record["problem_text"] = f"Die Entropieänderung bei {value} K berechnen (ΔS = q/T)."
    if with_solution:
        record["solution"] = "" if i % 5 == 4 else f"  We substitute x = {value} and get it.  "
    return record


def demo_scibench(rng: random.Random) -> dict[str, list[dict]]:
    parts: dict[str, list[dict]] = {}
    for book in _SCIBENCH_BOOKS:
        parts[f"{book}.json"] = [_scibench_record(rng, book, i, False) for i in range(50)]
        parts[f"{book}_sol.json"] = [_scibench_record(rng, book, i, True) for i in range(20)]
    return parts


# -- OpenBookQA --------------------------------------------------------------------------------

_FACTS = [  # (fact, stem, choices with the correct one first)
    (
        "plants need sunlight to grow",
        "What do plants need to grow?",
        ["sunlight", "darkness", "salt water", "plastic"],
    ),
    (
        "metal conducts electricity",
        "Which material conducts electricity?",
        ["copper wire", "wood", "rubber", "paper"],
    ),
    (
        "the moon orbits the Earth",
        "What orbits the Earth?",
        ["the moon", "the Sun", "Mars", "a comet"],
    ),
    (
        "ice melts when heated",
        "What happens to ice when it is heated?",
        ["it melts", "it grows", "it freezes more", "nothing"],
    ),
    (
        "der Regenbogen entsteht durch Lichtbrechung",
        "Wodurch entsteht ein Regenbogen?",
        ["Lichtbrechung", "Schall", "Magnetismus", "Wärme"],
    ),
]


def _openbookqa_record(rng: random.Random, index: int, split: str) -> dict:
    fact, stem, choices = _FACTS[index % len(_FACTS)]
    order = list(choices)
    rng.shuffle(order)
    return {
        "id": f"{split}-{index}",
        "question_stem": stem,
        "choices": {"text": order, "label": ["A", "B", "C", "D"]},
        "answerKey": chr(65 + order.index(choices[0])),
        "fact1": fact,
        "humanScore": round(rng.uniform(0, 1), 2),
        "clarity": round(rng.uniform(1, 2), 2),
        "turkIdAnonymized": f"t{rng.randint(1000, 9999)}",
    }


def demo_openbookqa(rng: random.Random) -> dict[str, list[dict]]:
    return {
        "train": [_openbookqa_record(rng, i, "train") for i in range(180)],
        "validation": [_openbookqa_record(rng, i, "validation") for i in range(40)],
    }


# -- ReClor ------------------------------------------------------------------------------------


def _reclor_record(rng: random.Random, index: int, split: str) -> dict:
    name = _NAMES[index % len(_NAMES)]
    context = (
        f"{name} says that every mayor of the town has been a teacher. "
        f"The current mayor, {_NAMES[(index + 3) % len(_NAMES)]}, has never taught."
    )
    answers = [
        f"{name}'s claim is false.",
        "The mayor is a teacher.",
        "No mayor has ever taught.",
        "The town has no mayor.",
    ]
    return {
        "context": context,
        "question": "Which one of the following must be true?",
        "answers": answers,
        "label": 0 if rng.random() < 0.7 else rng.randint(1, 3),
        "id_string": f"{split}_{index}",
    }


def demo_reclor(rng: random.Random) -> dict[str, list[dict]]:
    return {
        "train": [_reclor_record(rng, i, "train") for i in range(180)],
        "validation": [_reclor_record(rng, i, "validation") for i in range(40)],
    }


# -- ScienceQA ---------------------------------------------------------------------------------


def _scienceqa_record(rng: random.Random, index: int) -> dict:
    animals = ["frog", "eagle", "salmon", "bat", "lézard"]
    animal = animals[index % len(animals)]
    choices = [" mammal ", "bird", "fish", "amphibian", "reptile"][: rng.randint(2, 5)]
    answer = rng.randrange(len(choices))
    has_lecture, has_solution = index % 3 != 0, index % 4 != 1
    return {
        "question": f"  Which group does a {animal} belong to?  ",
        "choices": choices,
        "answer": answer,
        "hint": "",
        "task": "closed choice",
        "grade": f"grade{rng.randint(1, 8)}",
        "subject": "natural science",
        "topic": "biology",
        "category": "Classify animals",
        "skill": "Classify animals",
        "lecture": "Animals are grouped by shared traits.\n" if has_lecture else "",
        "solution": f"A {animal} has the traits of its group. " if has_solution else "  ",
    }


def demo_scienceqa(rng: random.Random) -> dict[str, list[dict]]:
    return {
        "train": [_scienceqa_record(rng, i) for i in range(150)],
        "validation": [_scienceqa_record(rng, i) for i in range(40)],
        "test": [_scienceqa_record(rng, i) for i in range(40)],
    }


# -- TheoremQA ---------------------------------------------------------------------------------


def _theoremqa_record(rng: random.Random, index: int) -> dict:
    kind = index % 5
    n, k = rng.randint(4, 12), rng.randint(1, 3)
    templates = [
        (f"How many subsets does a set of {n} elements have?", str(2**n), "integer"),
        (f"Is {n * 2 + 1} an odd number?", "True", "bool"),
        (f"What is 1/{n} to three decimals?", f"{1 / n:.3f}", "float"),
        (f"List the roots of x^2 - {n * n}.", str([-n, n]), "list of integer"),
        (f"Für welches k gilt 2^k = {2**k}? (a) {k} (b) {k + 1}", "(a)", "option"),
    ]
    question, answer, answer_type = templates[kind]
    picture = {"bytes": None, "path": f"images/figure_{index}.png"} if index % 9 == 4 else None
    return {
        "Question": question,
        "Answer": answer,
        "Answer_type": answer_type,
        "Picture": picture,
    }


def demo_theoremqa(rng: random.Random) -> dict[str, list[dict]]:
    return {"default": [_theoremqa_record(rng, i) for i in range(240)]}
