"""Materialize the whole graph on the bundled demo corpus with the local SQLite instance.

``python -m hrm_assets.quickstart`` (what ``make demo`` runs) writes the demo raw corpus (if it
is not there yet), then runs, through Dagster and recorded in ``$DAGSTER_HOME``:
raw observations, cleaning and tokenizer training, one tokenization run per source over all its
cleaned files, and the sampled epochs of every training node. Running it again redoes only what
changed. It prints a line as each of these four stages starts and a closing summary; the runs'
own logs stay in the instance (the UI shows them), only their errors reach the console.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from hrm_assets.common import settings
from hrm_assets.common.storage import Location, ObjectStore, parse_location
from hrm_assets.local_env import ENV_FILE, project_defaults

DEFAULT_DEMO_RAW = "demo_raw"


def _prepare_environment(data_root: Location, raw_root: Location | None) -> Location:
    os.environ.setdefault("DAGSTER_HOME", str(settings.PROJECT_ROOT / "dagster_home"))
    Path(os.environ["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)
    os.environ[settings.DATA_ROOT_ENV] = str(data_root)
    raw_root = raw_root or data_root / DEFAULT_DEMO_RAW
    os.environ[settings.RAW_ROOT_ENV] = str(raw_root)
    return raw_root


def _write_demo_corpus(raw_root: Location) -> None:
    """Write the demo raw corpus where it is missing: into the folder, or, for a URL, into a
    local temporary folder uploaded object by object (nothing is written if the prefix holds
    objects already)."""
    from hrm_assets.demo import write_demo_corpus

    if isinstance(raw_root, Path):
        if not raw_root.exists():
            _step(f"writing the demo raw corpus to {raw_root}")
            write_demo_corpus(raw_root)
        return
    store = ObjectStore(raw_root)
    store.check_access()
    if store.list():
        return
    _step(f"writing the demo raw corpus to {raw_root}")
    with tempfile.TemporaryDirectory(prefix="hrm-demo-raw-") as folder:
        write_demo_corpus(Path(folder))
        for path in sorted(Path(folder).rglob("*")):
            if path.is_file():
                store.put_file(path.relative_to(folder).as_posix(), path)


def _step(message: str) -> None:
    print(f"==> {message}", file=sys.stderr, flush=True)


def _run_config(ops: dict | None = None) -> dict:
    """Runs keep every event in the instance (the UI shows them); only errors reach the
    console."""
    # Imported here: the definitions read the environment at import (see run()).
    from hrm_assets.defs.tokenized.materialize_all import QUIET_CONSOLE

    return {**QUIET_CONSOLE, **({"ops": ops} if ops else {})}


def materialize_graph(defs, instance, vocab_size: int, epochs: int = 10, log=_step) -> bool:
    """Observe, clean, train, tokenize every registered partition and sample, in that order.

    Each step is a Dagster run recorded in ``instance``, its console log kept to errors;
    ``log`` gets one line as each of the four stages starts. Unchanged work is skipped inside
    the assets, so calling this again redoes only what changed. Returns False on the first
    failing stage (within tokenization, the other sources' runs still run).
    """
    from hrm_assets.cleaning.sources import SOURCES
    from hrm_assets.defs.common.keys import sampled_key
    from hrm_assets.defs.tokenized.materialize_all import materialize_sources
    from hrm_assets.defs.tokenized.partition_range import all_partitions_tags
    from hrm_assets.sampling.training_nodes import load_training_nodes

    log(f"[1/4] observing {len(SOURCES)} raw sources")
    observe = defs.resolve_job_def("observe_raw_sources")
    if not observe.execute_in_process(
        instance=instance, run_config=_run_config(), raise_on_error=False
    ).success:
        return False
    log(f"[2/4] cleaning {len(SOURCES)} sources, training the tokenizer (up to {vocab_size:,} ids)")
    result = defs.resolve_job_def("clean_and_train_tokenizer").execute_in_process(
        instance=instance,
        run_config=_run_config({"tokenizer": {"config": {"vocab_size": vocab_size}}}),
        raise_on_error=False,
    )
    if not result.success:
        return False
    registered = [name for name in SOURCES if all_partitions_tags(instance, name)]
    log(f"[3/4] tokenizing the cleaned files of {len(registered)} sources (one run per source)")
    if materialize_sources(defs, instance, registered, log=lambda line: None):
        return False
    sample = defs.resolve_job_def("sample_epochs")
    log(f"[4/4] sampling {epochs} epochs for every training node")
    # A node that sets its epochs in training_nodes.yaml keeps them (a run may not ask for other).
    pinned = {sampled_key(n.name).to_python_identifier() for n in load_training_nodes() if n.epochs}
    ops = {
        node.name: {"config": {"epochs": epochs}}
        for node in sample.nodes
        if node.name not in pinned
    }
    return sample.execute_in_process(
        instance=instance, run_config=_run_config(ops), raise_on_error=False
    ).success


def run(data_root: Location, raw_root: Location | None, vocab_size: int, epochs: int) -> int:
    raw_root = _prepare_environment(data_root, raw_root)
    _write_demo_corpus(raw_root)

    # Definitions read the environment at import, so import them only now.
    import dagster as dg

    from hrm_assets.definitions import defs
    from hrm_assets.sampling.training_nodes import load_training_nodes

    started = time.monotonic()
    if not materialize_graph(defs, dg.DagsterInstance.get(), vocab_size, epochs):
        print(
            "A run failed: its error is above; every event of it is in the UI "
            f"({_ui_command(data_root, raw_root)}).",
            file=sys.stderr,
        )
        return 1
    print(f"\nDone in {time.monotonic() - started:.0f}s.")
    for node in load_training_nodes():
        print(f"Sampled epochs for node {node.name!r}: {node.output_dir(settings.data_root())}")
    print(f"Every run's log, lineage and metadata, in the UI: {_ui_command(data_root, raw_root)}")
    return 0


def _ui_command(data_root: Location, raw_root: Location) -> str:
    """``dagster dev`` as it opens this instance and corpus: bare in the repository root when
    its ``.env`` has them as defaults, else with the variables spelled out."""
    defaults = project_defaults(settings.PROJECT_ROOT)
    uses_defaults = (
        (settings.PROJECT_ROOT / ENV_FILE).is_file()
        and Path(os.environ["DAGSTER_HOME"]) == defaults["DAGSTER_HOME"]
        and raw_root == defaults[settings.RAW_ROOT_ENV]
        and data_root == settings.PROJECT_ROOT / "data"
    )
    if uses_defaults:
        return f"cd {settings.PROJECT_ROOT} && dagster dev"
    return (
        f"DAGSTER_HOME={os.environ['DAGSTER_HOME']} {settings.DATA_ROOT_ENV}={data_root} "
        f"{settings.RAW_ROOT_ENV}={raw_root} dagster dev -w {settings.PROJECT_ROOT}/workspace.yaml"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hrm_assets.quickstart", description=__doc__)
    parser.add_argument(
        "--data-root",
        type=parse_location,
        default=settings.data_location(),
        help="a folder or an object-storage URL (s3://bucket/prefix); default $HRM_DATA_ROOT",
    )
    parser.add_argument(
        "--raw-root",
        type=parse_location,
        default=None,
        help="raw corpus, a folder or a URL (default: the demo corpus under the data root)",
    )
    parser.add_argument(
        "--vocab-size",
        type=int,
        default=None,
        help="BPE vocabulary (default: the tokenizer asset's, 65,536, so that its job run by hand "
        "afterwards keeps the tokenizer; the demo corpus has fewer distinct merges anyway)",
    )
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args(argv)
    if args.vocab_size is None:
        from hrm_assets.tokenizer.train import DEFAULT_VOCAB_SIZE

        args.vocab_size = DEFAULT_VOCAB_SIZE
    return run(args.data_root, args.raw_root, args.vocab_size, args.epochs)


if __name__ == "__main__":
    sys.exit(main())
