"""The Definitions of hrm-data: the ``defs`` of every domain under ``defs/``, merged, with the
one resource and the executor."""

import importlib
import os
import pkgutil
import sys

import dagster as dg

import hrm_assets.defs
from hrm_assets.common import settings
from hrm_assets.defs.common.executor import executor_from_environment
from hrm_assets.defs.common.resources import DataPaths


def domain_definitions() -> list[dg.Definitions]:
    """The ``defs`` of each package under ``hrm_assets/defs/`` (one per domain), by name.

    Raises ``TypeError`` for a domain package without a ``defs`` Definitions object.
    """
    found = []
    for info in pkgutil.iter_modules(hrm_assets.defs.__path__, prefix="hrm_assets.defs."):
        if not info.ispkg:
            continue
        domain = importlib.import_module(info.name)
        if not isinstance(getattr(domain, "defs", None), dg.Definitions):
            raise TypeError(f"{info.name} defines no `defs = dg.Definitions(...)`")
        found.append(domain.defs)
    return found


def build_definitions(data_paths: DataPaths | None = None) -> dg.Definitions:
    """The whole graph; ``data_paths`` defaults to the environment (``HRM_DATA_ROOT``, ...).

    Raises ``ValueError`` (one line) when a root variable names a file.
    """
    if data_paths is None and (problem := settings.root_setting_problem()):
        raise ValueError(problem)
    if data_paths is None and "DAGSTER_HOME" not in os.environ:
        # Dagster's commands then record into an instance that vanishes when they end.
        print(
            "hrm-data: warning: DAGSTER_HOME is not set, so a dagster command run here records "
            "into a temporary instance discarded when it ends; run it in the repository (its "
            ".env sets DAGSTER_HOME) or export DAGSTER_HOME",
            file=sys.stderr,
        )
    return dg.Definitions.merge(
        *domain_definitions(),
        dg.Definitions(
            resources={"data_paths": data_paths or DataPaths.from_environment()},
            executor=executor_from_environment(),
        ),
    )


defs = build_definitions()
