"""``eval/<name>``: an evaluation set loaded (Hub, or ``$HRM_EVAL_ROOT``'s mirror) and saved as
``$HRM_DATA_ROOT/eval/<name>.jsonl``; ``eval/contamination``: every cleaned source scanned against
them (``hrm_assets.contamination``), the report saved as ``eval/contamination.json`` and shown
as tables. docs/CONTAMINATION.md explains the figures."""

import contextlib
from collections.abc import Iterator
from pathlib import Path

import dagster as dg

from hrm_assets.cleaning.sources import SOURCES
from hrm_assets.common.data_root import DataRoot
from hrm_assets.contamination.evalsets import EvalSetSpec, eval_set_specs
from hrm_assets.contamination.report_inputs import ReportInputs
from hrm_assets.defs.common.keys import cleaned_key
from hrm_assets.defs.common.metadata import table
from hrm_assets.defs.common.resources import DataPaths

EVAL_PREFIX = "eval"
CONTAMINATION_KEY = dg.AssetKey([EVAL_PREFIX, "contamination"])
REPORT_FILE = "contamination.json"
EVAL_SPECS: list[EvalSetSpec] = eval_set_specs()


def eval_key(name: str) -> dg.AssetKey:
    return dg.AssetKey([EVAL_PREFIX, name])


def eval_dir(data_paths: DataPaths) -> Path:
    return data_paths.root / EVAL_PREFIX


def report_path(data_paths: DataPaths) -> Path:
    return eval_dir(data_paths) / REPORT_FILE


class ContaminationConfig(dg.Config):
    """The n-gram size (words) and the shortest evaluation item indexed whole."""

    n: int = 13
    min_words: int = 8
    dedup: bool = True


def build_eval_asset(spec: EvalSetSpec) -> dg.AssetsDefinition:
    @dg.asset(
        key=eval_key(spec.name),
        group_name=EVAL_PREFIX,
        kinds={"python", "huggingface"},
        description=f"Evaluation set {spec.name}: {spec.describe()}.",
        code_version="1",
    )
    def eval_set(context: dg.AssetExecutionContext, data_paths: DataPaths) -> dg.MaterializeResult:
        from hrm_assets.contamination.evalsets import eval_root, load_eval_set, write_eval_set

        mirror = eval_root()
        context.log.info(f"loading {spec.describe()} from {mirror or 'the Hub'}")
        loaded = load_eval_set(spec, mirror)
        path = eval_dir(data_paths) / f"{spec.name}.jsonl"
        digest = write_eval_set(loaded, path)
        configs = sorted(set(loaded.configs))
        return dg.MaterializeResult(
            data_version=dg.DataVersion(digest),
            metadata={
                "dagster/row_count": len(loaded),
                "hub_id": spec.hub_id,
                "split": spec.split,
                "configs": ", ".join(configs),
                "fields": ", ".join(spec.fields),
                "loaded_from": str(mirror) if mirror else "Hugging Face Hub",
                "path": dg.MetadataValue.path(str(path)),
                "sha256": digest,
            },
        )

    return eval_set


@contextlib.contextmanager
def report_inputs(data_paths: DataPaths, label: dict) -> Iterator[ReportInputs]:
    """Each source's cleaned files, in safe-name order, and each file's tokenized folder (whose
    current sidecars spare reading it), wherever the roots are
    (:mod:`hrm_assets.contamination.report_inputs`): the adopted cleaned roots when there are
    some (``HRM_ADOPT_CLEANED``: folders, read through a Hub cache's links as adoption reads
    them, or ``s3://`` roots), else the cleaned root; the tokenized root on disk or in object
    storage."""
    from hrm_assets.adoption.roots import adopted_roots, in_object_storage
    from hrm_assets.common.layout import scan_cleaned_files
    from hrm_assets.contamination.report_inputs import FOLDER_FILES, report_inputs
    from hrm_assets.tokenization.partitioning import files_by_source
    from hrm_assets.tokenization.remote import RemoteCleaned, mirror_folder_files, mirror_lock

    adopted = adopted_roots(data_paths.adopted_cleaned_roots, data_paths.root)
    cleaned = DataRoot(data_paths.cleaned_location)
    objects = None
    if adopted is not None:
        objects = adopted if in_object_storage(adopted) else None
        items = adopted.files()
    elif cleaned.remote is not None:
        objects = RemoteCleaned.scan(cleaned.remote)
        items = objects.files()
    elif not cleaned.local.is_dir():
        raise FileNotFoundError(
            f"cleaned root {cleaned.local} does not exist: materialize cleaned/* first"
        )
    else:
        items = scan_cleaned_files([cleaned.local])
    found = files_by_source(SOURCES.values(), items)
    files = {name: sorted(items, key=lambda item: item.safe_name) for name, items in found.items()}
    tokenized = DataRoot(data_paths.tokenized_location)
    if tokenized.remote is None:
        with report_inputs(files, tokenized.local, label, objects) as inputs:
            yield inputs
        return
    tokenized.local.mkdir(parents=True, exist_ok=True)
    with mirror_lock(tokenized.local):
        local, complete = mirror_folder_files(tokenized.remote, FOLDER_FILES)
        with report_inputs(files, local, label, objects, complete) as inputs:
            yield inputs


def report_metadata(report) -> dict:
    """Tables of a :class:`hrm_assets.contamination.scan.Report`."""
    set_names = list(report.eval_sets)
    sources = [
        {
            "source": name,
            "rows": result.rows,
            "rows_hit": result.rows_hit,
            "rate": round(result.rate, 6),
            **{name: result.hits_by_set.get(name, 0) for name in set_names},
        }
        for name, result in report.sources.items()
    ]
    files = [
        {"file": r.name, "rows": r.rows, "rows_hit": r.rows_hit, "rate": round(r.rate, 6)}
        for r in report.files
        if r.rows_hit
    ]
    examples = [
        {
            "source": name,
            "row": example.row,
            "field": example.field,
            "eval_set": example.eval_set,
            "eval_item": example.eval_item,
            "span": example.span,
            "eval_text": example.eval_text,
        }
        for name, result in report.sources.items()
        for example in result.examples
    ]
    metadata = {
        "dagster/row_count": sum(result.rows for result in report.sources.values()),
        "rows_hit": sum(result.rows_hit for result in report.sources.values()),
        "n": report.n,
        "min_words": report.min_words,
        "eval_sets": table(
            [{"eval_set": name, **counts} for name, counts in report.eval_sets.items()]
        ),
        "sources": table(sources),
        "files_hit": table(files, ["file", "rows", "rows_hit", "rate"]),
        "examples": table(
            examples,
            ["source", "row", "field", "eval_set", "eval_item", "span", "eval_text"],
        ),
    }
    if report.duplicates is not None:
        pairs = [
            {"first": first, "later": later, "rows": count}
            for (first, later), count in sorted(report.duplicates.pairs.items())
        ]
        metadata["duplicate_pairs"] = table(pairs, ["first", "later", "rows"])
        metadata["duplicate_rows"] = sum(report.duplicates.duplicates.values())
    return metadata


@dg.asset(
    key=CONTAMINATION_KEY,
    group_name=EVAL_PREFIX,
    deps=[eval_key(spec.name) for spec in EVAL_SPECS] + [cleaned_key(name) for name in SOURCES],
    kinds={"python", "rust"},
    description="Every cleaned row (instruction and response) against the evaluation sets "
    "(hashed word n-grams, n = 13 by default) and exact duplicates of (instruction, response) "
    "within and across sources (docs/CONTAMINATION.md).",
    code_version="1",
)
def contamination(
    context: dg.AssetExecutionContext, config: ContaminationConfig, data_paths: DataPaths
) -> dg.MaterializeResult:
    from hrm_assets.common.hashing import file_sha256, value_sha256
    from hrm_assets.contamination.evalsets import read_eval_set
    from hrm_assets.contamination.scan import analyze
    from hrm_assets.contamination.sidecar import index_label

    folder = eval_dir(data_paths)
    eval_sets, digests = [], []
    for spec in EVAL_SPECS:
        path = folder / f"{spec.name}.jsonl"
        if not path.is_file():
            raise FileNotFoundError(
                f"{path} is missing: materialize {eval_key(spec.name).to_user_string()} first"
            )
        eval_sets.append(read_eval_set(spec, path))
        digests.append((spec.name, file_sha256(path)))
    label = index_label(digests, config.n, config.min_words)
    with report_inputs(data_paths, label) as inputs:
        context.log.info(f"scanning {sum(map(len, inputs.files.values()))} cleaned file(s)")
        report, _ = analyze(
            inputs.files,
            eval_sets,
            n=config.n,
            min_words=config.min_words,
            dedup=config.dedup,
            tokenized=inputs.tokenized,
            label=label,
        )
    inputs.name_results(report)
    report.write(report_path(data_paths))
    return dg.MaterializeResult(
        data_version=dg.DataVersion(value_sha256(report.to_dict())),
        metadata={
            **report_metadata(report),
            "path": dg.MetadataValue.path(str(report_path(data_paths))),
        },
    )


EVAL_ASSETS = [build_eval_asset(spec) for spec in EVAL_SPECS] + [contamination]
