"""Code versions made of source files: a module and every project module it imports.

An output's code version must change whenever the code that decides its bytes changes. Lists
of "the modules that matter" go stale the day a helper moves into a new module, so the set is
found from the code itself: the import statements of a root module, followed through every
module of the package they name (at any depth, inside functions too), read with ``ast`` and
never imported (loading the Dagster definitions, which need the sampled asset's version, must
not load numpy), plus every module of a package that finds its modules by listing its folder
(``pkgutil.iter_modules``, the source registry). Over-inclusion costs a rebuild;
under-inclusion keeps stale outputs, so every import counts, and a package's ``__init__``
counts with each of its modules (it runs first).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from hrm_assets.common.hashing import value_sha256


def package_folder() -> Path:
    """The folder of the installed ``hrm_assets`` package."""
    return Path(__file__).resolve().parent.parent


def module_file(package_dir: Path, module: str) -> Path | None:
    """The source file of ``module`` (a dotted name under the package), or None when it is not
    a Python source of the package (a compiled module, a name inside a module)."""
    parts = module.split(".")[1:]
    base = package_dir.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imported_names(source: str, module: str, is_package: bool, package: str) -> set[str]:
    """Dotted names of the package's modules that ``source`` imports (and parent packages)."""
    names: set[str] = set()
    here = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(ast.parse(source, filename=module)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = here[: len(here) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names.add(base)
            # `from pkg import name`: name may be a submodule; module_file tells.
            names.update(f"{base}.{alias.name}" for alias in node.names)
    found: set[str] = set()
    for name in names:
        if name != package and not name.startswith(package + "."):
            continue
        parts = name.split(".")
        found.update(".".join(parts[:depth]) for depth in range(2, len(parts) + 1))
    return found


# A package that lists its own folder (the source registry) imports every module in it.
_DISCOVERS_MODULES = "pkgutil.iter_modules("


def _package_modules(folder: Path, package_name: str) -> set[str]:
    """Dotted names of the modules and subpackages directly in ``folder``."""
    return {
        f"{package_name}.{entry.stem if entry.suffix == '.py' else entry.name}"
        for entry in folder.iterdir()
        if (entry.suffix == ".py" and entry.stem != "__init__")
        or (entry.is_dir() and (entry / "__init__.py").is_file())
    }


def module_closure(
    root_module: str, package_dir: Path | None = None, exclude: Iterable[str] = ()
) -> dict[str, Path]:
    """``{dotted name: source file}`` of ``root_module`` and every module of its package that
    it imports, directly or through others, leaving out the subtrees named in ``exclude``.

    Raises ``FileNotFoundError`` when ``root_module`` has no source file in the package.
    """
    package = root_module.split(".")[0]
    package_dir = Path(package_dir) if package_dir is not None else package_folder()
    excluded = tuple(exclude)

    def is_excluded(name: str) -> bool:
        return any(name == prefix or name.startswith(prefix + ".") for prefix in excluded)

    if module_file(package_dir, root_module) is None:
        raise FileNotFoundError(f"{root_module}: no source file under {package_dir}")
    closure: dict[str, Path] = {}
    pending = [root_module]
    while pending:
        name = pending.pop()
        if name in closure or is_excluded(name):
            continue
        path = module_file(package_dir, name)
        if path is None:
            continue
        closure[name] = path
        source = path.read_text(encoding="utf-8")
        imported = _imported_names(source, name, path.name == "__init__.py", package)
        if path.name == "__init__.py" and _DISCOVERS_MODULES in source:
            imported |= _package_modules(path.parent, name)
        parents = {".".join(name.split(".")[:depth]) for depth in range(2, name.count(".") + 1)}
        pending.extend(sorted((imported | parents) - closure.keys()))
    return dict(sorted(closure.items()))


def closure_sha256(
    root_module: str,
    package_dir: Path | None = None,
    exclude: Iterable[str] = (),
    extra: Iterable[str] = (),
) -> str:
    """SHA-256 over the closure's module names and source texts, plus ``extra`` strings (the
    compiled core's digests of its own sources)."""
    closure = module_closure(root_module, package_dir, exclude)
    return value_sha256(
        {
            "modules": [[name, path.read_text(encoding="utf-8")] for name, path in closure.items()],
            "extra": list(extra),
        }
    )


@cache
def installed_closure_sha256(root_module: str, exclude: tuple[str, ...], extra: tuple[str, ...]):
    """:func:`closure_sha256` of the installed package, read once per process."""
    return closure_sha256(root_module, None, exclude, extra)
