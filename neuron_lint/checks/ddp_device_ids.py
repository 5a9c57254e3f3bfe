"""NRN206: ``DistributedDataParallel(..., device_ids=[...])`` (CUDA device indices)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterable

from ..catalog.registry import matcher

if TYPE_CHECKING:
    from ..engine.semantic import SemanticModel


_DDP = ("torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel")


@matcher(ast.Call)
def ddp_device_ids(model: SemanticModel, node: ast.Call) -> Iterable[tuple[ast.AST, str]]:
    """``DistributedDataParallel(model, device_ids=[...])``: CUDA device indices (``None`` is fine)."""
    if model.qualname(node.func) not in _DDP:
        return
    for kw in node.keywords:
        # A literal list of indices is CUDA-specific; a variable may already be None off CUDA.
        if kw.arg == "device_ids" and isinstance(kw.value, (ast.List, ast.Tuple)) and kw.value.elts:
            yield kw.value, kw.arg
