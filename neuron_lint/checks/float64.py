"""NRN301 (float64): ``dtype=float`` on a torch call, and the "inert value" heuristics.

A dtype or API named where its value is only inspected creates nothing on the device: ``x.dtype ==
torch.float64`` (a comparison), ``{torch.float64: 8}`` (a lookup table), ``dtype=torch.float64,
device="cpu"`` (a host tensor), ``isinstance(model, DataParallel)`` (a class inspected),
``x.cpu().to(torch.float64)`` (a host copy). The walker marks such expressions with the functions
here (:attr:`neuron_lint.engine.semantic.SemanticModel.inert`); a name match found on one is not reported.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Callable, Iterable

from ..catalog.registry import matcher

if TYPE_CHECKING:
    from ..engine.semantic import SemanticModel

#: `x.cpu().double()`: these methods make a float64 (complex) copy, on the host after `.cpu()`.
DTYPE_METHODS = frozenset({"double", "cfloat", "cdouble", "chalf"})


@matcher(ast.Call)
def tensor_factory_python_float(model: SemanticModel, node: ast.Call) -> Iterable[tuple[ast.AST, str]]:
    """``dtype=float`` on a torch call means float64 (Python's float is double precision)."""
    for kw in node.keywords:
        if kw.arg == "dtype" and isinstance(kw.value, ast.Name) and kw.value.id == "float":
            if model.binding("float") is None:  # not rebound by the module
                qual = model.qualname(node.func) or ""
                if qual.startswith("torch."):
                    yield kw.value, "dtype=float"


def is_cpu_copy(expr: ast.AST) -> bool:
    """`x.cpu()` (or `x.detach().cpu()`): a host tensor."""
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "cpu" and not expr.args


def _on_cpu(call: ast.Call) -> bool:
    """`device="cpu"` or `device=torch.device("cpu")`: the call makes a host tensor."""
    for kw in call.keywords:
        if kw.arg == "device":
            value = kw.value
            if isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords:
                func = value.func  # torch.device("cpu"), however torch was imported
                if not (isinstance(func, ast.Attribute) and func.attr == "device" or isinstance(func, ast.Name) and func.id == "device"):
                    return False
                value = value.args[0]
            return isinstance(value, ast.Constant) and value.value == "cpu"
    return False


def mark_compare(inert: set[int], node: ast.Compare) -> None:
    """`x.dtype == torch.float64` inspects a value."""
    for operand in (node.left, *node.comparators):
        inert.add(id(operand))
        if isinstance(operand, (ast.Tuple, ast.List, ast.Set)):
            inert.update(id(e) for e in operand.elts)


def mark_dict(inert: set[int], node: ast.Dict, qualname: Callable[[ast.AST], str | None]) -> None:
    """Dict keys are looked up, and a table of torch's own names converts or chooses."""
    inert.update(id(k) for k in node.keys if k is not None)
    values = node.values
    if len(values) >= 2 and all(isinstance(v, ast.Attribute) for v in values):
        # `{np.float64: torch.float64, np.complex64: torch.complex64}`, `{"fp32": torch.float32,
        # "fp64": torch.float64}`: a conversion or choice table of torch's own names (dtypes).
        # Tables of deeper names (`{"cuda": ProfilerActivity.CUDA}`) are still reported.
        bases = {qualname(v.value) for v in values}  # type: ignore[attr-defined]
        if bases == {"torch"} and len({v.attr for v in values}) == len(values):  # type: ignore[attr-defined]
            inert.update(id(v) for v in values)


def mark_ifexp(inert: set[int], node: ast.IfExp) -> None:
    # `torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32` echoes
    # a setting made elsewhere (and reported there)
    if isinstance(node.test, ast.Compare):
        operands = {ast.dump(o) for o in (node.test.left, *node.test.comparators)}
        for arm in (node.body, node.orelse):
            if ast.dump(arm) in operands:
                inert.add(id(arm))


def mark_call_args(inert: set[int], node: ast.Call, func: ast.AST) -> None:
    """Arguments of a call that only inspect a value or make a host copy."""
    if node.keywords and _on_cpu(node):
        inert.update(id(kw.value) for kw in node.keywords if kw.arg == "dtype")
    if isinstance(func, ast.Name) and func.id in ("isinstance", "issubclass") and len(node.args) == 2:
        classes = node.args[1]  # `isinstance(model, DataParallel)` inspects a type; it uses nothing
        inert.add(id(classes))
        if isinstance(classes, ast.Tuple):
            inert.update(id(e) for e in classes.elts)
    if isinstance(func, ast.Attribute) and func.attr == "to" and is_cpu_copy(func.value):
        inert.update(id(a) for a in node.args)  # `x.cpu().to(torch.float64)`
        inert.update(id(kw.value) for kw in node.keywords if kw.arg == "dtype")
    if isinstance(func, ast.Attribute) and func.attr == "cpu" and isinstance(func.value, ast.Call):
        inner = func.value  # `w.to(torch.float64).cpu()`: the float64 copy is for the host
        if isinstance(inner.func, ast.Attribute) and inner.func.attr == "to":
            inert.update(id(a) for a in inner.args)
            inert.update(id(kw.value) for kw in inner.keywords if kw.arg == "dtype")
