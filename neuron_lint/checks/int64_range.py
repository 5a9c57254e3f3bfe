"""NRN304: an integer literal outside the int32 range placed into a device tensor (int64 may run as int32)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterable

from ..catalog.registry import matcher

if TYPE_CHECKING:
    from ..engine.semantic import SemanticModel


_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_DTYPES = {"torch.int64", "torch.long"}
# Factories whose value arguments become tensor elements: qualified name -> (positions, keywords).
# `None` for positions means every positional argument (torch.arange's start/end/step).
_VALUE_ARGS: dict[str, tuple[tuple[int, ...] | None, tuple[str, ...]]] = {
    "torch.tensor": ((0,), ("data",)),
    "torch.as_tensor": ((0,), ("data",)),
    "torch.scalar_tensor": ((0,), ("s",)),
    "torch.LongTensor": ((0,), ()),
    "torch.full": ((1,), ("fill_value",)),
    "torch.full_like": ((1,), ("fill_value",)),
    "torch.arange": (None, ("start", "end", "step")),
    "torch.randint": ((0, 1), ("low", "high")),
    "torch.randint_like": ((1, 2), ("low", "high")),
}


_FLOAT_DTYPE_WORDS = ("float", "half", "double", "bfloat16", "complex", "cfloat", "cdouble")

_SAFE_BINOPS = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.BitAnd: lambda a, b: a & b, ast.BitOr: lambda a, b: a | b, ast.BitXor: lambda a, b: a ^ b,
    ast.FloorDiv: lambda a, b: a // b if b else None, ast.Mod: lambda a, b: a % b if b else None,
}


def _int_value(model: SemanticModel, node: ast.AST) -> int | None:
    """The value of a constant integer expression (``2**40``, ``1 << 62``, ``-7``), else None."""
    if isinstance(node, ast.Constant):
        v = node.value
        return v if isinstance(v, int) and not isinstance(v, bool) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Invert)):
        v = _int_value(model, node.operand)
        if v is None:
            return None
        return -v if isinstance(node.op, ast.USub) else (~v if isinstance(node.op, ast.Invert) else v)
    if isinstance(node, ast.BinOp):
        a, b = _int_value(model, node.left), _int_value(model, node.right)
        if a is None or b is None:
            return None
        if isinstance(node.op, ast.Pow):
            return a**b if 0 <= b <= 128 and abs(a) <= 2**16 else None
        if isinstance(node.op, ast.LShift):
            return a << b if 0 <= b <= 128 else None
        if isinstance(node.op, ast.RShift):
            return a >> b if b >= 0 else None
        op = _SAFE_BINOPS.get(type(node.op))
        return op(a, b) if op else None
    # torch.iinfo(torch.int64).max / .min
    if isinstance(node, ast.Attribute) and node.attr in ("max", "min") and isinstance(node.value, ast.Call):
        call = node.value
        if model.qualname(call.func) == "torch.iinfo" and len(call.args) == 1:
            if model.qualname(call.args[0]) in _INT64_DTYPES:
                return 2**63 - 1 if node.attr == "max" else -(2**63)
    return None


def _large_ints(model: SemanticModel, node: ast.AST, depth: int = 0) -> Iterable[ast.AST]:
    if isinstance(node, (ast.List, ast.Tuple)) and depth < 4:
        for elt in node.elts:
            yield from _large_ints(model, elt, depth + 1)
        return
    v = _int_value(model, node)
    if v is not None and not _INT32_MIN <= v <= _INT32_MAX:
        yield node


@matcher(ast.Call)
def int64_beyond_int32(model: SemanticModel, node: ast.Call) -> Iterable[tuple[ast.AST, str]]:
    """An integer literal outside the int32 range placed into a torch tensor (int64 may run as int32)."""
    qual = model.qualname(node.func) if isinstance(node.func, (ast.Name, ast.Attribute)) else None
    spec = _VALUE_ARGS.get(qual or "")
    if spec is None:
        return
    device = None
    for kw in node.keywords:
        if kw.arg == "dtype":
            dtype = model.qualname(kw.value) or ""
            if any(word in dtype.rsplit(".", 1)[-1] for word in _FLOAT_DTYPE_WORDS):
                return  # a floating-point tensor: the value is not an int64 element
        elif kw.arg in ("device", None):  # `device=...`, or **kwargs that may carry one
            device = kw.value
    if device is None or isinstance(device, ast.Constant) and device.value == "cpu":
        return  # a host tensor (a seed drawn with `.item()`, a hash table): int64 is exact there
    positions, keywords = spec
    values: list[ast.AST] = []
    for i, arg in enumerate(node.args):
        if isinstance(arg, ast.Starred):
            break
        if positions is None or i in positions:
            values.append(arg)
    values.extend(kw.value for kw in node.keywords if kw.arg in keywords)
    # randint's positional low/high may be the size tuple: only look at top-level integers there
    shallow = qual in ("torch.randint", "torch.randint_like")
    for value in values:
        if shallow and isinstance(value, (ast.List, ast.Tuple)):
            continue
        for big in _large_ints(model, value):
            yield big, ast.unparse(big)
            return  # one finding per call: the first value that does not fit
