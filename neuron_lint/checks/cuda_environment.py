"""NRN207: names of CUDA stack environment variables held in strings."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Iterable

from ..catalog.registry import matcher

if TYPE_CHECKING:
    from ..engine.semantic import SemanticModel


_CUDA_ENV_NAME = re.compile(
    r"(?:CUDA|CUBLAS|CUBLASLT|CUDNN|NCCL|TORCH_NCCL|TORCH_CUDNN)_[A-Z0-9_]+|TORCH_CUDA_ARCH_LIST"
    r"|PYTORCH_CUDA_ALLOC_CONF|PYTORCH_NO_CUDA_MEMORY_CACHING|NVIDIA_VISIBLE_DEVICES|NVIDIA_TF32_OVERRIDE"
)


def _env_name(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(_CUDA_ENV_NAME.fullmatch(node.value))


@matcher(ast.Assign, ast.AnnAssign, ast.Call, ast.Dict)
def cuda_env_name(model: SemanticModel, node: ast.AST) -> Iterable[tuple[ast.AST, str]]:
    """The name of a CUDA/cuBLAS/cuDNN/NCCL variable held in a constant (``ENV = "TORCH_NCCL_..."``),
    handed to an environment helper (``monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")``) or used as
    a key of an environment dict (``env={"NCCL_DEBUG": "INFO"}``). Reads of ``os.environ`` are the
    ``env`` matches' own."""
    if isinstance(node, ast.Dict):
        for key in node.keys:
            if _env_name(key):
                yield key, key.value  # type: ignore[union-attr]
        return
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if "env" not in name.lower() or not node.args:
            return
        qual = model.qualname(func) if isinstance(func, (ast.Name, ast.Attribute)) else None
        if qual is not None and qual.startswith("os."):
            return  # os.environ.get / os.getenv: reported by the env match
        if _env_name(node.args[0]):
            yield node.args[0], node.args[0].value  # type: ignore[attr-defined]
        return
    if _env_name(node.value):  # type: ignore[attr-defined]
        yield node.value, node.value.value  # type: ignore[attr-defined]
