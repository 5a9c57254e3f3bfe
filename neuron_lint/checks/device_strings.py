"""NRN202: CUDA device strings in variables, parameters, run-time formats and lists of device choices.

The helpers :func:`cuda_literal` and :func:`device_named` are shared with NRN213 (:mod:`.cuda_string_indirect`)."""

from __future__ import annotations

import ast
import fnmatch
import re
from typing import TYPE_CHECKING, Callable, Iterable

from ..catalog.registry import matcher
from ..engine.parameters import parameter_defaults

if TYPE_CHECKING:
    from ..engine.semantic import SemanticModel


_DEVICE_NAMES = ("device", "device_*", "*_device", "DEVICE", "*_DEVICE", "DEVICE_*")


def cuda_literal(node: ast.AST) -> ast.AST | None:
    """``"cuda"``, ``"cuda:1"``, ``f"cuda:{i}"`` (or either arm of ``a if c else b``); not containers."""
    if isinstance(node, ast.IfExp):
        return cuda_literal(node.body) or cuda_literal(node.orelse)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        v = node.value
        return node if v == "cuda" or (v.startswith("cuda:") and v[5:].isdigit()) else None
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value == "cuda:":
            return node
    return None


def _any_of(patterns: tuple[str, ...]) -> Callable[[str], re.Match | None]:
    """One compiled test for a name matching any of the glob ``patterns`` (case-sensitive)."""
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns)).match


_device_named = _any_of(_DEVICE_NAMES)


def device_named(name: str) -> bool:
    """Is a variable or parameter of this name a device? (Asked of most assignments: one regex.)"""
    return _device_named(name) is not None


@matcher(ast.Assign, ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef)
def device_string_assignment(model: SemanticModel, node: ast.AST) -> Iterable[tuple[ast.AST, str]]:
    """A CUDA device string stored in a variable or parameter named like a device (not a tuple of names)."""
    pairs: list[tuple[str, ast.AST]] = []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        pairs += [(p.arg, d) for p, d in parameter_defaults(node.args)]
    else:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if node.value is not None:
            for t in targets:
                name = t.id if isinstance(t, ast.Name) else getattr(t, "attr", None)
                if name:
                    pairs.append((name, node.value))
    for name, value in pairs:
        if device_named(name):
            found = cuda_literal(value)
            if found is not None:
                text = found.value if isinstance(found, ast.Constant) else "cuda:{…}"
                yield found, text


#: The CUDA device strings ``.format(i)`` and ``% i`` build ("cuda:N"; hifi-gan's ``"cuda:{:d}"``).
CUDA_FORMATS = ("cuda:{}", "cuda:{0}", "cuda:{:d}", "cuda:{0:d}")
CUDA_PERCENTS = ("cuda:%d", "cuda:%s", "cuda:%i")


def _cuda_format_string(node: ast.AST) -> bool:
    """``"cuda:{}".format(i)``, ``"cuda:%d" % i`` or ``"cuda:" + str(i)``: a CUDA device string with a
    run-time index."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        base = node.func.value
        return isinstance(base, ast.Constant) and isinstance(base.value, str) and base.value in CUDA_FORMATS
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left = node.left
        return isinstance(left, ast.Constant) and isinstance(left.value, str) and left.value in CUDA_PERCENTS
    return cuda_concatenation(node)


def cuda_concatenation(node: ast.AST) -> bool:
    """``"cuda:" + str(i)`` (ogb's multi-GPU examples, dgl-ke's ``get_dev``)."""
    right = getattr(node, "right", None)
    return (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and isinstance(node.left, ast.Constant)
            and node.left.value == "cuda:" and isinstance(right, ast.Call) and isinstance(right.func, ast.Name)
            and right.func.id == "str" and len(right.args) == 1 and not right.keywords
            and not isinstance(right.args[0], ast.Starred))


def format_in(value: ast.AST | None) -> ast.AST | None:
    """``"cuda:{}".format(i)`` (or ``% i``, ``+ str(i)``) in ``value`` or either arm of its ``a if c else b``, or None."""
    if value is None:
        return None
    if isinstance(value, ast.IfExp):
        return format_in(value.body) or format_in(value.orelse)
    return value if _cuda_format_string(value) else None


@matcher(ast.Call, ast.Assign, ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef)
def device_string_format(model: SemanticModel, node: ast.AST) -> Iterable[tuple[ast.AST, str]]:
    """``"cuda:{}".format(rank)`` / ``"cuda:%d" % rank`` / ``"cuda:" + str(rank)`` where a device is
    expected: ``torch.device(...)``, ``device=...``, ``map_location=...``, ``.to(...)``, or a variable
    or parameter named like a device."""
    values: list[ast.AST] = []
    if isinstance(node, ast.Call):
        func = node.func
        first = node.args[0] if node.args and not isinstance(node.args[0], ast.Starred) else None
        if isinstance(func, (ast.Name, ast.Attribute)) and model.qualname(func) == "torch.device":
            values.append(first)
            values += [kw.value for kw in node.keywords if kw.arg == "type"]
        elif isinstance(func, ast.Attribute) and func.attr == "to":
            values.append(first)
        values += [kw.value for kw in node.keywords if kw.arg in ("device", "map_location")]
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        values += [d for p, d in parameter_defaults(node.args) if device_named(p.arg)]
    else:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for t in targets:
            name = t.id if isinstance(t, ast.Name) else getattr(t, "attr", None)
            if name and device_named(name):
                values.append(node.value)
    for value in values:
        found = format_in(value)
        if found is not None:
            yield found, "cuda:{…}"


_DEVICE_LIST_NAMES = ("devices", "*_devices", "DEVICES", "*_DEVICES", "device_list", "device_choices")
_device_list_named = _any_of(_DEVICE_LIST_NAMES)


def _device_list(node: ast.AST) -> list[ast.Constant]:
    """The CUDA elements of a literal list/tuple holding only device strings (``["cpu", "cuda"]``).

    A list naming other backends (``("xpu", "cuda", "npu", "mps")``) is a capability table, not a
    choice of devices: it is left alone.
    """
    if not isinstance(node, (ast.List, ast.Tuple)) or not 1 <= len(node.elts) <= 4:
        return []
    found = []
    for elt in node.elts:
        if not (isinstance(elt, ast.Constant) and isinstance(elt.value, str)):
            return []
        v = elt.value
        if v == "cuda" or (v.startswith("cuda:") and v[5:].isdigit()):
            found.append(elt)
        elif v != "cpu":
            return []
    return found


@matcher(ast.For, ast.AsyncFor, ast.Call, ast.Assign)
def device_string_list(model: SemanticModel, node: ast.AST) -> Iterable[tuple[ast.AST, str]]:
    """CUDA in a literal list of device choices: ``for device in ["cuda", "cpu"]``,
    ``@pytest.mark.parametrize("device", ["cpu", "cuda"])``, ``devices = ["cuda"]``."""
    values: ast.AST | None = None
    if isinstance(node, (ast.For, ast.AsyncFor)):
        if isinstance(node.target, ast.Name) and device_named(node.target.id):
            values = node.iter
    elif isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "parametrize" and len(node.args) >= 2:
            names = node.args[0]
            if isinstance(names, ast.Constant) and isinstance(names.value, str) and device_named(names.value.strip()):
                values = node.args[1]
    elif len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        if _device_list_named(node.targets[0].id) is not None:
            values = node.value
    for elt in _device_list(values) if values is not None else ():
        yield elt, elt.value
