"""NRN303: complex results turned real (``torch.view_as_real`` of a computation)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterable

from ..catalog.registry import matcher

if TYPE_CHECKING:
    from ..engine.semantic import SemanticModel


@matcher(ast.Call)
def view_as_real_of_computation(model: SemanticModel, node: ast.Call) -> Iterable[tuple[ast.AST, str]]:
    """``torch.view_as_real(xq_ * freqs_cis)``: complex arithmetic (or a complex-valued call) on this line.

    ``torch.view_as_real(x)`` of a plain name converts a tensor that may already be complex (input
    handling, ``if x.is_complex():``); the complex maths that made it is reported where it happens.
    """
    if not node.args or not isinstance(node.func, (ast.Name, ast.Attribute)):
        return
    if model.qualname(node.func) not in ("torch.view_as_real", "torch.Tensor.view_as_real"):
        return
    if isinstance(node.args[0], (ast.BinOp, ast.Call)):
        yield node.func, "torch.view_as_real"
