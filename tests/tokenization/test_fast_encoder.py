"""The fast engine of hrm_assets._core gives the Python `tokenizers` package's ids, exactly.

Three tokenizers trained in data_io's configuration on real text (vocab 300, 2,048 and 32,768
requested: the real corpus supports about 29,700) so that merges matter, checked on real text
the tests did not pick by hand, on the corners of data_io's split regex, NFC and byte-level
BPE, and on random Unicode. The reference is always the Python package itself; the Rust
reference engine is checked alongside.
"""

from __future__ import annotations

import glob
import json
from pathlib import Path

import pytest
from conftest import TRICKY_TEXTS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import AddedToken, Tokenizer

from hrm_assets import _core
from hrm_assets.contracts.framing import Framing
from hrm_assets.tokenizer.train import SPECIAL_TOKENS, SPLIT_PATTERN, train_tokenizer

VOCAB_SIZES = (300, 2048, 32768)


def _jsonl(path: Path, fields: tuple[str, ...]) -> list[str]:
    with open(path, encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return [row[field] for row in rows for field in fields]


def _json_strings(path: Path) -> list[str]:
    """Every string field of every record of a JSON array (SciBench, TheoremQA)."""
    records = json.loads(path.read_text(encoding="utf-8"))
    return [value for record in records for value in record.values() if isinstance(value, str)]


def real_texts_by_source(real_raw: Path) -> dict[str, list[str]]:
    scibench = sorted(glob.glob(str(real_raw / "scibench" / "dataset" / "original" / "*.json")))
    dmmath = sorted(glob.glob(str(real_raw / "dmmath" / "**" / "*.txt"), recursive=True))
    return {
        "gsm8k_train": _jsonl(real_raw / "gsm8k" / "train.jsonl", ("question", "answer")),
        "gsm8k_test": _jsonl(real_raw / "gsm8k" / "test.jsonl", ("question", "answer")),
        "hendrycks_math": _jsonl(
            real_raw / "hendrycks_math" / "test.jsonl", ("problem", "solution")
        ),
        "scibench": [text for path in scibench for text in _json_strings(Path(path))],
        "theoremqa": _json_strings(real_raw / "theoremqa" / "theoremqa_test.json"),
        "dmmath": [
            line for path in dmmath for line in Path(path).read_text(encoding="utf-8").splitlines()
        ],
    }


@pytest.fixture(scope="module")
def real_texts(real_raw) -> dict[str, list[str]]:
    return real_texts_by_source(real_raw)


@pytest.fixture(scope="module")
def tokenizer_paths(real_texts, tmp_path_factory) -> dict[int, Path]:
    """data_io-configured tokenizers trained on all of the real text (plus TRICKY_TEXTS)."""
    documents = [text for texts in real_texts.values() for text in texts]
    documents += list(TRICKY_TEXTS) * 3
    folder = tmp_path_factory.mktemp("fast_encoder_tokenizers")
    paths = {}
    for vocab_size in VOCAB_SIZES:
        paths[vocab_size] = folder / f"tokenizer-{vocab_size}.json"
        train_tokenizer(documents, vocab_size=vocab_size).save(str(paths[vocab_size]))
    return paths


def python_tokenizer(path: Path) -> Tokenizer:
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.encode_special_tokens = True
    return tokenizer


def python_ids(tokenizer: Tokenizer | Path, texts: list[str]) -> list[list[int]]:
    if isinstance(tokenizer, Path):
        tokenizer = python_tokenizer(tokenizer)
    encodings = tokenizer.encode_batch(texts, add_special_tokens=False)
    return [encoding.ids for encoding in encodings]


def rust_encoder(path: Path, engine: str = "auto") -> _core.Encoder:
    framing = Framing()
    return _core.Encoder(
        str(path), framing.boq, framing.eoq, framing.eoa, framing.conditions, engine=engine
    )


@pytest.fixture(scope="module")
def encoders(
    tokenizer_paths,
) -> dict[int, tuple[Tokenizer, _core.Encoder, _core.Encoder]]:
    """Per vocabulary size: (the Python package's tokenizer, fast engine, reference engine)."""
    return {
        size: (python_tokenizer(path), rust_encoder(path, "fast"), rust_encoder(path, "reference"))
        for size, path in tokenizer_paths.items()
    }


def assert_ids_equal(encoders, texts: list[str]) -> None:
    for size, (python, fast, reference) in encoders.items():
        expected = python_ids(python, texts)
        got = fast.encode_texts(texts, num_threads=2)
        for text, want, have in zip(texts, expected, got, strict=True):
            assert have == want, f"vocab {size}, text {text!r}"
        assert reference.encode_texts(texts, num_threads=2) == expected, f"vocab {size}"


# --- which engine ------------------------------------------------------------------------------


def test_trained_tokenizers_select_the_fast_engine(tokenizer_paths):
    sizes = {}
    for size, path in tokenizer_paths.items():
        encoder = rust_encoder(path)
        assert (encoder.engine, encoder.fallback_reason) == ("fast", None)
        sizes[size] = encoder.vocab_size
    assert sizes[300] == 300 and sizes[2048] == 2048
    # min_frequency=2 stops merges where the real corpus runs out of repeated pairs.
    assert 20_000 < sizes[32768] <= 32768


def test_reference_engine_on_request(tokenizer_paths):
    encoder = rust_encoder(tokenizer_paths[300], "reference")
    assert encoder.engine == "reference"
    assert encoder.fallback_reason == "the reference engine was requested"


def test_unknown_engine_name_is_an_error(tokenizer_paths):
    with pytest.raises(ValueError, match='unknown engine "turbo"'):
        rust_encoder(tokenizer_paths[300], "turbo")


def _edited_tokenizer(source: Path, target: Path, edit) -> Path:
    data = json.loads(source.read_text(encoding="utf-8"))
    edit(data)
    target.write_text(json.dumps(data), encoding="utf-8")
    return target


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (lambda d: d.__setitem__("normalizer", {"type": "NFKC"}), "normalizer"),
        (lambda d: d["model"].__setitem__("dropout", 0.5), "dropout"),
        (
            lambda d: d["pre_tokenizer"]["pretokenizers"][0].__setitem__(
                "pattern", {"Regex": SPLIT_PATTERN.replace(r"\p{N}", r"\p{N}{1,3}")}
            ),
            "pre-tokenizer",
        ),
    ],
    ids=["nfkc", "dropout", "digit-groups"],
)
def test_other_tokenizers_fall_back_with_a_reason(tokenizer_paths, tmp_path, edit, reason):
    path = _edited_tokenizer(tokenizer_paths[2048], tmp_path / "tokenizer.json", edit)
    auto = rust_encoder(path)
    assert auto.engine == "reference"
    assert reason in auto.fallback_reason
    with pytest.raises(ValueError, match=f"fast engine cannot encode.*{reason}"):
        rust_encoder(path, "fast")
    if reason != "dropout":  # dropout is random: no fixed ids to compare
        texts = list(TRICKY_TEXTS)
        assert auto.encode_texts(texts) == python_ids(path, texts)


def test_non_special_added_token_falls_back_and_is_still_split_out(tokenizer_paths, tmp_path):
    path = tmp_path / "tokenizer.json"
    tokenizer = Tokenizer.from_file(str(tokenizer_paths[2048]))
    tokenizer.add_tokens([AddedToken("Janet", normalized=False)])
    tokenizer.save(str(path))
    encoder = rust_encoder(path)
    assert encoder.engine == "reference"
    assert "not special" in encoder.fallback_reason
    texts = ["Janet’s ducks lay 16 eggs per day.", "<|im_start|>Janet<|im_end|>"]
    expected = python_ids(path, texts)
    assert encoder.encode_texts(texts) == expected
    assert tokenizer.token_to_id("Janet") in expected[0]


# --- ids equal the Python package's ------------------------------------------------------------


@pytest.mark.parametrize(
    "source", ["gsm8k_test", "hendrycks_math", "scibench", "theoremqa", "dmmath"]
)
def test_real_text(encoders, real_texts, source):
    texts = real_texts[source]
    if source == "dmmath":
        texts = texts[::7]
    assert len(texts) > 500
    assert_ids_equal(encoders, texts)


def test_tricky_texts(encoders):
    assert_ids_equal(encoders, list(TRICKY_TEXTS))


def test_special_token_strings_are_plain_text(encoders):
    texts = [f"a{token}b {token} {token}{token}" for token in SPECIAL_TOKENS]
    texts.append("".join(SPECIAL_TOKENS))
    texts.append("<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n4<|box_end|>")
    assert_ids_equal(encoders, texts)
    special_ids = {encoders[2048][1].token_to_id(token) for token in SPECIAL_TOKENS}
    for ids in encoders[2048][1].encode_texts(texts):
        assert not special_ids & set(ids)


def test_scripts_emoji_and_combining_marks(encoders):
    texts = [
        "中文数学：设函数f(x)=x²+1，求f(3)的值。答案是10。",
        "日本語：三角形の内角の和は180度です。カタカナ、ひらがな。",
        "한국어: 이차방정식의 근의 공식은 무엇입니까?",
        "Русский: Решите уравнение x² − 5x + 6 = 0.",
        "العربية: ما هو مجموع الزوايا في المثلث؟ ٣+٤=٧",
        "हिन्दी: त्रिभुज के कोणों का योग १८० डिग्री है।",
        "Ελληνικά: Το άθροισμα των γωνιών είναι π.",
        "👨\u200d👩\u200d👧\u200d👦 👩🏽\u200d🔬 🏳️\u200d🌈 🇺🇳 1️⃣ ❤️\u200d🔥 🫠",
        "e\u0301 e\u0301\u0302 a\u0323\u0302 \u0915\u093c \u1100\u1161\u11a8 Z\u0335\u0321\u0358",
        "non-NFC: \u212b \u2126 \u1e9b\u0323 A\u030a o\u0308 \ufb01 \u2460 \uff21",
        "math: ∑ᵢ xᵢ² ≤ ∞, ∀ε>0 ∃δ, ℝⁿ → ℂ, √2 ≈ 1.41421356, ½ + ¾ = 1¼, Ⅻ, ⅷ",
        "controls: \x00\x01\x1b[0m \x7f \u00ad \u200b\u200c\u200d \ufeff \ue000 \U0010fffd",
    ]
    assert_ids_equal(encoders, texts)


def test_whitespace_runs(encoders):
    spaces = [" ", "\t", "\n", "\r", "\r\n", "\u00a0", "\u2003", "\u3000", "\u2028", "\x0b", "\x85"]
    texts = [" " * 1000, "\t" * 257 + "x", "\r\n" * 300, "x" + " \n" * 200 + "y"]
    for left in spaces:
        for right in spaces:
            texts.append(f"a{left}{right}b{left}{left}{right}1{right}{left}.{left}")
            texts.append(f"{left * 3}word{right * 5}")
    texts.append("trailing   \n\n   ")
    texts.append("   leading and   inner   spaces\t\t\tand\u3000\u3000\u3000ideographic")
    assert_ids_equal(encoders, texts)


def test_digit_runs(encoders):
    texts = [
        "1" * 5000,
        "".join(str(i) for i in range(3000)),
        "3.14159265358979323846264338327950288419716939937510",
        "1,234,567.89 -0.001 1e-10 0x1F 1_000_000 ٣٤٥٦ ０１２３ ①②③ ¹²³",
    ]
    assert_ids_equal(encoders, texts)


def test_contractions_in_every_case(encoders):
    suffixes = ["s", "t", "re", "ve", "m", "ll", "d"]
    forms = set()
    for suffix in suffixes:
        for variant in {suffix, suffix.upper(), suffix.capitalize(), suffix[::-1]}:
            forms.add(variant)
        if len(suffix) == 2:
            forms.add(suffix[0].upper() + suffix[1])
            forms.add(suffix[0] + suffix[1].upper())
    texts = []
    for form in sorted(forms):
        texts.append(f"it'{form} IT'{form} '{form} ''{form} x '{form}x ’{form} ‘{form}’")
    texts += [
        "'ſ 'ſt Maſ's", "'S'LL'VE'RE'M'D'T", "rock'n'roll o'clock y'all ma'am",
        "don't DON'T Don'T won’t it’s 'tis '90s", "'\n'\t' 's' 'll'",
    ]  # fmt: skip
    assert_ids_equal(encoders, texts)


_SCRIPT_CHARS = (
    "abcxyzABCXYZ éüßñçøåÆŒſK"
    "中文数学日本語ひらがなカタカナ한국어"
    "абвгдАБВГДαβγδΑΒΓΔ"
    "0123456789٣٤٥०१२½¾Ⅻ①"
    ".,;:!?'\"`’‘“”-–—_()[]{}<>|/\\@#$%^&*+=~"
    "\u0301\u0308\u0323\u093c\u200d\ufe0f"
    "😀👍🏽🇫🇷👨"
)
_SPACE_CHARS = " \t\n\r\x0b\x0c\x85\u00a0\u1680\u2003\u2028\u2029\u202f\u205f\u3000"


@st.composite
def mixed_text(draw) -> str:
    """Text mixing scripts, whitespace, punctuation, specials and arbitrary code points."""
    part = st.one_of(
        st.text(alphabet=_SCRIPT_CHARS, min_size=1, max_size=12),
        st.text(alphabet=_SPACE_CHARS, min_size=1, max_size=6),
        st.sampled_from(
            [*SPECIAL_TOKENS, "'s", "'LL", "'Ve", "’s", " the", "\r\n", "123", "e\u0301"]
        ),
        st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=8),
    )
    return "".join(draw(st.lists(part, max_size=25)))


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(mixed_text(), min_size=1, max_size=6))
def test_random_unicode(encoders, texts):
    assert_ids_equal(encoders, texts)


# --- tokenized folders -------------------------------------------------------------------------


def test_folders_are_byte_identical_across_engines(tokenizer_paths, real_texts, tmp_path):
    texts = real_texts["hendrycks_math"][:2000] + real_texts["theoremqa"][:400]
    rows = [
        {"condition": ("cot", "", "noisy,cot")[i % 3], "instruction": a, "response": b}
        for i, (a, b) in enumerate(zip(texts[::2], texts[1::2], strict=False))
    ]
    rows += [{"condition": "", "instruction": text, "response": text} for text in TRICKY_TEXTS]
    source = tmp_path / "in.jsonl"
    source.write_text(
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8"
    )
    path = tokenizer_paths[32768]
    for engine in ("fast", "reference"):
        rust_encoder(path, engine).tokenize_file(
            str(source), str(tmp_path / engine), "{}", num_threads=2, batch_rows=64
        )
    for name in _core.ARRAY_FILES:
        fast = (tmp_path / "fast" / name).read_bytes()
        assert fast == (tmp_path / "reference" / name).read_bytes(), name
    assert len((tmp_path / "fast" / "tokens.npy").read_bytes()) > 128 + 4 * len(rows) * 3
