"""The blocking checks of tokenized folders, ``arrays_consistent`` and ``manifest_valid``, run on
many folders at once (each array read once by the Rust core for both, the span rule applied
once over all their rows): every folder's report is exactly the one it gets checked alone and,
for the arrays, the one numpy's reading of it gives, sound or damaged, whatever its neighbours
in the batch."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from support.tokenized_trees import write_tokenized

from hrm_assets.checks.consistency import (
    _check_tokenized_folder_with_numpy,
    check_tokenized_folder,
    check_tokenized_folders,
)
from hrm_assets.common.manifest import (
    MANIFEST_FILE,
    build_manifest,
    manifest_bytes,
    verify_folder,
    verify_folders,
)
from hrm_assets.defs.tokenized.checks import tokenized_check_results, tokenized_check_results_many

VOCAB = 1000
# Rows of (instruction, response) tokens: 19 tokens, the rows at 0, 5 and 12.
ROWS = [(3, 2), (4, 3), (2, 5)]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _rewrite(folder: Path, name: str, edit: Callable[[np.ndarray], np.ndarray]) -> None:
    path = folder / f"{name}.npy"
    np.save(path, edit(np.load(path)))


def _set(index: int, value: int) -> Callable[[np.ndarray], np.ndarray]:
    def edit(array: np.ndarray) -> np.ndarray:
        array[index] = value
        return array

    return edit


def _flip_a_bit(folder: Path) -> None:
    path = folder / "tokens.npy"
    data = bytearray(path.read_bytes())
    data[128] ^= 1  # the first token's low bit: still below the vocabulary
    path.write_bytes(bytes(data))


def _truncate_tokens(folder: Path) -> None:
    path = folder / "tokens.npy"
    path.write_bytes(path.read_bytes()[:-4])


def _overlap(folder: Path) -> None:
    # Row 1 moved back into row 0, the lengths still adding up to the token count.
    _rewrite(folder, "inst_start", _set(1, 3))
    _rewrite(folder, "resp_start", _set(1, 7))


def _stray_array(folder: Path) -> None:
    np.save(folder / "stray.npy", np.arange(3, dtype="<u8"))


def _rows_in_metadata(folder: Path) -> None:
    (folder / "metadata.json").write_text(json.dumps({"rows": 99}))


def _widen_tokens(folder: Path) -> None:
    _rewrite(folder, "tokens", lambda tokens: tokens.astype("<u8"))


def _signed_lengths(folder: Path) -> None:
    _rewrite(folder, "inst_len", lambda lengths: lengths.astype("<i8"))


def _short_instruction(folder: Path) -> None:
    # Row 2's instruction shortened to one token, its response one longer: still consistent.
    _rewrite(folder, "inst_len", _set(2, 1))
    _rewrite(folder, "resp_start", _set(2, 13))
    _rewrite(folder, "resp_len", _set(2, 6))


def _directory_for_resp_len(folder: Path) -> None:
    # Listed and present, but not readable as a file (root reads past permissions).
    (folder / "resp_len.npy").unlink()
    (folder / "resp_len.npy").mkdir()


# Each damage, and what each check reports of it ({folder}: the folder's path, {name}: its
# name, {tokens}/{inst_start}/...: the SHA-256 of that array as it is now).
DAMAGES: dict[str, tuple[Callable[[Path], None], list[str], list[str]]] = {
    "flipped byte": (
        _flip_a_bit,
        [],
        ["{folder}/tokens.npy: SHA-256 {tokens} differs from manifest.json ({recorded_tokens})"],
    ),
    "truncated array": (
        _truncate_tokens,
        [
            "{name}: unreadable: {folder}/tokens.npy: not a readable .npy array: the file is "
            "truncated"
        ],
        ["{folder}/tokens.npy: 200 bytes, manifest.json records 204"],
    ),
    "missing array": (
        lambda folder: (folder / "resp_start.npy").unlink(),
        ["{name}: unreadable: [Errno 2] No such file or directory: '{folder}/resp_start.npy'"],
        ["{folder}/resp_start.npy: listed in manifest.json but missing"],
    ),
    "unlisted array": (
        _stray_array,
        [],
        ["{folder}/stray.npy: not listed in manifest.json"],
    ),
    "overlapping spans": (
        _overlap,
        [
            "{name}: row 1: starts at 3 but row 0 ends at 5 (it overlaps the previous row); rows "
            "lie back to back in tokens.npy"
        ],
        [
            "{folder}/inst_start.npy: SHA-256 {inst_start} differs from manifest.json "
            "({recorded_inst_start})",
            "{folder}/resp_start.npy: SHA-256 {resp_start} differs from manifest.json "
            "({recorded_resp_start})",
        ],
    ),
    "id past the vocabulary": (
        lambda folder: _rewrite(folder, "tokens", _set(4, 5000)),
        ["{name}: token id 5000 >= vocab size 1000"],
        ["{folder}/tokens.npy: SHA-256 {tokens} differs from manifest.json ({recorded_tokens})"],
    ),
    "rows unlike metadata.json": (
        _rows_in_metadata,
        ["{name}: 3 rows but metadata.json records 99"],
        [],
    ),
    "wrong token dtype": (
        _widen_tokens,
        ["{name}: tokens.npy has dtype uint64, expected <u4"],
        ["{folder}/tokens.npy: 280 bytes, manifest.json records 204"],
    ),
    "wrong span dtype": (
        _signed_lengths,
        ["{name}: inst_len.npy has dtype int64, expected <u8"],
        [
            "{folder}/inst_len.npy: SHA-256 {inst_len} differs from manifest.json "
            "({recorded_inst_len})"
        ],
    ),
    "short instruction": (
        _short_instruction,
        ["{name}: 1 instructions shorter than [BOQ, EOQ]"],
        [
            "{folder}/inst_len.npy: SHA-256 {inst_len} differs from manifest.json "
            "({recorded_inst_len})",
            "{folder}/resp_len.npy: SHA-256 {resp_len} differs from manifest.json "
            "({recorded_resp_len})",
            "{folder}/resp_start.npy: SHA-256 {resp_start} differs from manifest.json "
            "({recorded_resp_start})",
        ],
    ),
    "array unreadable": (
        _directory_for_resp_len,
        [
            "{name}: unreadable: {folder}/resp_len.npy: not a readable .npy array: [Errno 21] "
            "Is a directory: '{folder}/resp_len.npy'"
        ],
        ["{folder}/resp_len.npy: listed in manifest.json but unreadable: Is a directory"],
    ),
    "folder gone": (
        shutil.rmtree,
        ["{name}: unreadable: [Errno 2] No such file or directory: '{folder}/tokens.npy'"],
        ["{folder}: not a directory"],
    ),
}


def _sound_folders(root: Path, names: list[str]) -> list[Path]:
    """Tokenized folders as the tokenizer leaves them: arrays, metadata.json, manifest.json."""
    write_tokenized(root, {name: ROWS for name in names}, vocab_size=VOCAB)
    for name in names:
        folder = root / name
        (folder / "metadata.json").write_text(json.dumps({"rows": len(ROWS)}))
        (folder / MANIFEST_FILE).write_bytes(manifest_bytes(build_manifest(folder)))
    return [root / name for name in names]


def _expected(folder: Path, recorded: dict, messages: list[str]) -> list[str]:
    figures = {"folder": folder, "name": folder.name}
    for file, entry in recorded.items():
        stem = file.removesuffix(".npy")
        figures[f"recorded_{stem}"] = entry["sha256"]
        if (folder / file).is_file():
            figures[stem] = _sha256(folder / file)
    return [message.format(**figures) for message in messages]


@pytest.fixture
def mixed(tmp_path) -> tuple[Path, list[Path], dict[Path, tuple[list[str], list[str]]]]:
    """A tokenized root where each damaged folder sits between two sound ones, and what each
    folder's checks must report."""
    names = []
    for index, _ in enumerate(DAMAGES):
        names += [f"sound{index}.jsonl", f"damaged{index}.jsonl"]
    names.append("sound_last.jsonl")
    folders = _sound_folders(tmp_path, names)
    expected = {folder: ([], []) for folder in folders}
    for index, (damage, arrays, manifest) in enumerate(DAMAGES.values()):
        folder = tmp_path / f"damaged{index}.jsonl"
        recorded = json.loads((folder / MANIFEST_FILE).read_text())["files"]
        damage(folder)
        expected[folder] = (
            _expected(folder, recorded, arrays),
            _expected(folder, recorded, manifest),
        )
    return tmp_path, folders, expected


def test_each_damage_is_reported_in_its_own_folder_only(mixed):
    _, folders, expected = mixed
    arrays = check_tokenized_folders(folders, VOCAB)
    manifests = verify_folders(folders)
    for folder, array_report, manifest_report in zip(folders, arrays, manifests, strict=True):
        assert (array_report.problems, manifest_report.problems) == expected[folder], folder.name
        if folder.name.startswith("sound"):
            top = int(np.load(folder / "tokens.npy").max())
            assert array_report.figures == {"rows": 3, "tokens": 19, "max_token_id": top}
            assert (manifest_report.files, manifest_report.bytes) == (5, 204 + 4 * 152)


def test_a_batch_reports_what_each_folder_alone_and_numpy_report(mixed):
    _, folders, _ = mixed
    batched = check_tokenized_folders(folders, VOCAB)
    alone = [check_tokenized_folder(folder, VOCAB) for folder in folders]
    by_numpy = [_check_tokenized_folder_with_numpy(folder, VOCAB) for folder in folders]
    for report, single, numpy_report in zip(batched, alone, by_numpy, strict=True):
        assert report == single == numpy_report
    manifests = verify_folders(folders)
    for folder, report in zip(folders, manifests, strict=True):
        single = verify_folder(folder)
        assert (report.folder, report.files, report.bytes, report.problems) == (
            single.folder,
            single.files,
            single.bytes,
            single.problems,
        )


def test_the_arrays_check_reuses_the_manifest_checks_reads(mixed):
    _, folders, _ = mixed
    manifests = verify_folders(folders)
    sound = next(report for report in manifests if report.ok)
    assert sorted(sound.scans) == sorted(build_manifest(sound.folder)["files"])
    tokens = sound.scans["tokens.npy"]
    array = np.load(sound.folder / "tokens.npy")
    assert (tokens.descr, tokens.length, tokens.max_value) == ("<u4", 19, int(array.max()))
    reused = check_tokenized_folders(folders, VOCAB, [report.scans for report in manifests])
    assert reused == check_tokenized_folders(folders, VOCAB)


def test_the_dagster_checks_of_a_batch_are_those_of_each_folder(mixed):
    root, folders, expected = mixed
    (root / "tokenizer_info.json").write_text(json.dumps({"vocab_size": VOCAB}))
    batched = tokenized_check_results_many(root, folders)
    for folder, results in zip(folders, batched, strict=True):
        alone = tokenized_check_results(root, folder, VOCAB)
        assert [(r.check_name, r.passed, r.metadata) for r in results] == [
            (r.check_name, r.passed, r.metadata) for r in alone
        ]
        arrays, manifest = expected[folder]
        assert [result.passed for result in results] == [not arrays, not manifest]
    assert tokenized_check_results_many(root, [], VOCAB) == []
