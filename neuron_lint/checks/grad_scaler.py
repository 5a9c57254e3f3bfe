"""NRN502: a gradient scaler (a CPU fallback on Neuron)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterable

from ..catalog.registry import matcher

if TYPE_CHECKING:
    from ..engine.semantic import SemanticModel


_GRAD_SCALERS = frozenset({
    "torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler", "torch.GradScaler", "torch.cpu.amp.GradScaler",
    "torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler",
})


@matcher(ast.Call)
def grad_scaler_construction(model: SemanticModel, node: ast.Call) -> Iterable[tuple[ast.AST, str]]:
    """A gradient scaler for Neuron or for whatever device the code runs on (not a literal other device)."""
    if not isinstance(node.func, (ast.Name, ast.Attribute)):
        return
    qual = model.qualname(node.func)
    if qual not in _GRAD_SCALERS:
        return
    device = node.args[0] if node.args and not isinstance(node.args[0], ast.Starred) else None
    for kw in node.keywords:
        if kw.arg == "device":
            device = kw.value
    if isinstance(device, ast.Constant) and isinstance(device.value, str) and not device.value.startswith("neuron"):
        return  # "cuda": NRN205 reports it; "hpu", "xpu", "mps": a branch for another device
    yield node.func, qual


#: Scalers whose ``device`` defaults to ``"cuda"`` (``GradScaler(device="cuda", init_scale=..., ...)``).
_CUDA_BY_DEFAULT = frozenset({"torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler", "torch.GradScaler"})


@matcher(ast.Call)
def grad_scaler_default_device(model: SemanticModel, node: ast.Call) -> Iterable[tuple[ast.AST, str]]:
    """NRN205: ``torch.amp.GradScaler()`` given no device scales for CUDA (its default), and turns
    itself off where CUDA is missing: on Trainium too (lightweight-gan's ``GradScaler(enabled=amp)``)."""
    if node.args or any(kw.arg in ("device", None) for kw in node.keywords):
        return
    if isinstance(node.func, (ast.Name, ast.Attribute)) and model.qualname(node.func) in _CUDA_BY_DEFAULT:
        yield node.func, "GradScaler()"
