"""Shared fixtures: the real raw rows (tests/support/real_raw.py: a mirror named by HRM_REAL_RAW,
or the pinned public files in the cache) and a small trained tokenizer."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hrm_assets.tokenizer.train import train_tokenizer

# The Hugging Face Hub is unreachable here: make `datasets`/`huggingface_hub` fail fast.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

REPO_ROOT = Path(__file__).resolve().parent.parent

# Text that exercises the tokenizer's corners: CJK, emoji (with ZWJ and skin tones), combining
# marks, non-NFC input, special-token strings inside text, long whitespace and digit runs.
TRICKY_TEXTS = [
    "数学问题：小明有3个苹果，又买了5个。他现在有几个？",
    "日本語のテキストと한국어 텍스트。",
    "Family: 👨‍👩‍👧‍👦, thumbs: 👍🏽, flags: 🇫🇷🇯🇵, face: 🙂",
    "Cafe\u0301 vs Café, A\u030a vs Å, \u1e9b\u0323 and ﬁ ligature",
    "inline specials <|im_start|> and <|box_end|> and <think>x</think> stay text",
    "spaces:      many\t\ttabs\n\n\nnewlines \r\n and trailing   ",
    "digits 12345678901234567890 and 3.14159e-10, 1,000,000",
    "Let's, we'll, they're, I'd, you've, it's: contractions, SHOUTING'S",
    "$\\frac{a}{b} + \\sqrt{x^2}$ and \\boxed{42}",
]


def pytest_addoption(parser):
    parser.addoption(
        "--no-skips",
        action="store_true",
        help="a skipped test fails the run (`make test`: every test runs, none is skipped)",
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under ``--no-skips``, a skip (a missing program, a fixture that cannot start) is a
    failure that keeps its reason, so a run that did not test everything never passes."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and not hasattr(report, "wasxfail") and item.config.getoption("no_skips"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped, and --no-skips runs every test: {reason}"


@pytest.fixture(scope="session")
def real_raw() -> Path:
    """The folder of the pinned real raw rows (``make test`` has checked it is there)."""
    from support.real_raw import RealRawUnavailable, real_raw_root

    try:
        return real_raw_root()
    except RealRawUnavailable as error:
        pytest.fail(f"real raw rows unavailable: {error}")


def _training_documents(real_raw: Path) -> list[str]:
    docs = list(TRICKY_TEXTS) * 3
    with open(real_raw / "gsm8k" / "train.jsonl", encoding="utf-8") as handle:
        for index, line in enumerate(handle):
            if index >= 1500:
                break
            row = json.loads(line)
            docs.extend([row["question"], row["answer"]])
    return docs


@pytest.fixture(scope="session")
def small_tokenizer_path(tmp_path_factory, real_raw) -> Path:
    """A data_io-configured byte-level BPE (vocab 2,048) trained on real GSM8K text."""
    path = tmp_path_factory.mktemp("tokenizer") / "tokenizer.json"
    train_tokenizer(_training_documents(real_raw), vocab_size=2048).save(str(path))
    return path


# The materialized demo graph (slow to build: one per session, copied per test).
from support.graph_fixture import built_graph, graph  # noqa: E402, F401


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """A moto S3 server on loopback for the session (tests/support/s3_server.py)."""
    from support.s3_server import start_s3_server

    yield from start_s3_server(tmp_path_factory.mktemp("s3-server"))


@pytest.fixture
def s3_bucket(s3_server, monkeypatch) -> str:
    """A fresh bucket on the session's S3 server, with this process's AWS environment pointed
    at the server (so the code under test finds it as it would find S3)."""
    for name, value in s3_server.environment().items():
        monkeypatch.setenv(name, value)
    return s3_server.create_bucket()


@pytest.fixture(scope="module")
def encoder(small_tokenizer_path):
    """The Rust encoder of the small tokenizer, with data_io's framing."""
    from hrm_assets import _core
    from hrm_assets.contracts.framing import Framing

    framing = Framing()
    return _core.Encoder(
        str(small_tokenizer_path), framing.boq, framing.eoq, framing.eoa, framing.conditions
    )
