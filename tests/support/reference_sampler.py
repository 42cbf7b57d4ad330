"""data_io's ``sample_tokenized.py`` restated on purpose as an oracle (docs/CONTRACTS.md section 3):
plain Python lists and loops sharing no code with hrm_assets.sampling, rendering data_io's
report lines. Every output file of the real sampler must match it byte for byte."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np

from hrm_assets.sampling.datacard import CARD_FILES
from support.tokenized_trees import (
    SPAN_NAMES,
)


def reference_sample(
    tokenized: Path,
    rules: list[dict],
    out: Path,
    seed=0,
    epochs=10,
    context_size=4097,
    min_resp_length=2,
) -> dict:
    """docs/CONTRACTS.md section 3 in plain Python. Returns the report text and per-task counts."""
    info = json.loads((tokenized / "tokenizer_info.json").read_text(encoding="utf-8"))
    names = sorted(p.name for p in tokenized.iterdir() if p.is_dir())
    all_tokens: list[int] = []
    tasks = []
    for name in names:
        rule = {"max_per_file": None, "long_context": "truncate", "repeat": 1}
        for candidate in rules:
            if name.startswith(candidate["prefix"]):
                rule.update({k: v for k, v in candidate.items() if k != "prefix"})
                break
        folder = tokenized / name
        columns = {key: np.load(folder / f"{key}.npy").tolist() for key in SPAN_NAMES}
        base = len(all_tokens)
        all_tokens.extend(np.load(folder / "tokens.npy").tolist())
        rows, dropped, truncated = [], 0, 0
        for i in range(len(columns["inst_len"])):
            inst_len, resp_len = columns["inst_len"][i], columns["resp_len"][i]
            if resp_len < min_resp_length:
                dropped += 1
                continue
            allowed = context_size - min(inst_len, context_size)
            if rule["long_context"] == "truncate":
                if allowed < 1:
                    dropped += 1
                    continue
                if resp_len > allowed:
                    truncated += 1
                    resp_len = allowed
            elif resp_len > allowed:
                dropped += 1
                continue
            rows.append(
                (
                    columns["inst_start"][i] + base,
                    inst_len,
                    columns["resp_start"][i] + base,
                    resp_len,
                )
            )
        tasks.append(
            {
                "name": name,
                "rule": rule,
                "rows": rows,
                "perm": [],
                "pos": 0,
                "hits": [0] * len(rows),
                "dropped": dropped,
                "truncated": truncated,
                "source_rows": len(columns["inst_len"]),
            }
        )

    vocab = info.get("vocab_size")
    dtype = np.int32 if vocab is None or vocab > 65535 else np.uint16 if vocab > 255 else np.uint8
    out.mkdir(parents=True, exist_ok=True)
    np.save(out / "tokens.npy", np.array(all_tokens, dtype=np.int64).astype(dtype))

    rng = np.random.Generator(np.random.Philox(seed))
    total = 0
    for epoch in range(epochs):
        epoch_rows = []
        for task in tasks:
            n = len(task["rows"])
            want = (
                n if task["rule"]["max_per_file"] is None else min(task["rule"]["max_per_file"], n)
            )
            want *= task["rule"]["repeat"]
            for _ in range(want):
                if task["pos"] == len(task["perm"]):
                    task["perm"] = rng.permutation(n).tolist()
                    task["pos"] = 0
                row = task["perm"][task["pos"]]
                task["pos"] += 1
                task["hits"][row] += 1
                epoch_rows.append(task["rows"][row])
        total += sum(r[1] + r[3] for r in epoch_rows)
        order = rng.permutation(len(epoch_rows)).tolist()
        folder = out / f"epoch_{epoch}"
        folder.mkdir()
        for column, key in enumerate(SPAN_NAMES):
            values = [epoch_rows[i][column] for i in order]
            np.save(folder / f"{key}.npy", np.array(values, dtype=np.int64))
    metadata = {
        "tokenizer_info": info,
        "vocab_size": None,
        "max_seq_len": context_size,
        "total_length": round(total / epochs),
    }
    (out / "metadata.json").write_bytes(
        json.dumps(metadata, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    )
    write_reference_manifest(out)
    return {"report": reference_report(tasks), "tasks": tasks}


def write_reference_manifest(out: Path) -> None:
    """hrm-data's addition to data_io's folder (issues 6 and 16), written here independently:
    ``manifest.json`` with the size and SHA-256 of every ``.npy`` and of ``metadata.json``,
    compact, keys sorted."""
    files = {
        path.relative_to(out).as_posix(): {
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "size": path.stat().st_size,
        }
        for path in sorted([*out.rglob("*.npy"), out / "metadata.json"])
    }
    manifest = {"files": files, "format": "hrm-data-manifest/1", "kind": "sampled"}
    (out / "manifest.json").write_bytes(
        json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode("utf-8")
    )


def reference_report(tasks: list[dict]) -> str:
    """data_io's gen_report output, written from its format strings."""
    keys = (
        "rows",
        "toks",
        "cov_rows",
        "cov_toks",
        "cov_inst",
        "cov_resp",
        "uniq_rows",
        "uniq_toks",
    )
    per_task, per_cat = {}, {"GLOBAL": dict.fromkeys(keys, 0)}
    for task in tasks:
        s = dict.fromkeys(keys, 0)
        for (_, inst_len, _, resp_len), hits in zip(task["rows"], task["hits"], strict=True):
            s["rows"] += 1
            s["toks"] += inst_len + resp_len
            s["cov_rows"] += hits
            s["cov_inst"] += inst_len * hits
            s["cov_resp"] += resp_len * hits
            s["cov_toks"] += (inst_len + resp_len) * hits
            s["uniq_rows"] += 1 if hits else 0
            s["uniq_toks"] += inst_len + resp_len if hits else 0
        per_task[task["name"]] = s
        for cat in ("GLOBAL", task["name"].split("__")[0]):
            per_cat.setdefault(cat, dict.fromkeys(keys, 0))
            for key in keys:
                per_cat[cat][key] += s[key]
    ref = per_cat["GLOBAL"]

    def pct(key, s):
        return f"{s[key]:,} ({s[key] / max(1, ref[key]):.1%})"

    out = ""
    for title, table in (("Category", per_cat), ("Task", per_task)):
        header = (
            "| Name | Rows (%) | Tokens (%) | Cov Rows (%) | Cov Toks (%) | Cov IToks (%) "
            "| Cov RToks (%) |"
        )
        out += f"\n### {title} Coverage Stats\n{header}\n{re.sub(r'[^|]', '-', header)}\n"
        for name in sorted(table):
            s = table[name]
            cells = " | ".join(
                pct(k, s) for k in ("rows", "toks", "cov_rows", "cov_toks", "cov_inst", "cov_resp")
            )
            out += f"| **{name}** | {cells} |\n"
    out += "\n### Global Summary\n"
    out += (
        f"**Total Unique Tokens Sampled:** {ref['uniq_toks']:,} out of {ref['toks']:,} "
        f"({ref['uniq_toks'] / max(1, ref['toks']):.2%})\n"
    )
    out += (
        f"**Total Unique Rows Sampled:** {ref['uniq_rows']:,} out of {ref['rows']:,} "
        f"({ref['uniq_rows'] / max(1, ref['rows']):.2%})\n\n"
    )
    return out


def without_data_card(tree: dict[str, bytes]) -> dict[str, bytes]:
    """A sampled folder's files less its data card (hrm_assets.sampling.datacard, tested in
    test_datacard.py), which the reference does not write."""
    return {name: data for name, data in tree.items() if name not in CARD_FILES}
