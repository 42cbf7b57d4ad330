"""The ``.env`` file that points Dagster's CLI at this checkout's instance and demo corpus.

Dagster's own commands (``dagster dev``, ``dagster asset materialize``, ``dagster job
execute``, ...) read ``.env`` from the current directory before they open the instance
(``dagster._cli.utils._inject_local_env_file``, python-dotenv with interpolation). ``make``
writes one at the repository root with ``python -m hrm_assets.local_env``, so those commands
pasted into a shell there use ``dagster_home/`` and ``data/demo_raw`` with no variable set.

Each value is ``${NAME:-default}``: a variable already set in the environment wins. Dagster
applies a ``.env`` over the environment, so a plain ``NAME=value`` would silently override a
``DAGSTER_HOME`` chosen on purpose (the cluster's, a test's scratch instance). The defaults are
absolute paths because Dagster refuses a relative ``DAGSTER_HOME``.

The project's instance commands (``*_main`` below) import Dagster and the definitions only once
their instance check passed, so that a refused command answers at once.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from hrm_assets.common import settings
from hrm_assets.common.atomic import atomic_write_text

ENV_FILE = ".env"
DAGSTER_HOME_ENV = "DAGSTER_HOME"


def project_defaults(project_root: Path) -> dict[str, Path]:
    """The variables ``.env`` gives a default: the instance and the demo's raw corpus."""
    return {
        DAGSTER_HOME_ENV: project_root / "dagster_home",
        settings.RAW_ROOT_ENV: project_root / "data" / "demo_raw",
    }


def env_file_text(project_root: Path) -> str:
    lines = [
        "# Written by `make` (python -m hrm_assets.local_env). Dagster's CLI reads this file from",
        "# the folder it runs in: `dagster dev`, `dagster asset materialize` and `dagster job",
        "# execute` here use the project's instance (dagster_home/) and the demo corpus that",
        "# `make demo` writes. A variable set in your shell wins; to load the raw sources from the",
        "# Hugging Face Hub instead, delete the HRM_RAW_ROOT line.",
    ]
    for name, path in project_defaults(project_root).items():
        lines.append(f"{name}=${{{name}:-{path}}}")
    return "\n".join(lines) + "\n"


def write_env_file(project_root: Path, replace: bool = False) -> Path | None:
    """Write ``project_root/.env`` unless one is there (a user's edits are kept); returns its
    path when written."""
    path = Path(project_root) / ENV_FILE
    if path.exists() and not replace:
        return None
    path.write_text(env_file_text(Path(project_root).absolute()), encoding="utf-8")
    return path


def set_env_default(folder: Path, name: str, value: str) -> Path:
    """Make ``folder/.env`` give ``name`` the default ``value`` (``NAME=${NAME:-value}``, so a
    variable set in the shell still wins): its line replaced, or appended, the file created
    if missing; other lines kept. Returns the file's path."""
    path = Path(folder) / ENV_FILE
    line = f"{name}=${{{name}:-{value}}}"
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    kept = [old for old in lines if not old.split("=", 1)[0].strip() == name]
    atomic_write_text(path, "\n".join([*kept, line]) + "\n")
    return path


def read_env_file(folder: Path) -> dict[str, str]:
    """The variables ``folder/.env`` sets, resolved as Dagster's CLI resolves them (python-dotenv,
    ``${NAME:-default}`` against the current environment); empty without a file."""
    from dotenv import dotenv_values

    path = Path(folder) / ENV_FILE
    if not path.is_file():
        return {}
    return {name: value for name, value in dotenv_values(path).items() if value is not None}


def apply_env_file(folder: Path | None = None) -> None:
    """Set what ``folder/.env`` (default: the current directory) sets, as Dagster's CLI does, for
    our own commands that open the Dagster instance."""
    os.environ.update(read_env_file(Path.cwd() if folder is None else folder))


def instance_home_problem() -> str | None:
    """One line when ``$DAGSTER_HOME`` cannot hold the instance our commands record into (unset,
    or not a folder), else None."""
    value = os.environ.get("DAGSTER_HOME")
    if not value:
        return (
            "DAGSTER_HOME is not set: run this in the repository (its .env sets it) or export "
            "DAGSTER_HOME=<the folder of your Dagster instance>"
        )
    if not Path(value).is_dir():
        return (
            f"DAGSTER_HOME={value} is not a folder: create it (mkdir -p) or export the folder "
            "of your Dagster instance"
        )
    return None


def instance_command_problem() -> str | None:
    """What stops a command that opens the Dagster instance before it starts, as one line."""
    apply_env_file()
    return settings.root_setting_problem() or instance_home_problem()


def _refused(prog: str, problem: str) -> int:
    print(f"{prog}: error: {problem}", file=sys.stderr)
    return 2


def partition_range_main(argv: Sequence[str] | None = None) -> int:
    """``hrm-partition-range``: the same ``.env`` as the ``dagster`` command it feeds."""
    if problem := instance_command_problem():
        return _refused("hrm-partition-range", problem)
    from hrm_assets.defs.tokenized.partition_range import main

    return main(argv)


def materialize_tokenized_main(argv: Sequence[str] | None = None) -> int:
    """``hrm-materialize-tokenized``: the same ``.env`` as the ``dagster`` command."""
    if problem := instance_command_problem():
        return _refused("hrm-materialize-tokenized", problem)
    from hrm_assets.defs.tokenized.materialize_all import main

    return main(argv)


def adopt_main(argv: Sequence[str] | None = None) -> int:
    """``python -m hrm_assets.adoption``: the same ``.env`` as the ``dagster`` commands."""
    if problem := instance_command_problem():
        return _refused("python -m hrm_assets.adoption", problem)
    from hrm_assets.defs.cleaned.adopt_command import main

    return main(argv)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hrm_assets.local_env",
        description="Write the .env that Dagster's CLI reads in this checkout (kept if present).",
    )
    parser.add_argument("--replace", action="store_true", help="rewrite an existing .env")
    args = parser.parse_args(argv)
    written = write_env_file(settings.PROJECT_ROOT, replace=args.replace)
    if written is not None:
        print(f"wrote {written}: dagster commands run here use dagster_home/ and data/demo_raw")
    return 0


if __name__ == "__main__":
    sys.exit(main())
