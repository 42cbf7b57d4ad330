"""Issue 6, bad input: every kind of bad input gets one clear message naming the file, the
row/line and the field, a non-zero exit from the CLIs, and leaves earlier good outputs exactly
as they were. (The Dagster assets: tests/dagster/test_reliability_dagster.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import REPO_ROOT
from support.reference_sampler import reference_sample, without_data_card
from support.tokenized_trees import MIXED, MIXED_RULES, tree_bytes, write_rules, write_tokenized
from support.tokenizer_reference import gsm8k_rows, write_jsonl, write_parquet
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from hrm_assets.common.manifest import verify_folder
from hrm_assets.sampling import cli as sample
from hrm_assets.sampling.analytics import render_report, summary_figures, task_records
from hrm_assets.sampling.sampler import make_config, sample_tokenized
from hrm_assets.tokenization.cli import main as tokenize_main


def run_tokenize(capsys, *args) -> tuple[int, str]:
    code = tokenize_main([*map(str, args), "--no-progress"])
    return code, capsys.readouterr().err


def good_row(index: int) -> dict:
    return {"condition": "cot", "instruction": f"question {index}", "response": f"answer {index}"}


@pytest.fixture
def tokenized_once(tmp_path, capsys, real_raw, small_tokenizer_path):
    """A cleaned root with two good files, tokenized once; returns (cleaned, out, snapshot)."""
    cleaned = tmp_path / "cleaned"
    write_jsonl(cleaned / "good.jsonl", gsm8k_rows(real_raw, "train", 50))
    write_jsonl(cleaned / "x.jsonl", [good_row(i) for i in range(3)])
    write_parquet(cleaned / "y.parquet", [good_row(i) for i in range(3)])
    out = tmp_path / "out"
    code, err = run_tokenize(capsys, cleaned, "-o", out, "-t", small_tokenizer_path)
    assert code == 0, err
    return cleaned, out, tree_bytes(out)


# --------------------------------------------------------------------------- cleaned rows


def _break_rows(kind: str, cleaned: Path) -> str:
    """Replace x.jsonl or y.parquet with a bad version; return the expected message."""
    x, y = cleaned / "x.jsonl", cleaned / "y.parquet"
    good = json.dumps(good_row(0))
    if kind == "malformed-json":
        x.write_text(good + '\n{"condition": "cot", "instruction": "q"\n')
        return f"{x}: row 2: malformed JSON"
    if kind == "missing-field":
        x.write_text(good + '\n\n{"condition": "cot", "instruction": "q"}\n')
        return f"{x}: row 3, field 'response': missing"
    if kind == "null-field":
        x.write_text(good + '\n{"condition": null, "instruction": "q", "response": "a"}\n')
        return f"{x}: row 2, field 'condition': expected a string, got null"
    if kind == "number-field":
        x.write_text(good + '\n{"condition": "", "instruction": 7, "response": "a"}\n')
        return f"{x}: row 2, field 'instruction': expected a string, got int"
    if kind == "list-field":
        x.write_text(good + '\n{"condition": "", "instruction": "q", "response": ["a"]}\n')
        return f"{x}: row 2, field 'response': expected a string, got "
    if kind == "not-an-object":
        x.write_text(good + '\n["cot", "q", "a"]\n')
        return f"{x}: row 2: expected a JSON object"
    if kind == "invalid-utf8":
        x.write_bytes(
            good.encode() + b'\n{"condition": "", "instruction": "q\xff", "response": "a"}\n'
        )
        return f"{x}: row 2"
    if kind == "unknown-tag":
        x.write_text(good + '\n{"condition": "noisy,maybe", "instruction": "q", "response": "a"}\n')
        return f"{x}: row 2, field 'condition': unknown tag"
    if kind == "parquet-wrong-type":
        table = pa.table({"condition": ["cot"], "instruction": [1], "response": ["a"]})
        pq.write_table(table, y)
        return f"{y}: row 0, field 'instruction': expected a string column, got Int64"
    if kind == "parquet-missing-column":
        pq.write_table(pa.table({"condition": ["cot"], "instruction": ["q"]}), y)
        return "field 'response': column missing"
    if kind == "not-parquet":
        y.write_bytes(b"this is not parquet at all")
        return f"{y}: cannot read as Parquet"
    raise AssertionError(kind)


ROW_KINDS = [
    "malformed-json", "missing-field", "null-field", "number-field", "list-field",
    "not-an-object", "invalid-utf8", "unknown-tag", "parquet-wrong-type",
    "parquet-missing-column", "not-parquet",
]  # fmt: skip


@pytest.mark.parametrize("kind", ROW_KINDS)
def test_bad_cleaned_file_fails_it_and_keeps_every_earlier_folder(
    tokenized_once, capsys, small_tokenizer_path, kind
):
    cleaned, out, before = tokenized_once
    expected = _break_rows(kind, cleaned)
    code, err = run_tokenize(capsys, cleaned, "-o", out, "-t", small_tokenizer_path)
    assert code == 1
    assert expected in err, err
    assert "Traceback" not in err
    assert "1 file(s) failed: " in err
    # The bad file's previous folder, and every other folder, are byte for byte as before.
    assert tree_bytes(out) == before


def test_the_python_reader_gives_the_same_messages(tokenized_once):
    from hrm_assets.cleaning.rows import RowError, iter_cleaned_rows

    cleaned, _, _ = tokenized_once
    for kind in ("malformed-json", "missing-field", "null-field", "unknown-tag"):
        expected = _break_rows(kind, cleaned)
        path = cleaned / ("y.parquet" if kind.startswith("parquet") else "x.jsonl")
        with pytest.raises(RowError) as caught:
            list(iter_cleaned_rows(path))
        assert expected in str(caught.value)


def test_the_python_reader_takes_a_parquet_null_as_the_empty_string(tmp_path):
    """As data_io's reader and our Rust one do (the tokenizer trainer reads with it)."""
    from hrm_assets.cleaning.rows import Row, iter_cleaned_rows

    path = write_parquet(
        tmp_path / "y.parquet", [good_row(0), {**good_row(1), "condition": None, "response": None}]
    )
    assert list(iter_cleaned_rows(path))[1] == Row("", good_row(1)["instruction"], "")


def test_empty_files_are_empty_tasks_not_errors(tmp_path, capsys, small_tokenizer_path):
    cleaned = tmp_path / "cleaned"
    cleaned.mkdir()
    (cleaned / "empty.jsonl").write_bytes(b"")
    (cleaned / "blank_lines.jsonl").write_text("\n\n")
    write_parquet(cleaned / "empty.parquet", [])
    write_jsonl(cleaned / "one.jsonl", [good_row(1)])
    out = tmp_path / "out"
    code, err = run_tokenize(capsys, cleaned, "-o", out, "-t", small_tokenizer_path)
    assert code == 0, err
    for name in ("empty.jsonl", "blank_lines.jsonl", "empty.parquet"):
        assert len(np.load(out / name / "tokens.npy")) == 0
        assert len(np.load(out / name / "inst_start.npy")) == 0
        assert verify_folder(out / name).ok
    rules = write_rules(tmp_path / "rules.yaml", [])
    result = sample_tokenized(
        make_config(
            tokenized_path=out, output_path=tmp_path / "s", prefix_config_path=rules, epochs=2
        )
    )
    assert {t.name: t.rows_per_epoch for t in result.tasks} == {
        "blank_lines.jsonl": 0, "empty.jsonl": 0, "empty.parquet": 0, "one.jsonl": 1,
    }  # fmt: skip


# --------------------------------------------------------------------------- tokenizer and CLI


def tokenizer_without_framing(path: Path) -> Path:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tokenizer.train_from_iterator(["plain text only"] * 10, trainer)
    tokenizer.save(str(path))
    return path


def _bad_setup(kind: str, tmp_path: Path, cleaned: Path, out: Path, tok: Path) -> tuple:
    """(arguments, exit code, message) for one bad tokenizer or command line."""
    base = [cleaned, "-o", out]
    if kind == "tokenizer-not-json":
        bad = tmp_path / "bad.json"
        bad.write_text("{ this is not json")
        return [*base, "-t", bad], 1, f"{bad}: cannot load the tokenizer"
    if kind == "tokenizer-empty-object":
        bad = tmp_path / "empty.json"
        bad.write_text("{}")
        return [*base, "-t", bad], 1, f"{bad}: cannot load the tokenizer"
    if kind == "tokenizer-missing":
        return [*base, "-t", tmp_path / "nope.json"], 1, "nope.json: no tokenizer found"
    if kind == "tokenizer-folder-without-json":
        (tmp_path / "tokdir").mkdir()
        return [*base, "-t", tmp_path / "tokdir"], 1, "tokdir: no tokenizer found"
    if kind == "tokenizer-without-framing":
        plain = tokenizer_without_framing(tmp_path / "plain.json")
        return [*base, "-t", plain], 1, 'token "<|object_ref_end|>" is not in the tokenizer'
    if kind == "condition-token-missing":
        args = [*base, "-t", tok, "--conditions", "cot=<|no_such|>"]
        return args, 1, "condition 'cot' token \"<|no_such|>\""
    if kind == "empty-boq":
        return [*base, "-t", tok, "--boq", ""], 1, "framing tokens must be non-empty"
    if kind == "bad-conditions":
        return [*base, "-t", tok, "--conditions", "=x"], 1, "bad --conditions entry '=x'"
    if kind == "threads-zero":
        return [*base, "-t", tok, "--threads", "0"], 2, "--threads must be at least 1"
    if kind == "threads-negative":
        return [*base, "-t", tok, "--threads", "-4"], 2, "--threads must be at least 1"
    if kind == "threads-text":
        return [*base, "-t", tok, "--threads", "many"], 2, "invalid int value: 'many'"
    if kind == "input-missing":
        return [tmp_path / "absent", "-o", out, "-t", tok], 1, "absent: not a directory"
    if kind == "output-is-a-file":
        blocker = tmp_path / "a_file"
        blocker.write_text("x")
        return [cleaned, "-o", blocker, "-t", tok], 1, "a_file"
    raise AssertionError(kind)


SETUP_KINDS = [
    "tokenizer-not-json", "tokenizer-empty-object", "tokenizer-missing",
    "tokenizer-folder-without-json", "tokenizer-without-framing", "condition-token-missing",
    "empty-boq", "bad-conditions", "threads-zero", "threads-negative", "threads-text",
    "input-missing", "output-is-a-file",
]  # fmt: skip


@pytest.mark.parametrize("kind", SETUP_KINDS)
def test_bad_tokenizer_or_arguments_exit_nonzero_before_writing(
    tokenized_once, tmp_path, capsys, small_tokenizer_path, kind
):
    cleaned, out, before = tokenized_once
    args, status, message = _bad_setup(kind, tmp_path, cleaned, out, small_tokenizer_path)
    if status == 2 and kind == "threads-text":
        with pytest.raises(SystemExit) as caught:
            run_tokenize(capsys, *args)
        code, err = caught.value.code, capsys.readouterr().err
    else:
        code, err = run_tokenize(capsys, *args)
    assert code == status
    assert message in err, err
    assert "Traceback" not in err
    assert tree_bytes(out) == before


def test_bad_tokenizer_exits_1_as_a_command(tmp_path):
    cleaned = tmp_path / "cleaned"
    write_jsonl(cleaned / "x.jsonl", [good_row(0)])
    plain = tokenizer_without_framing(tmp_path / "plain.json")
    result = subprocess.run(
        [sys.executable, "-m", "hrm_assets.tokenization", str(cleaned), "-o", str(tmp_path / "o"),
         "-t", str(plain), "--no-progress"],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=120,
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr
    assert 'token "<|object_ref_end|>" is not in the tokenizer\'s vocabulary' in result.stderr
    assert not (tmp_path / "o").exists()


# --------------------------------------------------------------------------- prefix config, CLI


@pytest.fixture
def sampled_once(tmp_path, capsys):
    tokenized = write_tokenized(tmp_path / "tok", MIXED)
    rules = write_rules(tmp_path / "prefix_config.yaml", MIXED_RULES)
    out = tmp_path / "sampled"
    args = [f"tokenized_path={tokenized}", f"output_path={out}", f"prefix_config_path={rules}"]
    assert sample.main([*args, "epochs=2"]) == 0
    capsys.readouterr()
    return args, rules, out, tree_bytes(out)


PREFIX_CONFIGS = {
    "unknown-key": ("- prefix: flan__\n  max_per_files: 3\n", "rule 0 (prefix 'flan__')",
                    "max_per_files: Extra inputs are not permitted"),
    "negative-cap": ("- prefix: a\n- prefix: flan__\n  max_per_file: -1\n", "rule 1",
                     "max_per_file: Input should be greater than or equal to 0"),
    "negative-repeat": ("- prefix: SYNTH\n  repeat: -2\n", "rule 0 (prefix 'SYNTH')",
                        "repeat: must be at least 1 (got -2)"),
    "zero-repeat": ("- prefix: flan__\n  repeat: 0\n", "rule 0 (prefix 'flan__')",
                    "repeat: 0 would sample nothing from these tasks; use max_per_file: 0"),
    "bool-cap": ("- prefix: flan__\n  max_per_file: true\n", "rule 0 (prefix 'flan__')",
                 "max_per_file: Input should be a valid integer (got True)"),
    "float-cap": ("- prefix: flan__\n  max_per_file: 2.5\n", "rule 0",
                  "max_per_file: Input should be a valid integer (got 2.5)"),
    "quoted-repeat": ("- prefix: flan__\n  repeat: '3'\n", "rule 0",
                      "repeat: Input should be a valid integer (got '3')"),
    "non-string-key": ("- prefix: flan__\n  7: 3\n", "rule 0 (prefix 'flan__')",
                       "key 7 is not a field name (fields: max_per_file, long_context, repeat"),
    "non-string-prefix": ("- prefix: 12\n", "rule 0 (prefix 12)",
                          "prefix: Input should be a valid string (got 12)"),
    "bad-mode": ("- prefix: x\n  long_context: squeeze\n", "rule 0",
                 "long_context: Input should be 'drop' or 'truncate'"),
    "text-repeat": ("- prefix: x\n  repeat: twice\n", "rule 0", "repeat: Input should be"),
    "no-prefix": ("- max_per_file: 3\n", "rule 0 (prefix None)", "prefix: Field required"),
    "not-a-list": ("prefix: x\nrepeat: 2\n", "expected a list of rules, got dict", ""),
    "rule-not-mapping": ("- just a string\n", "rule 0: expected a mapping", ""),
    "bad-yaml": ("- prefix: [unclosed\n", "not valid YAML", ""),
}  # fmt: skip


@pytest.mark.parametrize("kind", sorted(PREFIX_CONFIGS))
def test_bad_prefix_config_names_file_rule_and_field(sampled_once, capsys, kind):
    args, rules, out, before = sampled_once
    text, where, problem = PREFIX_CONFIGS[kind]
    rules.write_text(text, encoding="utf-8")
    status = sample.main([*args, "epochs=3", "seed=9"])
    captured = capsys.readouterr()
    assert status == 1
    assert captured.out == ""
    assert captured.err.startswith(f"hrm-sample: error: {rules}: {where}")
    assert problem in captured.err.splitlines()[0]  # one line names the rule and the field
    assert "Traceback" not in captured.err
    assert tree_bytes(out) == before


def test_missing_prefix_config_and_empty_one(sampled_once, tmp_path, capsys):
    args, rules, out, before = sampled_once
    rules.unlink()
    assert sample.main(args) == 1
    assert f"hrm-sample: error: {rules}: prefix config not found" in capsys.readouterr().err
    assert tree_bytes(out) == before
    # An empty file is no rules at all (every task takes the defaults), as in data_io... which
    # crashes on it (iterating None); here it samples.
    rules.write_text("")
    assert sample.main([*args, "epochs=1"]) == 0
    assert verify_folder(out).ok


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        ("epochs=-1", "epochs: Input should be greater than or equal to 1"),
        ("seed=-5", "seed: Input should be greater than or equal to 0"),
        ("context_size=abc", "context_size: expected an integer"),
        ("min_resp_length=-1", "min_resp_length: Input should be greater than or equal to 0"),
        ("drop_short_after_truncate=maybe", "drop_short_after_truncate: expected true or false"),
        ("tokenized_path=", "tokenized_path: empty path"),
        ("epochs", "expected key=value"),
        ("workers=4", "unknown key 'workers'"),
    ],
)
def test_nonsense_sampling_values_exit_2(sampled_once, capsys, argument, message):
    args, _, out, before = sampled_once
    assert sample.main([*args, argument]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hrm-sample: error: ") and message in err
    assert tree_bytes(out) == before


# --------------------------------------------------------------------------- long rows


def test_row_far_longer_than_the_context(tmp_path, capsys, small_tokenizer_path):
    cleaned = tmp_path / "cleaned"
    long_text = " ".join(f"word{i}" for i in range(6000))
    write_jsonl(
        cleaned / "long.jsonl",
        [good_row(0), {"condition": "", "instruction": "q", "response": long_text},
         {"condition": "direct", "instruction": long_text, "response": "a b"}, good_row(1)],
    )  # fmt: skip
    out = tmp_path / "tok"
    code, err = run_tokenize(capsys, cleaned, "-o", out, "-t", small_tokenizer_path)
    assert code == 0, err
    inst_len = np.load(out / "long.jsonl" / "inst_len.npy")
    resp_len = np.load(out / "long.jsonl" / "resp_len.npy")
    context = 512
    assert resp_len[1] > 4 * context and inst_len[2] > 4 * context

    for mode, kept, truncated, dropped_long in (("truncate", 3, 1, 1), ("drop", 2, 0, 2)):
        rules = write_rules(tmp_path / "rules.yaml", [{"prefix": "long", "long_context": mode}])
        result = sample_tokenized(
            make_config(
                tokenized_path=out, output_path=tmp_path / mode, prefix_config_path=rules,
                epochs=2, context_size=context,
            )
        )  # fmt: skip
        stats = result.tasks[0].stats
        assert (stats.rows, stats.rows_truncated, stats.rows_dropped_long) == (
            kept, truncated, dropped_long,
        )  # fmt: skip
        spans = {k: np.load(tmp_path / mode / "epoch_0" / f"{k}.npy") for k in ("inst_len",
                 "resp_len")}  # fmt: skip
        assert int((spans["inst_len"] + spans["resp_len"]).max()) <= context
        record = task_records(result)[0]
        assert (record["rows_truncated"], record["rows_dropped_long"]) == (truncated, dropped_long)


# --------------------------------------------------------------------------- short after truncate


def test_rows_short_after_truncation_are_reported_and_kept_by_default(tmp_path, capsys):
    # context 20: inst 19 leaves room for 1 response token, below min_resp_length 2.
    tasks = {"a.jsonl": [(19, 5), (19, 2), (5, 30), (3, 3), (20, 4)], "b.jsonl": [(4, 4)]}
    tokenized = write_tokenized(tmp_path / "tok", tasks)
    rules_list = [{"prefix": "b", "long_context": "drop"}]
    rules = write_rules(tmp_path / "rules.yaml", rules_list)
    expected = reference_sample(tokenized, rules_list, tmp_path / "expected", epochs=2,
                                context_size=20)  # fmt: skip
    assert expected["tasks"][0]["truncated"] == 3
    base = dict(tokenized_path=tokenized, prefix_config_path=rules, epochs=2, context_size=20)
    kept = sample_tokenized(make_config(**base, output_path=tmp_path / "kept"))
    # Default: data_io's bytes exactly, and the rows counted.
    assert without_data_card(tree_bytes(tmp_path / "kept")) == tree_bytes(tmp_path / "expected")
    a = kept.tasks[0].stats
    assert (a.source_rows, a.rows, a.rows_truncated, a.rows_short_after_truncate) == (5, 4, 3, 2)
    assert a.rows_dropped == 1 and a.rows_dropped_long == 1
    assert summary_figures(kept)["rows_short_after_truncate"] == 2
    assert task_records(kept)[0]["rows_short_after_truncate"] == 2
    report = render_report(kept)
    assert "| Short After Trunc. |" in report
    assert "| **a.jsonl** | cap all, x1, truncate | 5 | 4 (80.0%) | 0 (0.0%) | 1 (20.0%) | " \
        "3 (60.0%) | 2 (40.0%) | 4 |" in report  # fmt: skip

    # Opt-in: those rows are excluded and counted as dropped.
    status = sample.main(
        [f"tokenized_path={tokenized}", f"output_path={tmp_path / 'dropped'}",
         f"prefix_config_path={rules}", "epochs=2", "context_size=20",
         "drop_short_after_truncate=true"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 0
    assert "| **a.jsonl** | cap all, x1, truncate | 5 | 2 (40.0%) |" in out
    resp = np.load(tmp_path / "dropped" / "epoch_0" / "resp_len.npy")
    assert (resp >= 2).all() and len(resp) == 2 + 1
    dropped = sample_tokenized(
        make_config(**base, output_path=tmp_path / "d2", drop_short_after_truncate=True)
    )
    d = dropped.tasks[0].stats
    assert (d.rows, d.rows_short_after_truncate, d.rows_dropped_short_after_truncate) == (2, 2, 2)
    assert d.rows + d.rows_dropped == d.source_rows
