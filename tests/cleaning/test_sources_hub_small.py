"""Ten Hub sources against data_io's scripts: natural_reasoning, no_robots, numinamath, omnimath,
principia_collection, webinstruct_verified (pipe/, JSONL) and acereason, openmathinstruct2,
openthoughts2, textbookreasoning (pipe_clustered/, Parquet).

There is no real data for these sources here, so every fixture is SYNTHETIC: small records
invented by this file in each dataset's Hub schema, written where a local mirror of the Hub
repository keeps them. Expected rows restate each data_io script over the same raw records
(``data_io_<source>``), independently of the code under test; records that would crash data_io
are left out of the restatement and checked as skipped instead.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hrm_assets import demo
from hrm_assets.cleaning.checks import NOT_A_STRING
from hrm_assets.cleaning.clean import clean_source, source_code_version
from hrm_assets.cleaning.rows import iter_cleaned_rows
from hrm_assets.cleaning.sources import SOURCES, build_registry, get_source
from hrm_assets.cleaning.sources.hub_splits import HubSplitsLayout
from hrm_assets.cleaning.sources.spec import SourceSpec

NAMES = [
    "natural_reasoning",
    "no_robots",
    "numinamath",
    "omnimath",
    "principia_collection",
    "webinstruct_verified",
    "acereason",
    "openmathinstruct2",
    "openthoughts2",
    "textbookreasoning",
]


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")


# -- helpers -----------------------------------------------------------------------------------


def row(condition: str, instruction, response) -> dict:
    return {"condition": condition, "instruction": instruction, "response": response}


def write_raw(root: Path, relative: str, records: list[dict]) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".jsonl":
        path.write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
        )
    else:
        pq.write_table(pa.Table.from_pylist(records), path)


def jsonl_bytes(rows: list[dict]) -> bytes:
    """data_io's write_jsonl: orjson.dumps(row) + newline (compact, UTF-8, keys in order)."""
    return b"".join(
        json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"
        for r in rows
    )


def parquet_rows(path: Path) -> list[dict]:
    table = pq.read_table(path)
    assert sorted(table.column_names) == ["condition", "instruction", "response"]
    return table.select(["condition", "instruction", "response"]).to_pylist()


def run(name: str, tmp_path: Path, batch_size: int = 3):
    """Clean ``name`` from ``tmp_path/raw`` (small batches: rows cross batch boundaries)."""
    return clean_source(get_source(name), tmp_path / "cleaned", tmp_path / "raw", batch_size)


def assert_outputs(tmp_path: Path, expected: dict[str, list[dict]]) -> None:
    """Each expected file holds exactly these rows (JSONL: exactly these bytes)."""
    cleaned = tmp_path / "cleaned"
    for relative, rows in expected.items():
        path = cleaned / relative
        if relative.endswith(".jsonl"):
            assert path.read_bytes() == jsonl_bytes(rows), relative
        else:
            assert parquet_rows(path) == rows, relative


# -- data_io's scripts, restated ---------------------------------------------------------------


def data_io_natural_reasoning(parts):
    out = []
    for r in parts["default"]:
        reference_answer = r["reference_answer"].strip()
        if len(reference_answer):
            lower_question = r["question"].lower()
            if "prove" not in lower_question and "show that" not in lower_question:
                out.append(row("noisy,direct", r["question"], reference_answer))
    return {"natural_reasoning.jsonl": out}


def data_io_no_robots(parts):
    out = []
    for split in ("train", "test"):
        for r in parts[split]:
            msgs = r["messages"]
            if len(msgs) < 2:
                continue
            system_content, start_idx = "", 0
            if msgs[0]["role"] == "system":
                system_content, start_idx = msgs[0]["content"] + "\n\n", 1
            if (
                len(msgs) > start_idx + 1
                and msgs[start_idx]["role"] == "user"
                and msgs[start_idx + 1]["role"] == "assistant"
            ):
                out.append(
                    row(
                        "cot",
                        system_content + msgs[start_idx]["content"],
                        msgs[start_idx + 1]["content"],
                    )
                )
    return {"no_robots.jsonl": out}


def data_io_numinamath(parts):
    out = []
    for r in parts["default"]:
        if (
            not r["synthetic"]
            and r["problem_is_valid"] == "Yes"
            and r["solution_is_valid"] == "Yes"
            and r["solution"] is not None
            and r["answer"] is not None
        ):
            if (
                "http" not in r["problem"]
                and "http" not in r["solution"]
                and "Translate the text above into English" not in r["solution"]
            ):
                problem, solution = r["problem"].strip(), r["solution"].strip()
                if problem and solution:
                    out.append(row("noisy,cot", problem, solution))
                    if r["question_type"] != "proof" and r["answer"] != "proof":
                        answer = r["answer"].strip()
                        if answer:
                            out.append(row("noisy,direct", problem, answer))
    return {"numinamath.jsonl": out}


def data_io_omnimath(parts):
    out = []
    for r in parts["default"]:
        out.append(row("cot", r["problem"], r["solution"].strip()))
        out.append(row("direct", r["problem"], r["answer"].strip()))
    return {"omnimath.jsonl": out}


def data_io_principia_collection(parts):
    out = [
        row("synth,direct", r["problem_statement"], r["answer"])
        for split in ("mathematical_object", "numerical")
        for r in parts[split]
    ]
    return {"principia_collection.jsonl": out}


def data_io_webinstruct_verified(parts):
    return {
        "webinstruct_verified.jsonl": [
            row("direct", r["question"], r["answer"]) for r in parts["default"]
        ]
    }


def data_io_remove_think_tags(text):
    return re.sub(r"<think>.*?</think>", "", text, flags=re.DOTALL)


def data_io_acereason(parts):
    out = []
    for r in parts["default"]:
        if r["category"] == "math":
            assert r["output"].count("<think>") == 1
            out.append(row("synth,cot", r["input"], data_io_remove_think_tags(r["output"])))
    return {"acereason/all.parquet": out}


def data_io_openmathinstruct2(parts):
    cot, direct = [], []
    for r in parts["default"]:
        cot.append(row("synth,cot", r["problem"], r["generated_solution"]))
        if r["problem_source"] not in {"math", "gsm8k"}:
            direct.append(row("synth,direct", r["problem"], r["expected_answer"]))
    return {"openmathinstruct2/cot.parquet": cot, "openmathinstruct2/direct.parquet": direct}


OPENTHOUGHTS2_REMOVED = {
    "dolphin",
    "evolcodegolf",
    "glaive",
    "magicoder",
    "sharegpt",
    "codefeedback",
    "nvidia_math",
}


def data_io_openthoughts2(parts):
    out = []
    for r in parts["default"]:
        if r["source"] not in OPENTHOUGHTS2_REMOVED:
            assert len(r["conversations"]) == 2
            assert r["conversations"][0]["from"] == "user"
            assert r["conversations"][1]["from"] == "assistant"
            instruction = r["conversations"][0]["value"]
            output = r["conversations"][1]["value"]
            output_lower = output.lower()
            if (
                "python" not in instruction.lower()
                and "python" not in output_lower
                and "```" not in output_lower
            ):
                out.append(row("synth,cot", instruction, data_io_remove_think_tags(output)))
    return {"openthoughts2/all.parquet": out}


def data_io_textbookreasoning(parts):
    cot, direct = [], []
    for r in parts["default"]:
        cot.append(row("synth,cot", r["question"], r["answer"]))
        lower_question = r["question"].lower()
        if "prove" not in lower_question and "show that" not in lower_question:
            direct.append(row("noisy,direct", r["question"], r["reference_answer"]))
    return {"textbookreasoning/cot.parquet": cot, "textbookreasoning/direct.parquet": direct}


DATA_IO = {
    "natural_reasoning": data_io_natural_reasoning,
    "no_robots": data_io_no_robots,
    "numinamath": data_io_numinamath,
    "omnimath": data_io_omnimath,
    "principia_collection": data_io_principia_collection,
    "webinstruct_verified": data_io_webinstruct_verified,
    "acereason": data_io_acereason,
    "openmathinstruct2": data_io_openmathinstruct2,
    "openthoughts2": data_io_openthoughts2,
    "textbookreasoning": data_io_textbookreasoning,
}


# -- natural_reasoning -------------------------------------------------------------------------


def nr(question, reference_answer):
    return {
        "question": question,
        "reference_answer": reference_answer,
        "responses": [{"response_model": "m", "response": "r"}],
    }


def test_natural_reasoning_rows_from_top_level_jsonl(tmp_path):
    good = [
        nr("What is the boiling point of water at sea level in °C?", "  100 °C \n"),
        nr("Prove that energy is conserved here.", "It is."),
        nr("Explain how to improve the estimate.", "Use more terms."),  # 'improve' has 'prove'
        nr("SHOW THAT the net force vanishes.", "By symmetry."),
        nr("Compute 2+2.", "   "),  # empty once stripped
        nr("  Keep my spaces?  ", "yes"),
        nr("Quelle est la masse d'un électron ?", "9.11e-31 kg"),
        nr(None, "   "),  # no answer, so data_io never looks at the question
    ]
    bad = [nr("Where is the answer?", None), nr(None, "an answer")]
    raw = good[:3] + [bad[0]] + good[3:] + [bad[1]]
    write_raw(tmp_path / "raw", "facebook/natural_reasoning/train.jsonl", raw)
    report = run("natural_reasoning", tmp_path)
    expected = data_io_natural_reasoning({"default": good})
    assert [r["response"] for r in expected["natural_reasoning.jsonl"]] == [
        "100 °C",
        "yes",
        "9.11e-31 kg",
    ]
    assert_outputs(tmp_path, expected)
    assert report.records_read == len(raw)
    assert {k: v.count for k, v in report.skipped.items()} == {
        "reference_answer is not a string": 1,
        "question is not a string": 1,
    }
    assert [e.raw for e in report.skipped["question is not a string"].examples] == ["default#10"]


# -- no_robots ---------------------------------------------------------------------------------


def msgs(*pairs):
    return [{"role": role, "content": content} for role, content in pairs]


def nrb(messages, index):
    return {
        "prompt": messages[0]["content"],
        "prompt_id": f"id{index}",
        "messages": messages,
        "category": "Chat",
    }


NO_ROBOTS_TRAIN = [
    msgs(("user", "Write a limerick."), ("assistant", "There once was...\n")),
    msgs(("system", "Be terse."), ("user", " Hi "), ("assistant", "Hello.")),
    msgs(("user", "One"), ("assistant", "Two"), ("user", "Three"), ("assistant", "Four")),
    msgs(("user", "alone")),
    msgs(("system", "sys"), ("user", "no answer")),
    msgs(("assistant", "me first"), ("user", "then me")),
    msgs(("system", "sys"), ("assistant", "skipped the user"), ("user", "late")),
]
NO_ROBOTS_TEST = [
    msgs(("user", "Écris un poème sur la mer."), ("assistant", "La mer, toujours recommencée.")),
    msgs(("system", "你是助手。"), ("user", "你好"), ("assistant", "你好！")),
]


def test_no_robots_first_exchange_of_every_split_train_first(tmp_path):
    root = tmp_path / "raw" / "HuggingFaceH4" / "no_robots" / "data"
    train = [nrb(m, i) for i, m in enumerate(NO_ROBOTS_TRAIN)]
    test = [nrb(m, i) for i, m in enumerate(NO_ROBOTS_TEST)]
    # 'test' sorts before 'train': the order must come from the spec, not the file names.
    write_raw(root, "test-00000-of-00001.parquet", test)
    write_raw(root, "train-00000-of-00002.parquet", train[:4])
    write_raw(root, "train-00001-of-00002.parquet", train[4:])
    report = run("no_robots", tmp_path)
    expected = data_io_no_robots({"train": train, "test": test})
    assert [r["instruction"] for r in expected["no_robots.jsonl"]] == [
        "Write a limerick.",
        "Be terse.\n\n Hi ",
        "One",
        "Écris un poème sur la mer.",
        "你是助手。\n\n你好",
    ]
    assert_outputs(tmp_path, expected)
    assert report.parts == ["train", "test"]
    assert report.skipped == {}


def test_no_robots_hub_path_streams_each_split_in_order(monkeypatch, tmp_path):
    import datasets

    files = {}
    for split, conversations in (("train", NO_ROBOTS_TRAIN[:2]), ("test", NO_ROBOTS_TEST)):
        files[split] = tmp_path / f"{split}.parquet"
        write_raw(tmp_path, f"{split}.parquet", [nrb(m, i) for i, m in enumerate(conversations)])
    calls = []
    real_load = datasets.load_dataset

    def fake_load(path, name=None, **kwargs):
        calls.append((path, name, kwargs))
        data_files = {kwargs["split"]: [str(files[kwargs["split"]])]}
        return real_load("parquet", data_files=data_files, split=kwargs["split"], streaming=True)

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    report = clean_source(get_source("no_robots"), tmp_path / "cleaned", raw_root=None)
    assert calls == [
        ("HuggingFaceH4/no_robots", "default", {"split": "train", "streaming": True}),
        ("HuggingFaceH4/no_robots", "default", {"split": "test", "streaming": True}),
    ]
    assert report.rows_written == 4


def test_hub_splits_layout_rejects_bad_split_lists(tmp_path):
    spec = get_source("no_robots")
    for bad in ("train++test", "train+train"):
        with pytest.raises(ValueError, match="bad split list"):
            HubSplitsLayout().split_names(SourceSpec(**{**spec.__dict__, "split": bad}))
    with pytest.raises(ValueError, match="not splits"):
        spec.layout.write_parts(spec, tmp_path, {"validation": []})
    with pytest.raises(FileNotFoundError, match="no_robots/data"):
        run("no_robots", tmp_path)


# -- numinamath --------------------------------------------------------------------------------


def numina(
    problem="Find $x$ if $2x=4$.",
    solution="We get $x=2$.",
    answer="2",
    question_type="math-word-problem",
    synthetic=False,
    problem_ok="Yes",
    solution_ok="Yes",
):
    return {
        "problem": problem,
        "solution": solution,
        "answer": answer,
        "problem_type": "Algebra",
        "question_type": question_type,
        "problem_is_valid": problem_ok,
        "solution_is_valid": solution_ok,
        "source": "olympiads",
        "synthetic": synthetic,
    }


def test_numinamath_filters_and_rows(tmp_path):
    good = [
        numina(),
        numina(problem="  Padded problem \n", solution="\n padded solution ", answer=" 7 "),
        numina(synthetic=True),
        numina(problem_ok="No"),
        numina(solution_ok="Partial"),
        numina(solution=None),
        numina(answer=None),
        numina(problem="See http://x.org", answer="1"),
        numina(solution="Refer to https://y.org"),
        numina(solution="Translate the text above into English, keep format."),
        numina(problem="   ", solution="x"),  # empty problem once stripped: nothing
        numina(question_type="proof", answer="3"),  # cot only
        numina(answer="proof"),  # cot only
        numina(answer=" proof "),  # not 'proof' before stripping: a direct row 'proof'
        numina(answer="  "),  # cot only
        numina(problem="证明：对任意正整数 $n$，$n^2 \\geq n$。", answer="见解答"),
        numina(problem=None, synthetic=True),  # filtered before the problem is read
    ]
    bad = [numina(problem=None)]
    raw = good[:5] + bad + good[5:]
    write_raw(tmp_path / "raw", "AI-MO/NuminaMath-1.5/data/train-00000-of-00001.parquet", raw)
    report = run("numinamath", tmp_path)
    expected = data_io_numinamath({"default": good})
    assert sum(r["condition"] == "noisy,cot" for r in expected["numinamath.jsonl"]) == 7
    assert row("noisy,direct", "Find $x$ if $2x=4$.", "proof") in expected["numinamath.jsonl"]
    assert_outputs(tmp_path, expected)
    assert {k: v.count for k, v in report.skipped.items()} == {"problem is not a string": 1}


# -- omnimath ----------------------------------------------------------------------------------


def omni(problem, solution, answer):
    return {
        "domain": ["Mathematics -> Algebra"],
        "difficulty": 5.5,
        "problem": problem,
        "solution": solution,
        "answer": answer,
        "source": "imo",
    }


def test_omnimath_cot_then_direct_from_top_level_jsonl(tmp_path):
    good = [
        omni("  Find $n$.  ", "\nThus $n=3$.\n", " 3 "),
        omni("Trouver $x$ tel que $x^2=2$.", "Donc $x=\\pm\\sqrt 2$.", "$\\pm\\sqrt{2}$"),
    ]
    bad = [omni("Unanswered", "Some work.", None), omni("No solution", None, "1")]
    raw = [good[0], bad[0], good[1], bad[1]]
    write_raw(tmp_path / "raw", "KbsdJames/Omni-MATH/test.jsonl", raw)
    (tmp_path / "raw/KbsdJames/Omni-MATH/train.jsonl").write_text("{}\n")  # another split: unread
    report = run("omnimath", tmp_path)
    expected = data_io_omnimath({"default": good})
    assert expected["omnimath.jsonl"][:2] == [
        row("cot", "  Find $n$.  ", "Thus $n=3$."),
        row("direct", "  Find $n$.  ", "3"),
    ]
    assert_outputs(tmp_path, expected)
    assert {k: v.count for k, v in report.skipped.items()} == {
        "answer is not a string": 1,
        "solution is not a string": 1,
    }
    assert report.tag_counts == {"cot": 2, "direct": 2}


# -- principia_collection and webinstruct_verified ---------------------------------------------


def test_principia_collection_every_split_in_card_order(tmp_path):
    objects = [
        {
            "topic": "ODEs",
            "problem_statement": " Solve $y'=y$. ",
            "answer": "$Ce^t$ ",
            "answer_type": "mathematical_object",
        },
        {
            "topic": "Groups",
            "problem_statement": "Ordre du groupe $S_3$ ?",
            "answer": None,
            "answer_type": "mathematical_object",
        },
    ]
    numerical = [
        {
            "topic": "Optics",
            "problem_statement": "Focal length of ½-dioptre lens?",
            "answer": "2 m",
            "answer_type": "numerical",
        }
    ]
    data = tmp_path / "raw/facebook/principia-collection/data"
    write_raw(data, "numerical-00000-of-00001.parquet", numerical)
    write_raw(data, "mathematical_object-00000-of-00001.parquet", objects)
    report = run("principia_collection", tmp_path)
    expected = data_io_principia_collection(
        {"mathematical_object": [objects[0]], "numerical": numerical}
    )
    assert_outputs(tmp_path, expected)
    assert report.parts == ["mathematical_object", "numerical"]
    # data_io would write {"response": null}; here the row is validated away and reported.
    assert report.skipped[NOT_A_STRING].count == 1
    assert report.skipped[NOT_A_STRING].examples[0].raw == "mathematical_object#2"


def test_webinstruct_verified_train_split_only(tmp_path):
    train = [
        {
            "id": "a",
            "question": "What is 3 × 4?",
            "answer": "12",
            "answer_type": "Integer",
            "category": "Mathematics",
            "difficulty": "Primary School",
        },
        {
            "id": "b",
            "question": " Speed of light? ",
            "answer": " 3e8 m/s ",
            "answer_type": "Float",
            "category": "Physics",
            "difficulty": "University",
        },
    ]
    data = tmp_path / "raw/TIGER-Lab/WebInstruct-verified/data"
    write_raw(data, "train-00000-of-00001.parquet", train)
    write_raw(data, "test-00000-of-00001.parquet", [{**train[0], "question": "held out"}])
    report = run("webinstruct_verified", tmp_path)
    assert_outputs(tmp_path, data_io_webinstruct_verified({"default": train}))
    assert report.records_read == 2


# -- acereason and openthoughts2 ---------------------------------------------------------------


def ace(category, output, prompt="Compute $1+1$."):
    return {
        "input": prompt,
        "output": output,
        "category": category,
        "license": "cc-by-4.0",
        "reasoning": "on",
        "generator": "synthetic",
    }


def test_acereason_math_only_without_thinking(tmp_path):
    good = [
        ace("math", "<think>\nhmm\n1+1\n</think>\nThe answer is $2$."),
        ace("code", "no think at all"),  # not math: the assert is never reached
        ace("math", "Intro <think>a</think> outro", prompt="计算 $2 \\times 3$。"),
        ace("math", "<think>never closed\nanswer 2"),
        ace("science", "<think>x</think><think>y</think>"),
    ]
    bad = [ace("math", "no thinking here"), ace("math", "<think>a</think> and <think>b</think>")]
    raw = [good[0], bad[0], good[1], good[2], bad[1], good[3], good[4]]
    write_raw(tmp_path / "raw", "nvidia/AceReason-1.1-SFT/data/train-00000-of-00001.parquet", raw)
    report = run("acereason", tmp_path)
    expected = data_io_acereason({"default": good})
    assert [r["response"] for r in expected["acereason/all.parquet"]] == [
        "\nThe answer is $2$.",
        "Intro  outro",
        "<think>never closed\nanswer 2",
    ]
    assert_outputs(tmp_path, expected)
    skipped = report.skipped["math output does not hold exactly one <think>"]
    assert skipped.count == 2
    assert [(e.raw, e.detail) for e in skipped.examples] == [
        ("default#2", "0 <think> tags"),
        ("default#5", "2 <think> tags"),
    ]


def ot(source, user, answer, roles=("user", "assistant")):
    conversations = [{"from": roles[0], "value": user}, {"from": roles[1], "value": answer}]
    return {"conversations": conversations, "question": user, "source": source, "id": 0}


def test_openthoughts2_sources_code_heuristic_and_thinking(tmp_path):
    good = [
        ot("ai2-adapt-dev/openmath-2-math", "Find $x$.", "<think>\nwork\n</think>\n\n$x=1$"),
        ot("magicoder", "Write code.", "<think>t</think>code"),
        ot("nvidia_math", "Already used.", "<think>t</think>1"),
        ot("organic-chemistry-questions", "Use Python to compute it.", "<think>t</think>ok"),
        ot("stackexchange-physics", "Why?", "<think>t</think>See PYTHON docs"),
        ot("stackexchange-physics", "Why?", "<think>t</think>```\nfenced\n```"),
        ot("stackexchange-physics", "```\nfence in question\n```", "<think>t</think>fine"),
        ot(
            "glaive",
            "Bad roles are not checked for removed sources",
            "x",
            roles=("assistant", "user"),
        ),
        ot("physics", "Pourquoi le ciel est-il bleu ?", "Diffusion de Rayleigh."),
    ]
    bad = [
        ot("physics", "Q", "A", roles=("human", "gpt")),
        {**ot("physics", "Q", "A"), "conversations": [{"from": "user", "value": "Q"}]},
    ]
    raw = good[:2] + [bad[0]] + good[2:] + [bad[1]]
    write_raw(
        tmp_path / "raw", "open-thoughts/OpenThoughts2-1M/data/train-00000-of-00001.parquet", raw
    )
    report = run("openthoughts2", tmp_path)
    expected = data_io_openthoughts2({"default": good})
    assert [r["response"] for r in expected["openthoughts2/all.parquet"]] == [
        "\n\n$x=1$",
        "fine",
        "Diffusion de Rayleigh.",
    ]
    assert_outputs(tmp_path, expected)
    skipped = report.skipped["conversation is not user then assistant"]
    assert [(e.raw, e.detail) for e in skipped.examples] == [
        ("default#3", "roles ['human', 'gpt']"),
        ("default#11", "1 turns"),
    ]


# -- openmathinstruct2 and textbookreasoning: two files each -----------------------------------


def omi(problem, source, solution="Solution $\\boxed{1}$.", answer="1"):
    return {
        "problem": problem,
        "generated_solution": solution,
        "expected_answer": answer,
        "problem_source": source,
    }


def test_openmathinstruct2_cot_and_direct_files(tmp_path):
    raw = [
        omi("Original MATH problem", "math"),
        omi("Augmented problem ", "augmented_math", " sol ", " 2 "),
        omi("Original GSM8K problem", "gsm8k"),
        omi("Problème augmenté : combien ?", "augmented_gsm8k"),
    ]
    data = tmp_path / "raw/nvidia/OpenMathInstruct-2/data"
    write_raw(data, "train-00000-of-00002.parquet", raw[:3])
    write_raw(data, "train-00001-of-00002.parquet", raw[3:])
    write_raw(data, "train_1M-00000-of-00001.parquet", raw[:1])  # another split: unread
    report = run("openmathinstruct2", tmp_path)
    expected = data_io_openmathinstruct2({"default": raw})
    assert len(expected["openmathinstruct2/direct.parquet"]) == 2
    assert_outputs(tmp_path, expected)
    assert sorted(report.files) == sorted(expected)
    assert report.files["openmathinstruct2/direct.parquet"].conditions == {"synth,direct": 2}


def test_openmathinstruct2_writes_an_empty_direct_file_as_data_io_does(tmp_path):
    raw = [omi("Only originals", "math"), omi("here", "gsm8k")]
    write_raw(tmp_path / "raw", "nvidia/OpenMathInstruct-2/data/train-00000-of-00001.parquet", raw)
    report = run("openmathinstruct2", tmp_path)
    assert_outputs(tmp_path, data_io_openmathinstruct2({"default": raw}))
    assert report.files["openmathinstruct2/direct.parquet"].rows == 0


def tbr(question, answer, reference_answer):
    return {
        "question": question,
        "answer": answer,
        "subject": "physics",
        "reference_answer": reference_answer,
    }


def test_textbookreasoning_cot_for_all_direct_without_proofs(tmp_path):
    good = [
        tbr("What is the SI unit of force?", "Step 1... **Newton**", "N"),
        tbr("Prove that momentum is conserved.", "By Newton's third law...", "Proof."),
        tbr("Show that $E=mc^2$ has units of energy.", "kg m^2/s^2 = J", "Joules"),
        tbr(" Quelle est l'unité de l'énergie ? ", " joule ", " J "),
        tbr("What is g?", "About 9.8 m/s^2.", None),  # direct row validated away
    ]
    bad = [tbr(None, "orphan answer", "x")]
    raw = good[:2] + bad + good[2:]
    write_raw(
        tmp_path / "raw", "MegaScience/TextbookReasoning/data/train-00000-of-00001.parquet", raw
    )
    report = run("textbookreasoning", tmp_path)
    expected = data_io_textbookreasoning({"default": good})
    direct = expected["textbookreasoning/direct.parquet"]
    assert direct[-1]["response"] is None  # data_io's null, which we do not write
    expected["textbookreasoning/direct.parquet"] = direct[:-1]
    assert_outputs(tmp_path, expected)
    assert len(expected["textbookreasoning/cot.parquet"]) == 5
    assert {k: v.count for k, v in report.skipped.items()} == {
        "question is not a string": 1,
        NOT_A_STRING: 1,
    }
    example = report.skipped[NOT_A_STRING].examples[0]
    assert (example.file, example.row, example.raw) == (
        "textbookreasoning/direct.parquet",
        3,
        "default#6",
    )


# -- registry, outputs, demo -------------------------------------------------------------------


def test_specs_outputs_and_prefix_config_names():
    outputs = {name: get_source(name).static_outputs for name in NAMES}
    assert outputs == {
        "natural_reasoning": ("natural_reasoning.jsonl",),
        "no_robots": ("no_robots.jsonl",),
        "numinamath": ("numinamath.jsonl",),
        "omnimath": ("omnimath.jsonl",),
        "principia_collection": ("principia_collection.jsonl",),
        "webinstruct_verified": ("webinstruct_verified.jsonl",),
        "acereason": ("acereason/all.parquet",),
        "openmathinstruct2": ("openmathinstruct2/cot.parquet", "openmathinstruct2/direct.parquet"),
        "openthoughts2": ("openthoughts2/all.parquet",),
        "textbookreasoning": ("textbookreasoning/cot.parquet", "textbookreasoning/direct.parquet"),
    }
    spec = get_source("openmathinstruct2")
    assert spec.writes("openmathinstruct2/direct.parquet")
    assert not spec.writes("openmathinstruct2/other.parquet")
    assert get_source("omnimath").writes("omnimath.jsonl")


def test_outputs_by_condition_is_validated():
    base = get_source("openmathinstruct2")
    with pytest.raises(ValueError, match="must be a .parquet file under"):
        SourceSpec(**{**base.__dict__, "outputs_by_condition": (("cot", "elsewhere/cot.parquet"),)})
    with pytest.raises(ValueError, match="not both"):
        SourceSpec(**{**base.__dict__, "route": lambda record, part: "x.parquet"})
    with pytest.raises(ValueError, match="no output for condition 'cot'"):
        base.output_of_row(("cot", "i", "r"), base.output)
    with pytest.raises(ValueError, match="defined twice"):
        build_registry([base, base])


@pytest.mark.parametrize("name", NAMES)
def test_demo_cleans_as_data_io_would(tmp_path, name):
    spec = get_source(name)
    written = demo.write_demo_source(spec, tmp_path / "raw")
    assert sorted(written) == sorted(spec.layout.raw_files(spec, tmp_path / "raw"))
    parts = {}
    for path in written:
        part = path.name.split("-")[0] if isinstance(spec.layout, HubSplitsLayout) else "default"
        parts.setdefault(part, []).extend(pq.read_table(path).to_pylist())
    report = run(name, tmp_path, batch_size=64)
    expected = DATA_IO[name](parts)
    assert_outputs(tmp_path, expected)
    assert report.skipped == {}
    assert 200 <= report.records_read <= 1000
    for relative in expected:
        rows = list(iter_cleaned_rows(tmp_path / "cleaned" / relative))
        assert rows and not " ".join(r.instruction for r in rows).isascii(), relative


def test_code_versions_differ_within_a_family():
    versions = {source_code_version(SOURCES[name]) for name in NAMES}
    assert len(versions) == len(NAMES)
