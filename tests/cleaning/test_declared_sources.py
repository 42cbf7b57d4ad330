"""Sources declared in sources.yaml: the schema and its errors, field mapping, chat format,
filters, output layouts, and the declared sources' place in the registry and the Dagster graph.

GSM8K declared in YAML is compared byte for byte with the built-in source and with data_io's own
golden file, on the real raw rows (tests/support/real_raw.py) laid out as the Hub repository.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from hrm_assets.cleaning.clean import clean_source, source_code_version
from hrm_assets.cleaning.raw_versions import observe_raw
from hrm_assets.cleaning.rows import iter_cleaned_rows
from hrm_assets.cleaning.sources import SOURCES, build_registry, get_source
from hrm_assets.cleaning.sources.declared import (
    DeclaredMappingError,
    DeclaredSourceError,
    chat,
    specs_from_file,
)
from hrm_assets.cleaning.sources.declared.layouts import BAD_CSV_ROW, MALFORMED_JSON_LINE
from hrm_assets.cleaning.sources.declared.specs import HIDDEN_NAME
from hrm_assets.cleaning.sources.declared.template import TemplateError, parse_template
from hrm_assets.common import settings

REPO_ROOT = Path(__file__).resolve().parents[2]
GOLDEN_GSM8K = REPO_ROOT / "tests" / "golden" / "cleaned" / "data" / "gsm8k_train.jsonl"
# tests/cleaning/test_golden_cleaned.py: the first 300 rows of the real split
GOLDEN_GSM8K_ROWS = 300

GSM8K_YAML = """
sources:
  - name: gsm8k_declared
    hub: {id: openai/gsm8k, config: main, split: train}
    fields:
      instruction: question
      response: {column: answer, after: "#### "}
    condition: direct
    output: {file: declared/gsm8k_train.jsonl}
"""


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")


def declare(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sources.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def only_spec(tmp_path: Path, text: str):
    [spec] = specs_from_file(declare(tmp_path, text))
    return spec


def write_jsonl(path: Path, records: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def read_rows(path: Path) -> list[tuple[str, str, str]]:
    return [tuple(row) for row in iter_cleaned_rows(path)]


# -- GSM8K declared equals the built-in source --------------------------------------------------


def gsm8k_mirror(tmp_path: Path, real_raw: Path, rows: int | None = None) -> Path:
    """The Hub repository's layout: ``<raw>/openai/gsm8k/main/train.jsonl``."""
    config = tmp_path / "raw" / "openai" / "gsm8k" / "main"
    config.mkdir(parents=True)
    lines = (real_raw / "gsm8k" / "train.jsonl").read_bytes().splitlines(keepends=True)
    (config / "train.jsonl").write_bytes(b"".join(lines[:rows]))
    return tmp_path / "raw"


def test_declared_gsm8k_is_byte_identical_to_the_built_in_source(tmp_path, real_raw):
    raw_root = gsm8k_mirror(tmp_path, real_raw)
    declared = only_spec(tmp_path, GSM8K_YAML)
    out = tmp_path / "cleaned"
    mine = clean_source(declared, out, raw_root, batch_size=1000)
    theirs = clean_source(get_source("gsm8k_train"), out, raw_root, batch_size=1000)
    assert mine.rows_written == theirs.rows_written == 7473
    assert mine.skipped == {} and theirs.skipped == {}
    assert (out / "declared" / "gsm8k_train.jsonl").read_bytes() == (
        out / "gsm8k_train.jsonl"
    ).read_bytes()


def test_declared_gsm8k_is_byte_identical_to_data_io_golden_file(tmp_path, real_raw):
    raw_root = gsm8k_mirror(tmp_path, real_raw, GOLDEN_GSM8K_ROWS)
    clean_source(only_spec(tmp_path, GSM8K_YAML), tmp_path / "cleaned", raw_root)
    written = tmp_path / "cleaned" / "declared" / "gsm8k_train.jsonl"
    assert written.read_bytes() == GOLDEN_GSM8K.read_bytes()


def test_a_record_without_the_separator_once_is_skipped_and_counted(tmp_path):
    raw_root = tmp_path / "raw"
    write_jsonl(
        raw_root / "openai" / "gsm8k" / "main" / "train.jsonl",
        [
            {"question": " q1 ", "answer": "work\n#### 4 "},
            {"question": "q2", "answer": "no final answer"},
            {"question": "q3", "answer": "#### 1 #### 2"},
        ],
    )
    report = clean_source(only_spec(tmp_path, GSM8K_YAML), tmp_path / "cleaned", raw_root)
    assert read_rows(tmp_path / "cleaned" / "declared" / "gsm8k_train.jsonl") == [
        ("direct", "q1", "4")
    ]
    [(reason, entry)] = report.skipped.items()
    assert reason == "response: column 'answer' does not hold '#### ' exactly once"
    assert entry.count == 2
    assert [e.raw for e in entry.examples] == ["main#2", "main#3"]


def test_rules_of_the_declaration_are_part_of_the_code_version(tmp_path):
    first = only_spec(tmp_path, GSM8K_YAML)
    changed = only_spec(tmp_path, GSM8K_YAML.replace("condition: direct", "condition: cot"))
    assert source_code_version(first) != source_code_version(changed)
    assert source_code_version(first) == source_code_version(only_spec(tmp_path, GSM8K_YAML))
    assert get_source("gsm8k_train").rules_version == ""


# -- chat format ---------------------------------------------------------------------------------

CHAT_YAML = """
sources:
  - name: my_chat
    local: {path: chats/*.jsonl}
    chat: {}
    condition: synth
"""

GOOD_CHAT = {
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4"},
    ]
}
MULTI_TURN = {
    "messages": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "Name a prime."},
        {"role": "assistant", "content": "7"},
        {"role": "user", "content": "Thanks"},
    ]
}
# One record for every malformed case, with the reason it must be counted under.
MALFORMED = [
    ({"messages": "hello"}, chat.MALFORMED_NOT_A_LIST),
    ({"messages": None}, chat.MALFORMED_NOT_A_LIST),
    ({"messages": {"role": "user"}}, chat.MALFORMED_NOT_A_LIST),
    ({"messages": []}, chat.MALFORMED_EMPTY),
    ({"messages": ["just text"]}, chat.MALFORMED_MESSAGE),
    ({"messages": [{"role": "user"}]}, chat.MALFORMED_MESSAGE),
    ({"messages": [{"role": "tool", "content": "x"}]}, chat.MALFORMED_ROLE),
    ({"messages": [{"role": "user", "content": 5}]}, chat.MALFORMED_CONTENT),
    ({"messages": [{"role": "user", "content": None}]}, chat.MALFORMED_CONTENT),
    ({"messages": [{"role": "user", "content": [{"type": "text"}]}]}, chat.MALFORMED_CONTENT),
    ({"messages": [{"role": "user", "content": "q"}]}, chat.MALFORMED_NO_ASSISTANT),
    (
        {"messages": [{"role": "system", "content": "s"}, {"role": "assistant", "content": "a"}]},
        chat.MALFORMED_NO_USER,
    ),
]


def test_chat_rows_follow_the_stated_rule(tmp_path):
    write_jsonl(tmp_path / "chats" / "a.jsonl", [GOOD_CHAT, MULTI_TURN])
    spec = only_spec(tmp_path, CHAT_YAML)
    report = clean_source(spec, tmp_path / "cleaned")
    assert read_rows(tmp_path / "cleaned" / "my_chat.jsonl") == [
        ("synth", "Be brief.\n\nWhat is 2+2?", "4"),
        ("synth", "user: Hi\n\nassistant: Hello!\n\nuser: Name a prime.", "7"),
    ]
    assert report.skipped == {}


def test_chat_each_turn_gives_a_row_with_its_history(tmp_path):
    write_jsonl(tmp_path / "chats" / "a.jsonl", [MULTI_TURN])
    yaml_text = CHAT_YAML.replace(
        "chat: {}",
        "chat: {turns: each, history_template: '[{role}] {content}', separator: \"\\n\"}",
    )
    clean_source(only_spec(tmp_path, yaml_text), tmp_path / "cleaned")
    assert read_rows(tmp_path / "cleaned" / "my_chat.jsonl") == [
        ("synth", "Hi", "Hello!"),
        ("synth", "[user] Hi\n[assistant] Hello!\n[user] Name a prime.", "7"),
    ]


def test_every_malformed_conversation_is_counted_under_its_reason(tmp_path):
    records = [GOOD_CHAT] + [record for record, _ in MALFORMED] + ["{not json", "[1, 2]"]
    write_jsonl(tmp_path / "chats" / "a.jsonl", records)
    report = clean_source(only_spec(tmp_path, CHAT_YAML), tmp_path / "cleaned")
    assert report.rows_written == 1
    expected: dict[str, int] = {}
    for _, reason in MALFORMED:
        expected[reason] = expected.get(reason, 0) + 1
    expected[MALFORMED_JSON_LINE] = 1
    expected["record is not an object"] = 1
    assert {reason: entry.count for reason, entry in report.skipped.items()} == expected
    assert report.records_read == 1 + len(MALFORMED) + 2
    assert report.rows_skipped == len(MALFORMED) + 2
    # Each example names the file and the record; the detail says what was wrong.
    role = report.skipped[chat.MALFORMED_ROLE].examples[0]
    assert role.raw == "a.jsonl#8" and "'tool'" in role.detail
    line = report.skipped[MALFORMED_JSON_LINE].examples[0]
    assert "a.jsonl line 14" in line.detail


def test_chat_skips_reach_the_cleaned_asset_metadata(tmp_path):
    from hrm_assets.defs.cleaned.metadata import cleaning_metadata

    write_jsonl(tmp_path / "chats" / "a.jsonl", [GOOD_CHAT, {"messages": []}])
    report = clean_source(only_spec(tmp_path, CHAT_YAML), tmp_path / "cleaned")
    metadata = cleaning_metadata(report.as_dict())
    assert metadata["rows_skipped"] == 1
    [row] = metadata["skipped"].value.records
    assert row.data["reason"] == chat.MALFORMED_EMPTY and row.data["count"] == 1


# -- field mapping, conditions, filters, layouts ------------------------------------------------

TASKS_YAML = """
sources:
  - name: tasks
    local: {path: tasks.csv}
    fields:
      instruction: {template: "{question}\\n\\nContext: {context}"}
      response: {column: answer, strip: false}
    condition: {column: kind, map: {easy: direct, hard: "noisy,cot"}}
    filters:
      non_empty: [response]
      max_chars: {instruction: 40}
    output: {folder: tasks, per_value_of: task, format: parquet}
    columns: [instruction, response, condition]
"""


def write_csv(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def test_templates_conditions_filters_and_per_value_files(tmp_path):
    write_csv(
        tmp_path / "tasks.csv",
        """\
        task,kind,question,context,answer
        add/one,easy,1+1?,sums, 2
        add/one,hard,2+2?,sums,4
        mul,easy,3*3?,products,9
        mul,easy,3*4?,products,
        mul,easy,a long question that will not fit,products,x
        mul,medium,4*4?,products,16
        .hidden,easy,q,c,a
        mul,easy,too,many,fields,here
        """,
    )
    spec = only_spec(tmp_path, TASKS_YAML)
    report = clean_source(spec, tmp_path / "cleaned")
    out = tmp_path / "cleaned" / "tasks"
    assert sorted(p.name for p in out.iterdir()) == ["add_one.parquet", "mul.parquet"]
    assert read_rows(out / "add_one.parquet") == [
        ("direct", "1+1?\n\nContext: sums", " 2"),
        ("noisy,cot", "2+2?\n\nContext: sums", "4"),
    ]
    assert read_rows(out / "mul.parquet") == [("direct", "3*3?\n\nContext: products", "9")]
    assert pq.read_schema(out / "mul.parquet").names == ["instruction", "response", "condition"]
    counts = {reason: entry.count for reason, entry in report.skipped.items()}
    assert counts == {
        "filter: response empty": 1,
        "filter: instruction longer than 40 characters": 1,
        "condition: value of column 'kind' not in map": 1,
        HIDDEN_NAME: 1,
        BAD_CSV_ROW: 1,
    }
    assert report.records_read == 8 and report.rows_written == 3


def test_condition_from_a_column_is_checked_like_any_row(tmp_path):
    write_jsonl(
        tmp_path / "rows.jsonl",
        [{"q": "a", "r": "b", "c": "noisy,cot"}, {"q": "c", "r": "d", "c": "fancy"}],
    )
    spec = only_spec(
        tmp_path,
        """
        sources:
          - name: tagged
            local: {path: rows.jsonl}
            fields: {instruction: q, response: r}
            condition: {column: c}
        """,
    )
    report = clean_source(spec, tmp_path / "cleaned")
    assert read_rows(tmp_path / "cleaned" / "tagged.jsonl") == [("noisy,cot", "a", "b")]
    [example] = report.skipped["unknown condition tag"].examples
    assert "fancy" in example.detail and "tagged.jsonl: row 2" in example.detail


def test_nulls_and_non_strings_are_skipped_and_counted(tmp_path):
    write_jsonl(
        tmp_path / "rows.jsonl",
        [{"q": "a", "r": "b"}, {"q": None, "r": "b"}, {"q": "a", "r": 3}],
    )
    spec = only_spec(
        tmp_path,
        """
        sources:
          - name: plain
            local: {path: rows.jsonl}
            fields: {instruction: q, response: r}
        """,
    )
    report = clean_source(spec, tmp_path / "cleaned")
    assert read_rows(tmp_path / "cleaned" / "plain.jsonl") == [("", "a", "b")]
    counts = {reason: entry.count for reason, entry in report.skipped.items()}
    assert counts == {"column 'q' is null": 1, "column 'r' is not a string": 1}


def test_parquet_input_reads_like_jsonl(tmp_path):
    from hrm_assets.cleaning.sources.local_files import write_parquet_records

    write_parquet_records(tmp_path / "in" / "part-0.parquet", [{"q": "x", "r": "y"}])
    write_parquet_records(tmp_path / "in" / "part-1.parquet", [{"q": "z", "r": "w"}])
    spec = only_spec(
        tmp_path,
        """
        sources:
          - name: from_parquet
            local: {path: "in/*.parquet"}
            fields: {instruction: q, response: r}
            condition: direct
        """,
    )
    report = clean_source(spec, tmp_path / "cleaned")
    assert report.parts == ["part-0.parquet", "part-1.parquet"]
    assert read_rows(tmp_path / "cleaned" / "from_parquet.jsonl") == [
        ("direct", "x", "y"),
        ("direct", "z", "w"),
    ]


def test_a_local_source_is_versioned_by_its_own_files(tmp_path):
    write_jsonl(tmp_path / "chats" / "a.jsonl", [GOOD_CHAT])
    spec = only_spec(tmp_path, CHAT_YAML)
    before = observe_raw(spec, None)
    assert before.problem is None and before.files == 1
    assert observe_raw(spec, tmp_path / "elsewhere").version == before.version
    write_jsonl(tmp_path / "chats" / "a.jsonl", [GOOD_CHAT, GOOD_CHAT])
    assert observe_raw(spec, None).version != before.version


# -- errors that name the source, the field and the column --------------------------------------


def test_a_column_the_records_lack_names_source_field_and_column(tmp_path):
    raw_root = tmp_path / "raw"
    write_jsonl(raw_root / "openai" / "gsm8k" / "main" / "train.jsonl", [{"question": "q"}])
    with pytest.raises(DeclaredMappingError) as error:
        clean_source(only_spec(tmp_path, GSM8K_YAML), tmp_path / "cleaned", raw_root)
    message = str(error.value)
    assert "'gsm8k_declared'" in message and "field 'response'" in message
    assert "column 'answer'" in message and "its columns: question" in message
    assert not (tmp_path / "cleaned" / "declared" / "gsm8k_train.jsonl").exists()


def test_a_template_column_the_records_lack_is_named(tmp_path):
    write_csv(tmp_path / "tasks.csv", "task,kind,question,answer\nt,easy,q,a\n")
    with pytest.raises(DeclaredMappingError, match="field 'instruction' maps column 'context'"):
        clean_source(only_spec(tmp_path, TASKS_YAML), tmp_path / "cleaned")


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            "{name: s, hub: {id: a/b, revison: main}, fields: {instruction: q, response: r}}",
            "(source 's'): hub.revison: unknown key",
        ),
        (
            "{name: s, hub: {id: a/b}, fields: {instruction: q, response: {column: r, x: 1}}}",
            "(source 's'): fields.response.x: unknown key",
        ),
        (
            "{name: s, hub: {id: a/b}, fields: {instruction: q, response: {column: r, "
            "strip: 'yes'}}}",
            "(source 's'): fields.response.strip: Input should be a valid boolean",
        ),
        (
            "{name: s, hub: {id: a/b}, fields: {instruction: q, response: r}, "
            "condition: {column: c, mapp: {}}}",
            "(source 's'): condition.mapp: unknown key",
        ),
        (
            "{name: s, hub: {id: a/b}, fields: {instruction: q, response: r}, "
            "condition: {column: c, map: {a: cot, b: fancy}}}",
            "condition.map: condition 'fancy' has unknown tag(s) ['fancy']",
        ),
        (
            "{name: s, hub: {id: a/b}, fields: {instruction: q, response: r}, condition: fun}",
            "condition: condition 'fun' has unknown tag(s) ['fun']; known tags: direct, cot",
        ),
        (
            "{name: s, hub: {id: a/b}, local: {path: x.jsonl}, fields: {instruction: q, "
            "response: r}}",
            "set exactly one of hub and local",
        ),
        (
            "{name: s, hub: {id: a/b}, fields: {instruction: {template: '{q.__class__}'}, "
            "response: r}}",
            "must be a plain column name",
        ),
        (
            "{name: s, hub: {id: a/b}, fields: {instruction: q, response: r}, "
            "output: {file: ../x.jsonl}}",
            "output: '../x.jsonl': no '.', '..' or hidden names",
        ),
        (
            "{name: bad-name, hub: {id: a/b}, fields: {instruction: q, response: r}}",
            "name 'bad-name' must start with a letter",
        ),
        (
            "{name: s, local: {path: x.txt}, fields: {instruction: q, response: r}}",
            "cannot tell the format from its suffix",
        ),
        (
            "{name: s, hub: {id: a/b}, chat: {history_template: '{speaker}'}}",
            "may use {role} and {content} only",
        ),
    ],
)
def test_bad_declarations_name_the_file_source_and_key(tmp_path, entry, expected):
    path = declare(tmp_path, f"sources:\n  - {entry}\n")
    with pytest.raises(DeclaredSourceError) as error:
        specs_from_file(path)
    assert str(path) in str(error.value)
    assert expected in str(error.value)


def test_names_must_not_collide_with_built_in_sources_or_each_other(tmp_path):
    taken = GSM8K_YAML.replace("gsm8k_declared", "gsm8k_train")
    with pytest.raises(DeclaredSourceError, match="'gsm8k_train': a built-in source has this"):
        specs_from_file(declare(tmp_path, taken), built_in=SOURCES.values())
    twice = GSM8K_YAML + GSM8K_YAML.split("sources:", 1)[1]
    with pytest.raises(DeclaredSourceError, match="sources\\[1\\].*declared twice"):
        specs_from_file(declare(tmp_path, twice))
    same_file = GSM8K_YAML.replace("declared/gsm8k_train.jsonl", "gsm8k_train.jsonl")
    with pytest.raises(ValueError, match="both write 'gsm8k_train.jsonl'"):
        build_registry([*SOURCES.values(), *specs_from_file(declare(tmp_path, same_file))])


@pytest.mark.parametrize(
    ("output", "clash"),
    [
        ("{file: gsm8k_train.jsonl}", "gsm8k_train.jsonl"),
        ("{file: flan/mine.parquet}", "flan/mine.parquet"),
        ("{folder: flan, per_value_of: task}", "flan/"),
        ("{folder: dmmath/extra, per_value_of: task}", "dmmath/"),
        ("{folder: Platypus, per_value_of: task, format: jsonl}", "Platypus/arb_math.jsonl"),
    ],
)
def test_outputs_another_source_claims_are_refused(tmp_path, output, clash):
    # A cleaning run removes the files its source claims but no longer writes: a file two
    # sources claim would be deleted by one of them.
    text = GSM8K_YAML.replace("{file: declared/gsm8k_train.jsonl}", output)
    with pytest.raises(DeclaredSourceError, match=f"its output {clash!r} is also source"):
        specs_from_file(declare(tmp_path, text), built_in=SOURCES.values())
    twice = GSM8K_YAML + GSM8K_YAML.split("sources:", 1)[1].replace("gsm8k_declared", "again")
    with pytest.raises(DeclaredSourceError, match="'again': its output .* is also source"):
        specs_from_file(declare(tmp_path, twice))


def test_unknown_top_level_keys_and_bad_yaml_are_refused(tmp_path):
    with pytest.raises(DeclaredSourceError, match="unknown top-level key"):
        specs_from_file(declare(tmp_path, "source: []\n"))
    with pytest.raises(DeclaredSourceError, match="not valid YAML"):
        specs_from_file(declare(tmp_path, "sources: [\n"))
    assert specs_from_file(declare(tmp_path, "")) == []


def test_templates_evaluate_nothing():
    template = parse_template("{a} and {{b}} {c}")
    assert template.columns == ("a", "c")
    assert template.render({"a": "1", "c": "2"}) == "1 and {b} 2"
    for bad in ("{}", "{a!r}", "{a:>5}", "{a[0]}", "{a.b}", "{a"):
        with pytest.raises(TemplateError):
            parse_template(bad)


def test_the_file_comes_from_the_environment_or_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(settings.SOURCES_YAML_ENV, raising=False)
    assert settings.sources_yaml_path() is None
    declare(tmp_path, GSM8K_YAML)
    assert settings.sources_yaml_path() == tmp_path / "sources.yaml"
    monkeypatch.setenv(settings.SOURCES_YAML_ENV, "")
    assert settings.sources_yaml_path() is None
    monkeypatch.setenv(settings.SOURCES_YAML_ENV, "other.yaml")
    assert settings.sources_yaml_path() == tmp_path / "other.yaml"


def test_the_project_ships_no_sources_yaml():
    assert not (REPO_ROOT / settings.SOURCES_YAML_NAME).exists()


# -- Dagster: declared sources are assets like the built-in ones ---------------------------------


def run_python(code: str, env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        cwd=cwd,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_declared_sources_appear_in_the_definitions_which_stay_cheap_to_load(tmp_path):
    write_jsonl(tmp_path / "chats" / "a.jsonl", [GOOD_CHAT])
    path = declare(tmp_path, CHAT_YAML)
    out = run_python(
        """
        import json
        import sys
        from dagster import AssetKey
        from hrm_assets.definitions import defs
        graph = defs.resolve_asset_graph()
        keys = [k.to_user_string() for k in graph.get_all_asset_keys()]
        jobs = [job.name for job in defs.jobs]
        kinds = {
            name: sorted(graph.get(AssetKey(["cleaned", name])).kinds)
            for name in ("my_chat", "gsm8k_train")
        }
        heavy = [m for m in ("datasets", "numpy", "pyarrow", "tokenizers") if m in sys.modules]
        print(json.dumps({"keys": keys, "jobs": jobs, "kinds": kinds, "heavy": heavy}))
        """,
        {settings.SOURCES_YAML_ENV: str(path)},
        REPO_ROOT,
    )
    found = json.loads(out.splitlines()[-1])
    for prefix in ("raw", "cleaned", "tokenized"):
        assert f"{prefix}/my_chat" in found["keys"]
    assert "tokenize_my_chat" in found["jobs"]
    assert found["kinds"] == {"my_chat": ["jsonl", "yaml"], "gsm8k_train": ["jsonl", "python"]}
    assert len([k for k in found["keys"] if k.startswith("cleaned/")]) == len(SOURCES) + 1
    assert found["heavy"] == []


@pytest.mark.slow
def test_a_declared_chat_source_materializes_through_dagster(tmp_path):
    write_jsonl(tmp_path / "chats" / "a.jsonl", [GOOD_CHAT, MULTI_TURN, {"messages": []}] * 20)
    path = declare(tmp_path, CHAT_YAML)
    (tmp_path / "home").mkdir()
    out = run_python(
        f"""
        import json
        import dagster as dg
        from hrm_assets.definitions import build_definitions
        from hrm_assets.defs.common.resources import DataPaths
        from hrm_assets.defs.tokenized.partition_range import all_partitions_tags

        paths = DataPaths(data_root={str(tmp_path / "data")!r}, raw_root=None,
                          prefix_config_path={str(REPO_ROOT / "prefix_config.yaml")!r})
        defs = build_definitions(paths)
        keys = [dg.AssetKey(["raw", "my_chat"])]
        with dg.instance_for_test(temp_dir={str(tmp_path / "home")!r}) as instance:
            job = defs.resolve_implicit_global_asset_job_def()
            observed = job.execute_in_process(instance=instance, asset_selection=keys)
            head = [dg.AssetKey(["cleaned", "my_chat"]), dg.AssetKey("tokenizer")]
            cleaned = job.execute_in_process(
                instance=instance, asset_selection=head,
                run_config={{"ops": {{"tokenizer": {{"config": {{"vocab_size": 600}}}}}}}},
            )
            tags = all_partitions_tags(instance, "my_chat")
            tokenized = defs.resolve_job_def("tokenize_my_chat").execute_in_process(
                instance=instance, tags=tags
            )
            meta = instance.get_latest_materialization_event(head[0]).asset_materialization.metadata
            print(json.dumps({{
                "ok": [observed.success, cleaned.success, tokenized.success],
                "partitions": instance.get_dynamic_partitions("tokenized_my_chat"),
                "rows": meta["rows_written"].value,
                "skipped": meta["rows_skipped"].value,
            }}))
        """,
        {settings.SOURCES_YAML_ENV: str(path)},
        REPO_ROOT,
    )
    result = json.loads(out.splitlines()[-1])
    assert result["ok"] == [True, True, True]
    assert result["partitions"] == ["my_chat.jsonl"]
    assert (result["rows"], result["skipped"]) == (40, 20)
    folder = tmp_path / "data" / "tokenized" / "my_chat.jsonl"
    names = {p.name for p in folder.iterdir()}
    assert {
        "tokens.npy",
        "inst_start.npy",
        "inst_len.npy",
        "resp_start.npy",
        "resp_len.npy",
    } <= names
    import numpy as np

    assert len(np.load(folder / "inst_len.npy")) == 40


# -- the built-in sources docs/SOURCES.md says are expressible in YAML --------------------------

SOURCES_DOC = REPO_ROOT / "docs" / "SOURCES.md"
EXPRESSIBLE_MARKER = (
    "<!-- expressible built-in sources: tested by tests/cleaning/test_declared_sources.py -->"
)


def documented_equivalents() -> str:
    """The YAML block that follows the marker in docs/SOURCES.md."""
    text = SOURCES_DOC.read_text(encoding="utf-8")
    after = text[text.index(EXPRESSIBLE_MARKER) :]
    return after.split("```yaml\n", 1)[1].split("```", 1)[0]


def test_documented_yaml_equivalents_write_the_built_in_bytes(tmp_path):
    from hrm_assets.demo import write_demo_source

    specs = specs_from_file(declare(tmp_path, documented_equivalents()), built_in=SOURCES.values())
    # Each declaration is named after the built-in source it restates: <built-in>_yaml.
    assert sorted(spec.name for spec in specs) == [
        "gsm8k_train_yaml",
        "principia_collection_yaml",
        "webinstruct_verified_yaml",
    ]
    raw_root, out = tmp_path / "raw", tmp_path / "cleaned"
    for spec in specs:
        built_in = get_source(spec.name.removesuffix("_yaml"))
        write_demo_source(built_in, raw_root)
        mine = clean_source(spec, out, raw_root)
        theirs = clean_source(built_in, out, raw_root)
        assert mine.rows_written == theirs.rows_written > 0
        assert mine.parts == theirs.parts
        [(path, _)] = mine.files.items()
        assert (out / path).read_bytes() == (out / built_in.output).read_bytes(), spec.name


def test_a_pinned_revision_reaches_the_spec(tmp_path):
    spec = only_spec(tmp_path, GSM8K_YAML.replace("split: train}", "split: train, revision: v1}"))
    assert spec.revision == "v1" and spec.revision_option() == {"revision": "v1"}
    assert only_spec(tmp_path, GSM8K_YAML).revision is None


# -- the Hub path: a mirror laid out like the Hub, and the calls made to the Hub ----------------

HUB_CHAT_YAML = """
sources:
  - name: hub_chat
    hub: {id: some-org/chats, split: train}
    chat: {column: conversation}
    condition: {column: kind}
    output: {folder: hub_chat, per_value_of: topic}
"""


def test_a_chat_dataset_from_a_hub_mirror(tmp_path):
    from hrm_assets.cleaning.sources.local_files import write_parquet_records

    def talk(question: str, answer: str) -> list[dict]:
        return [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]

    records = [
        {"conversation": talk("2+2?", "4"), "kind": "direct", "topic": "math"},
        {"conversation": talk("Capital of France?", "Paris"), "kind": "direct", "topic": "geo"},
        {"conversation": talk("Why?", "Because.")[:1], "kind": "cot", "topic": "math"},
    ]
    # The Hub's layout of a dataset without configs: <id>/data/<split>-*.parquet.
    shard = tmp_path / "raw" / "some-org" / "chats" / "data" / "train-00000-of-00001.parquet"
    write_parquet_records(shard, records)
    spec = only_spec(tmp_path, HUB_CHAT_YAML)
    report = clean_source(spec, tmp_path / "cleaned", tmp_path / "raw")
    out = tmp_path / "cleaned" / "hub_chat"
    assert read_rows(out / "math.parquet") == [("direct", "2+2?", "4")]
    assert read_rows(out / "geo.parquet") == [("direct", "Capital of France?", "Paris")]
    assert report.skipped[chat.MALFORMED_NO_ASSISTANT].count == 1
    assert observe_raw(spec, tmp_path / "raw").files == 1


def test_the_hub_is_asked_for_the_declared_id_config_split_and_revision(tmp_path, monkeypatch):
    import datasets

    calls = []

    class OneBatch:
        def iter(self, batch_size):
            yield {"question": ["q"], "answer": ["work #### 7"]}

    def load_dataset(*args, **kwargs):
        calls.append((args, kwargs))
        return OneBatch()

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    pinned = GSM8K_YAML.replace("split: train}", "split: train, revision: 0123abc}")
    report = clean_source(only_spec(tmp_path, pinned), tmp_path / "cleaned", raw_root=None)
    assert calls == [
        (("openai/gsm8k", "main"), {"split": "train", "streaming": True, "revision": "0123abc"})
    ]
    assert read_rows(tmp_path / "cleaned" / "declared" / "gsm8k_train.jsonl") == [
        ("direct", "q", "7")
    ]
    assert report.records_read == 1
