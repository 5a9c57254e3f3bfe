"""NRN204: a CUDA tensor type named by its string (``"torch.cuda.FloatTensor"``).

The string form of ``torch.cuda.FloatTensor`` does what the name does, out of sight of a name
lookup: ``torch.set_default_tensor_type("torch.cuda.FloatTensor")`` makes every new tensor a CUDA
tensor (it raises where torch has no CUDA, as on Trainium), ``x.type("torch.cuda.HalfTensor")``
moves a tensor to CUDA, and ``x.type() == "torch.cuda.HalfTensor"`` asks "half precision, on CUDA",
which is never true for a tensor on another device. Strings elsewhere (messages, tables of names)
are not reported.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Iterable

from ..catalog.registry import matcher

if TYPE_CHECKING:
    from ..engine.semantic import SemanticModel

_CUDA_TYPE = re.compile(r"torch\.cuda\.\w+Tensor")
#: calls that take a tensor type by name
_TAKES_TYPE = frozenset({"set_default_tensor_type", "type"})


def _cuda_type_string(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(_CUDA_TYPE.fullmatch(node.value))


def _type_call(node: ast.AST) -> bool:
    """``x.type()``: a tensor's type name."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "type"
            and not node.args and not node.keywords)


@matcher(ast.Call)
def cuda_tensor_type_argument(model: SemanticModel, node: ast.Call) -> Iterable[tuple[ast.AST, str]]:
    """``torch.set_default_tensor_type("torch.cuda.FloatTensor")``, ``x.type("torch.cuda.HalfTensor")``."""
    func = node.func
    # `x.type(...)` is the tensor method; a bare `type(...)` is the builtin
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name not in _TAKES_TYPE or (name == "type" and not isinstance(func, ast.Attribute)):
        return
    for arg in (*node.args, *(k.value for k in node.keywords if k.arg in ("t", "dtype"))):
        if _cuda_type_string(arg):
            yield arg, arg.value


@matcher(ast.Compare)
def cuda_tensor_type_compared(model: SemanticModel, node: ast.Compare) -> Iterable[tuple[ast.AST, str]]:
    """``x.type() == "torch.cuda.HalfTensor"`` (either side, ``!=`` too)."""
    sides = [node.left, *node.comparators]
    if len(sides) != 2 or not isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
        return
    for this, other in (sides, sides[::-1]):
        if _cuda_type_string(this) and _type_call(other):
            yield this, this.value
