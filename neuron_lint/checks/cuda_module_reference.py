"""NRN212: every other ``torch.cuda`` reference (one no specific rule names)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterable

from ..catalog.registry import matcher

if TYPE_CHECKING:
    from ..engine.semantic import SemanticModel


@matcher(ast.Attribute)
def torch_cuda_reference(model: SemanticModel, node: ast.Attribute) -> Iterable[tuple[ast.AST, str]]:
    """A reference to ``torch.cuda`` or one of its members that no specific rule names:
    ``torch.cuda.reset_max_memory_allocated()``, ``return torch.cuda``, ``getattr(torch, t, torch.cuda)``."""
    if model.is_inert(node) or not isinstance(node.ctx, ast.Load):
        return
    link: ast.AST = node
    while isinstance(link, ast.Attribute):
        if link.attr == "cuda":
            break
        link = link.value
    else:
        if not isinstance(link, ast.Name) or not (model.binding(link.id) or "").startswith("torch.cuda"):
            return
    qual = model.qualname(node)
    if qual is None or not (qual == "torch.cuda" or qual.startswith("torch.cuda.")):
        return
    if not model.named_by_other_rule(qual):
        yield node, qual
