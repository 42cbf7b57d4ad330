"""The import graph of hrm_assets, read with ``ast`` (nothing is imported): no stage imports a
later stage, at module level or inside a function, no modules import each other in a circle at
module level, and only ``dagster_internals`` imports Dagster's private modules
(docs/ARCHITECTURE.md, "Layers")."""

from __future__ import annotations

import ast
from pathlib import Path

import hrm_assets

PACKAGE = Path(hrm_assets.__file__).parent

# Each stage may import the stages before it and the bottom layer (``common``, ``contracts``,
# the compiled core, the package's own ``__init__``: its version), never one after it. Packages
# not listed (adoption, defs, dagster_internals, the output checks) and the top-level modules sit
# above every stage.
LAYERS = (
    ("", "_core", "common", "contracts"),
    ("cleaning",),
    ("tokenizer",),
    # The contamination passes run inside tokenization's read (docs/CONTAMINATION.md).
    ("contamination",),
    ("tokenization",),
    ("sampling",),
    ("export",),
)
TOP = len(LAYERS)


def _modules() -> dict[str, Path]:
    modules = {"hrm_assets._core": PACKAGE / "_core.pyi"}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path
    return modules


MODULES = _modules()


def _layer(module: str) -> int:
    top_name = module.split(".")[1] if "." in module else ""
    for index, names in enumerate(LAYERS):
        if top_name in names:
            return index
    return TOP


def _known(name: str) -> str:
    """The project module ``name`` loads: itself, or the package it names a member of."""
    while name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(module: str, path: Path) -> list[tuple[str, bool, int]]:
    """(imported project module, whether the import runs when ``module`` is loaded, line)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []

    def visit(node: ast.AST, at_load: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, False)
            elif isinstance(child, ast.If) and _type_checking_only(child):
                for statement in child.body:
                    visit(ast.Module(body=[statement], type_ignores=[]), False)
                for statement in child.orelse:
                    visit(ast.Module(body=[statement], type_ignores=[]), at_load)
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.startswith("hrm_assets"):
                        found.append((_known(alias.name), at_load, child.lineno))
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join([*anchor, *([child.module] if child.module else [])])
                if not base.startswith("hrm_assets"):
                    continue
                for alias in child.names:
                    member = f"{base}.{alias.name}"
                    target = member if member in MODULES else _known(base)
                    found.append((target, at_load, child.lineno))
            else:
                visit(child, at_load)

    visit(ast.parse(path.read_text(encoding="utf-8")), True)
    return [(target, at_load, line) for target, at_load, line in found if target != module]


GRAPH = {module: _imports(module, path) for module, path in MODULES.items()}


def test_no_stage_imports_a_later_stage():
    later = [
        f"{MODULES[module].relative_to(PACKAGE.parent)}:{line} imports {target}"
        for module, imports in GRAPH.items()
        for target, _, line in imports
        if _layer(module) < TOP and _layer(target) > _layer(module)
    ]
    assert later == []


def test_no_import_circle_at_module_level():
    edges = {
        module: sorted({target for target, at_load, _ in imports if at_load})
        for module, imports in GRAPH.items()
    }
    circles, state = [], {}  # state: 1 on the current path, 2 done

    def walk(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in edges.get(module, []):
            if state.get(target) == 1:
                circles.append(" -> ".join([*path[path.index(target) :], target]))
            elif target not in state:
                walk(target, [*path, target])
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            walk(module, [module])
    assert circles == []


def test_only_dagster_internals_imports_dagsters_private_modules():
    private = []
    for module, path in MODULES.items():
        if module.startswith("hrm_assets.dagster_internals") or path.suffix != ".py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            private += [
                f"{path.relative_to(PACKAGE.parent)}:{node.lineno} imports {name}"
                for name in names
                if name.startswith("dagster._")
            ]
    assert private == []


def test_the_graph_reads_the_imports_it_must():
    # The reader itself: a known module-level edge, a known in-function one, the core.
    rows = {target for target, at_load, _ in GRAPH["hrm_assets.cleaning.rows"] if at_load}
    assert "hrm_assets.contracts.framing" in rows
    assert any(not at_load for imports in GRAPH.values() for _, at_load, _ in imports)
    assert any(t == "hrm_assets._core" for _, imports in GRAPH.items() for t, _, _ in imports)
    assert _layer("hrm_assets.contracts.spans") == _layer("hrm_assets") == 0
    assert _layer("hrm_assets.cleaning.rows") == 1
    assert _layer("hrm_assets.defs.common.executor") == _layer("hrm_assets.checks.cli") == TOP
