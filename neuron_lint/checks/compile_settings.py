"""NRN408: compile settings chosen at run time or through a wrapper."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterable

from ..catalog.registry import matcher
from ..engine.values import argument

if TYPE_CHECKING:
    from ..engine.semantic import SemanticModel


_COMPILE_CALLS = ("torch.compile", "torch._dynamo.optimize")

_CUDA_MODES = ("reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


@matcher(ast.Call)
def compile_setting_indirect(model: SemanticModel, node: ast.Call) -> Iterable[tuple[ast.AST, str]]:
    """``torch.compile(model, mode=args.mode, backend=args.backend)`` (a mode or backend decided at run
    time), and a CUDA mode through a wrapper: ``model.compile(mode="max-autotune")``,
    ``compile_regions(model, mode="reduce-overhead")``."""
    func = node.func
    if not isinstance(func, (ast.Name, ast.Attribute)):
        return
    qual = model.qualname(func)
    if qual in _COMPILE_CALLS:
        chosen = [kw for kw in node.keywords
                  if kw.arg in ("mode", "backend") and not isinstance(kw.value, (ast.Constant, ast.JoinedStr))]
        if chosen:  # one finding per call, naming each setting decided elsewhere
            yield chosen[0].value, ", ".join(f"{kw.arg}={ast.unparse(kw.value)}" for kw in chosen)
        return
    name = func.attr if isinstance(func, ast.Attribute) else func.id
    if name == "compile_regions" or (name == "compile" and qual is None and isinstance(func, ast.Attribute)):
        mode = argument(node, None, "mode")
        if isinstance(mode, ast.Constant) and mode.value in _CUDA_MODES:
            yield mode, f"mode={mode.value!r}"
