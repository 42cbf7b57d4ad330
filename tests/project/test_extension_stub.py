"""``hrm_assets/_core.pyi`` states the compiled ``hrm_assets._core`` exactly: the same public
names, each constant of its stated type, and every function's and method's parameters (names,
order, kinds and the defaults PyO3 exposes in ``__text_signature__``) as the stub declares them.

Top-level plain assignments in the stub (``PhiloxState = tuple[...]``) are type aliases for
readers of the stub; they are not in the module, and the test checks that too.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from hrm_assets import _core

# The stub sits beside the compiled module, in a checkout and in the wheel alike.
STUB = Path(_core.__file__).with_name("_core.pyi")

TREE = ast.parse(STUB.read_text(encoding="utf-8"))


def public(names) -> set[str]:
    return {name for name in names if not name.startswith("_")}


def stub_constants() -> dict[str, ast.expr]:
    return {
        node.target.id: node.annotation
        for node in TREE.body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
    }


def stub_aliases() -> set[str]:
    return {
        target.id
        for node in TREE.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def stub_functions(body) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in body if isinstance(node, ast.FunctionDef)}


def stub_classes() -> dict[str, ast.ClassDef]:
    return {node.name: node for node in TREE.body if isinstance(node, ast.ClassDef)}


def is_property(function: ast.FunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "property" for d in function.decorator_list)


def test_the_stub_names_what_the_module_has_and_nothing_else():
    stubbed = set(stub_constants()) | set(stub_functions(TREE.body)) | set(stub_classes())
    assert public(stubbed) == public(dir(_core))
    assert not stub_aliases() & set(dir(_core)), "a stub-only alias shadows a module name"


def matches(value: object, annotation: ast.expr) -> bool:
    """Whether ``value`` is of the stub's type: builtin names and ``list[...]``."""
    if isinstance(annotation, ast.Name):
        expected = {"str": str, "int": int, "bool": bool, "float": float}[annotation.id]
        return type(value) is expected
    if isinstance(annotation, ast.Subscript) and ast.unparse(annotation.value) == "list":
        return isinstance(value, list) and all(matches(item, annotation.slice) for item in value)
    raise AssertionError(f"annotation {ast.unparse(annotation)} is not checked here")


@pytest.mark.parametrize("name", sorted(stub_constants()))
def test_each_constant_is_of_its_stated_type(name):
    annotation = stub_constants()[name]
    assert matches(getattr(_core, name), annotation), (name, ast.unparse(annotation))


def stub_parameters(
    function: ast.FunctionDef, method: bool
) -> list[tuple[str, inspect._ParameterKind, object]]:
    """(name, kind, default) of each parameter, less a method's ``self``; the default is
    ``inspect.Parameter.empty``, ``...`` or the literal value."""
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [inspect.Parameter.empty] * (len(positional) - len(args.defaults)) + [
        ast.literal_eval(default) for default in args.defaults
    ]
    kinds = [inspect.Parameter.POSITIONAL_ONLY] * len(args.posonlyargs) + [
        inspect.Parameter.POSITIONAL_OR_KEYWORD
    ] * len(args.args)
    out = list(zip([arg.arg for arg in positional], kinds, defaults, strict=True))
    if method:
        assert out[0][0] == "self", f"{function.name}: the first parameter of a method is self"
        out = out[1:]
    if args.vararg:
        out.append((args.vararg.arg, inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.empty))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        value = inspect.Parameter.empty if default is None else ast.literal_eval(default)
        out.append((arg.arg, inspect.Parameter.KEYWORD_ONLY, value))
    if args.kwarg:
        out.append((args.kwarg.arg, inspect.Parameter.VAR_KEYWORD, inspect.Parameter.empty))
    return out


def assert_same_signature(
    compiled: list[inspect.Parameter], stub: ast.FunctionDef, where: str, method: bool = False
):
    """The compiled parameters (a method's without ``self``) are the stub's."""
    compiled_parameters = compiled
    stubbed = stub_parameters(stub, method)
    assert [(p.name, p.kind) for p in compiled_parameters] == [
        (name, kind) for name, kind, _ in stubbed
    ], where
    for parameter, (name, _, default) in zip(compiled_parameters, stubbed, strict=True):
        if parameter.default is inspect.Parameter.empty or default is inspect.Parameter.empty:
            assert parameter.default is default, f"{where}: default of {name}"
        elif parameter.default is not ... and default is not ...:
            # PyO3 writes a default it cannot render as `...`; any other it shows as written.
            assert parameter.default == default, f"{where}: default of {name}"


def text_signature(obj: object) -> list[inspect.Parameter]:
    """The parameters PyO3 declares in ``__text_signature__``."""
    assert getattr(obj, "__text_signature__", None), f"{obj!r} has no __text_signature__"
    return list(inspect.signature(obj).parameters.values())


@pytest.mark.parametrize("name", sorted(stub_functions(TREE.body)))
def test_each_function_has_the_stub_signature(name):
    assert_same_signature(
        text_signature(getattr(_core, name)), stub_functions(TREE.body)[name], name
    )


CLASS_MEMBERS = [
    (class_name, member)
    for class_name, node in sorted(stub_classes().items())
    for member in sorted(stub_functions(node.body))
]


@pytest.mark.parametrize("class_name", sorted(stub_classes()))
def test_each_class_has_the_stub_members(class_name):
    node = stub_classes()[class_name]
    compiled = getattr(_core, class_name)
    assert public(stub_functions(node.body)) == public(vars(compiled)), class_name
    assert compiled.__module__ == "hrm_assets._core"


@pytest.mark.parametrize(("class_name", "member"), CLASS_MEMBERS)
def test_each_method_and_property_has_the_stub_signature(class_name, member):
    stub = stub_functions(stub_classes()[class_name].body)[member]
    compiled = getattr(_core, class_name)
    where = f"{class_name}.{member}"
    if member == "__init__":
        # The constructor's parameters are the class's (PyO3's `#[new]`), without `self`.
        assert_same_signature(text_signature(compiled), stub, where, method=True)
        return
    attribute = inspect.getattr_static(compiled, member)
    if is_property(stub):
        assert inspect.isgetsetdescriptor(attribute), f"{where} is not a property"
        return
    assert inspect.ismethoddescriptor(attribute), f"{where} is not a method"
    receiver, *parameters = text_signature(attribute)
    assert (receiver.name, receiver.kind) == ("self", inspect.Parameter.POSITIONAL_ONLY), where
    assert_same_signature(parameters, stub, where, method=True)
