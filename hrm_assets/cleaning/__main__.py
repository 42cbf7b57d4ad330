"""``python -m hrm_assets.cleaning SOURCE... --out DIR``: clean sources without Dagster."""

import sys

from hrm_assets.common.settings import root_setting_problem

PROG = "python -m hrm_assets.cleaning"
DECLARATIONS_MODULE = "hrm_assets.cleaning.sources.declared.declarations"


def _refused(problem: str) -> int:
    print(f"{PROG}: error: {problem}", file=sys.stderr)
    return 2


def run() -> int:
    """The command, after what would stop it before any source is read: a root variable naming
    a file, and a bad ``sources.yaml`` (loaded with the sources registry, when it is first
    imported), each one line instead of a traceback."""
    if problem := root_setting_problem():
        return _refused(problem)
    try:
        from hrm_assets.cleaning.cli import main
    except ValueError as error:
        declarations = sys.modules.get(DECLARATIONS_MODULE)
        if declarations is None or not isinstance(error, declarations.DeclaredSourceError):
            raise
        return _refused(str(error))
    return main()


if __name__ == "__main__":
    sys.exit(run())
