"""NRN208: ``x.is_cuda`` read on a tensor."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterable

from ..catalog.registry import matcher

if TYPE_CHECKING:
    from ..engine.semantic import SemanticModel


@matcher(ast.Attribute)
def tensor_is_cuda(model: SemanticModel, node: ast.Attribute) -> Iterable[tuple[ast.AST, str]]:
    """``x.is_cuda`` read on a value: not ``self.is_cuda``/``cls.is_cuda`` (a class's own flag), not a write."""
    if node.attr != "is_cuda" or not isinstance(node.ctx, ast.Load):
        return
    base = node.value
    if isinstance(base, ast.Name) and (base.id in ("self", "cls") or model.binding(base.id) is not None):
        return  # an object's own attribute, or a module (`torch.is_cuda` is not a tensor property)
    yield node, ".is_cuda"
