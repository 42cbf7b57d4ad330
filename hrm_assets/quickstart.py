"""Materialize the whole graph on the bundled demo corpus with the local SQLite instance.

``python -m hrm_assets.quickstart`` (what ``make demo`` runs) writes the demo raw corpus (if it
is not there yet), then runs, through Dagster and recorded in ``$DAGSTER_HOME``:
raw observations, cleaning and tokenizer training, one tokenization run per source over all its
cleaned files, and the sampled epochs of every training node. Running it again redoes only what
changed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from hrm_assets import settings

DEFAULT_DEMO_RAW = "demo_raw"


def _prepare_environment(data_root: Path, raw_root: Path | None) -> Path:
    os.environ.setdefault("DAGSTER_HOME", str(settings.PROJECT_ROOT / "dagster_home"))
    Path(os.environ["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)
    os.environ[settings.DATA_ROOT_ENV] = str(data_root)
    raw_root = raw_root or data_root / DEFAULT_DEMO_RAW
    os.environ[settings.RAW_ROOT_ENV] = str(raw_root)
    return raw_root


def _step(message: str) -> None:
    print(f"==> {message}", file=sys.stderr, flush=True)


def materialize_graph(defs, instance, vocab_size: int = 4096, epochs: int = 10, log=_step) -> bool:
    """Observe, clean, train, tokenize every registered partition and sample, in that order.

    Each step is a Dagster run recorded in ``instance``; unchanged work is skipped inside the
    assets, so calling this again redoes only what changed. Returns False on the first failure.
    """
    from hrm_assets.defs.tokenized.partition_range import all_partitions_tags
    from hrm_assets.sources import SOURCES

    log("observing raw sources")
    observe = defs.resolve_job_def("observe_raw_sources")
    if not observe.execute_in_process(instance=instance, raise_on_error=False).success:
        return False
    log("cleaning every source and training the tokenizer")
    result = defs.resolve_job_def("clean_and_train_tokenizer").execute_in_process(
        instance=instance,
        run_config={"ops": {"tokenizer": {"config": {"vocab_size": vocab_size}}}},
        raise_on_error=False,
    )
    if not result.success:
        return False
    for name in SOURCES:
        tags = all_partitions_tags(instance, name)
        if not tags:
            continue
        log(f"tokenizing {name} (every cleaned file, one run)")
        result = defs.resolve_job_def(f"tokenize_{name}").execute_in_process(
            instance=instance, tags=tags, raise_on_error=False
        )
        if not result.success:
            return False
    log(f"sampling {epochs} epochs for every training node")
    sample = defs.resolve_job_def("sample_epochs")
    run_config = {"ops": {node.name: {"config": {"epochs": epochs}} for node in sample.nodes}}
    return sample.execute_in_process(
        instance=instance, run_config=run_config, raise_on_error=False
    ).success


def run(data_root: Path, raw_root: Path | None, vocab_size: int, epochs: int) -> int:
    raw_root = _prepare_environment(data_root, raw_root)
    if not raw_root.exists():
        from hrm_assets.demo import write_demo_corpus

        _step(f"writing the demo raw corpus to {raw_root}")
        write_demo_corpus(raw_root)

    # Definitions read the environment at import, so import them only now.
    import dagster as dg

    from hrm_assets.definitions import defs
    from hrm_assets.training_nodes import load_training_nodes

    started = time.monotonic()
    if not materialize_graph(defs, dg.DagsterInstance.get(), vocab_size, epochs):
        print("A step failed: see the log above, or the run in the UI.", file=sys.stderr)
        return 1
    print(f"\nDone in {time.monotonic() - started:.0f}s.")
    for node in load_training_nodes():
        print(f"Sampled epochs for node {node.name!r}: {node.output_dir(data_root)}")
    print(
        "Open the UI with:\n"
        f"  DAGSTER_HOME={os.environ['DAGSTER_HOME']} HRM_DATA_ROOT={data_root} "
        f"HRM_RAW_ROOT={raw_root} dagster dev -w workspace.yaml"
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hrm_assets.quickstart", description=__doc__)
    parser.add_argument("--data-root", type=Path, default=settings.data_root())
    parser.add_argument(
        "--raw-root",
        type=Path,
        default=None,
        help="raw corpus (default: the demo corpus under the data root)",
    )
    parser.add_argument(
        "--vocab-size",
        type=int,
        default=4096,
        help="BPE vocabulary for the demo (the production default is 65,536)",
    )
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args(argv)
    return run(args.data_root.absolute(), args.raw_root, args.vocab_size, args.epochs)


if __name__ == "__main__":
    sys.exit(main())
