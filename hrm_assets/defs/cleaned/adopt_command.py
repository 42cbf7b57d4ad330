"""``python -m hrm_assets.adoption``: one look at the adopted cleaned roots, recorded in the
Dagster instance (``DAGSTER_HOME``, and the ``.env`` of the working directory) as
``cleaned_files_sensor`` records it under ``dagster dev``: each changed source, data_io's
tokenizer when it is adopted, and a tokenized partition per file. Then
``hrm-materialize-tokenized`` (or automation) tokenizes them.

The roots are ``$HRM_ADOPT_CLEANED`` (folders or ``hf://datasets/<org>/<name>@<revision>``
addresses, or ``s3://bucket/prefix`` roots, separated by ``:``), or ``--cleaned``, which also
writes them into the ``.env`` of the working directory, and ``--tokenizer`` the tokenizer's
folder (``HRM_TOKENIZER_ROOT``) likewise: every later ``dagster`` command and ``dagster dev``
run there must see the same roots, since the tokenized step reads the files from them.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from hrm_assets.common import settings
from hrm_assets.common.layout import LayoutError
from hrm_assets.common.storage import is_url
from hrm_assets.local_env import set_env_default


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hrm_assets.adoption",
        description="Record the cleaned roots of $HRM_ADOPT_CLEANED (and an adopted "
        "tokenizer.json) in DAGSTER_HOME's instance, with a tokenized partition per file.",
    )
    parser.add_argument(
        "--cleaned",
        metavar="ROOTS",
        help="cleaned roots to adopt, separated by ':' (data:data_clustered); kept in ./.env "
        f"as {settings.ADOPT_CLEANED_ENV}",
    )
    parser.add_argument(
        "--tokenized",
        metavar="ROOT",
        help="a tokenized root written by data_io's tokenizer binary, adopted as it is (hashed "
        f"once, never re-tokenized or modified); kept in ./.env as {settings.TOKENIZED_ROOT_ENV}",
    )
    parser.add_argument(
        "--tokenizer",
        metavar="FOLDER",
        help="the folder of the tokenizer.json to use (data_io's trained_tokenizers/bpe); kept "
        f"in ./.env as {settings.TOKENIZER_ROOT_ENV}",
    )
    args = parser.parse_args(argv)
    for variable, given in (
        (settings.ADOPT_CLEANED_ENV, args.cleaned),
        (settings.TOKENIZED_ROOT_ENV, args.tokenized),
        (settings.TOKENIZER_ROOT_ENV, args.tokenizer),
    ):
        if given:
            keep_in_env_file(variable, given)
    # Dagster and the definitions read the environment when loaded: imported once it is set.
    import dagster as dg

    from hrm_assets.adoption.tokenized import has_foreign_folders
    from hrm_assets.common.data_root import DataRoot
    from hrm_assets.defs.cleaned.adopted import plan_adoption
    from hrm_assets.defs.common.resources import DataPaths
    from hrm_assets.defs.tokenized.partitions import (
        TOKENIZED_PARTITIONS,
        remove_owned_output_at,
    )

    data_paths = DataPaths.from_environment()
    tokenized_root = DataRoot(data_paths.tokenized_location)
    # A tokenized root set in the environment is where our step writes (adopted corpora are
    # tokenized there); it is adopted when --tokenized names it, or when it is on disk and
    # holds folders another tool wrote (data_io's, kept in .env by an earlier --tokenized).
    tokenized = bool(args.tokenized) or (
        bool(os.environ.get(settings.TOKENIZED_ROOT_ENV))
        and tokenized_root.remote is None
        and has_foreign_folders(tokenized_root.local)
    )
    try:
        adopted_roots = data_paths.adopted_cleaned_roots  # hf:// addresses resolved here
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not adopted_roots and not tokenized:
        print(
            f"error: {settings.ADOPT_CLEANED_ENV} is not set: name the cleaned roots to adopt "
            "(folders separated by ':'), in the shell or in .env, or --cleaned",
            file=sys.stderr,
        )
        return 2
    refused: list[str] = []
    with dg.DagsterInstance.get() as instance:
        if data_paths.adopted_cleaned_roots:
            try:
                plan = plan_adoption(instance, data_paths)
            except (LayoutError, OSError) as error:  # OSError: a bucket refused or missing
                print(f"error: {error}", file=sys.stderr)
                return 1
            for name, (added, removed) in plan.partitions.items():
                partitions_name = TOKENIZED_PARTITIONS[name].name
                if added:
                    instance.add_dynamic_partitions(partitions_name, added)
                for key in removed:
                    instance.delete_dynamic_partition(partitions_name, key)
                    remove_owned_output_at(data_paths.tokenized_location, key)
            for event in plan.events:
                instance.report_runless_asset_event(event)
            roots = ", ".join(str(root) for root in data_paths.adopted_cleaned_roots)
            print(f"adopted {roots}: {plan.summary()}")
            for warning in plan.warnings():
                print(f"warning: {warning}", file=sys.stderr)
        if tokenized:
            from hrm_assets.defs.tokenized.adopted import adopt_tokenized

            if tokenized_root.remote is not None:
                print("error: a tokenized root in object storage is not adopted", file=sys.stderr)
                return 2
            adoption = adopt_tokenized(instance, data_paths)
            for event in adoption.events:
                instance.report_runless_asset_event(event)
            refused = adoption.refused
            print(
                f"adopted tokenized root {data_paths.tokenized_root}: "
                f"{len(adoption.events)} folder(s) recorded as they are, {adoption.current} "
                f"already current, {len(refused)} not adopted"
            )
    for line in refused:
        print(f"error: {line}", file=sys.stderr)
    print("next: hrm-materialize-tokenized tokenizes the registered files (or automation does)")
    return 1 if refused else 0


def keep_in_env_file(variable: str, given: str) -> None:
    """Use ``given`` (paths separated by ':') for ``variable`` now and in ./.env from now on."""
    value = os.pathsep.join(
        part if is_url(part) else str(Path(part).absolute())
        for part in settings.adopted_root_entries(given)
    )
    os.environ[variable] = value
    path = set_env_default(Path.cwd(), variable, value)
    print(f"{variable}={value} (kept in {path})")
