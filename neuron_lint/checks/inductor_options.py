"""NRN405: Inductor-only compile options (``torch.compile(options=...)`` keys, ``torch._inductor.config`` writes)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterable

from ..catalog.registry import matcher

if TYPE_CHECKING:
    from ..engine.semantic import SemanticModel


#: `torch.compile(options=...)` keys the Neuron backend is known to read.
NEURON_COMPILE_OPTIONS = frozenset({"fallback_execution", "model_name"})


@matcher(ast.Call)
def compile_inductor_options(model: SemanticModel, node: ast.Call) -> Iterable[tuple[ast.AST, str]]:
    """Keys of a literal ``options={...}`` dict given to ``torch.compile`` that Neuron does not read."""
    if not isinstance(node.func, (ast.Name, ast.Attribute)) or model.qualname(node.func) != "torch.compile":
        return
    for kw in node.keywords:
        if kw.arg == "options" and isinstance(kw.value, ast.Dict):
            for key in kw.value.keys:
                if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value not in NEURON_COMPILE_OPTIONS:
                    yield key, key.value


@matcher(ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Call)
def inductor_config_write(model: SemanticModel, node: ast.AST) -> Iterable[tuple[ast.AST, str]]:
    """A write to ``torch._inductor.config`` (assignment or ``config.patch(...)``); reading it is silent."""
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "patch":
            qual = model.qualname(func.value)
            if qual == "torch._inductor.config":
                yield func, qual + ".patch"
        return
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for target in targets:
        if isinstance(target, ast.Attribute):
            qual = model.qualname(target)
            if qual is not None and qual.startswith("torch._inductor.config."):
                yield target, qual
