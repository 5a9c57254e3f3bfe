"""NRN602: compiled CUDA extensions loaded by name."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Iterable

from ..catalog.registry import matcher
from ..engine.project_facts import project_builds_cuda

if TYPE_CHECKING:
    from ..engine.semantic import SemanticModel


#: Module names of compiled CUDA extensions (``fused_adam_cuda``, ``ms_deform_attn_cuda``, ``amp_C``); a
#: function such as ``retry_if_cuda_oom`` or ``has_cuda_capability`` does not end like this.
_EXTENSION_NAME = re.compile(r"\w+_cuda|\w+_cuda_ext|cuda_\w+_ext|\w+_cuda_kernels?|amp_C|syncbn")

#: Extension modules that a package rule (NRN612) already names.
_PACKAGE_EXTENSIONS = frozenset({"selective_scan_cuda", "flash_attn_2_cuda", "causal_conv1d_cuda"})

#: A name that starts with a verb is a function or a flag (``can_use_cuda_kernels``, ``is_cuda``), not a module.
_VERB = re.compile(r"(can|has|is|use|uses|get|set|check|retry|enable|disable|should|supports?|run|try)_")


def _extension_component(module: str) -> str | None:
    if module.split(".", 1)[0] == "torch":
        return None
    for part in module.split("."):
        if _EXTENSION_NAME.fullmatch(part) and part not in _PACKAGE_EXTENSIONS and not _VERB.match(part):
            return part
    return None


@matcher(ast.Import, ast.ImportFrom, ast.Call)
def cuda_extension_module(model: SemanticModel, node: ast.AST) -> Iterable[tuple[ast.AST, str]]:
    """A compiled CUDA extension loaded by name: ``import fused_adam_cuda``,
    ``importlib.import_module("fused_adam_cuda")``, ``from detectron2 import _C`` in a project whose
    ``setup.py`` builds a ``CUDAExtension``. Guarded (optional) imports are not reported."""
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if not node.args or name not in ("import_module", "__import__"):
            return
        if name == "import_module" and model.qualname(func) != "importlib.import_module":
            return
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            part = _extension_component(arg.value)
            if part is not None:
                yield arg, arg.value
        return
    if model.guarded:
        return
    if isinstance(node, ast.Import):
        for alias in node.names:
            if _extension_component(alias.name):
                yield alias, alias.name
            elif alias.name.endswith("._C") and not alias.name.startswith("torch") and project_builds_cuda(model.path):
                yield alias, alias.name
        return
    module = node.module or ""
    if module and _extension_component(module):
        yield node, module
        return
    if module.split(".", 1)[0] == "torch":
        return
    for alias in node.names:
        if _extension_component(alias.name):
            yield alias, f"{module}.{alias.name}" if module else alias.name
        elif alias.name == "_C" and "." not in module and project_builds_cuda(model.path):
            # `from detectron2 import _C`, `from . import _C`: the package's compiled extension (not
            # `from .defaults import _C`, a configuration object named like one)
            if (node.level and not module) or (module and not node.level):
                yield alias, f"{'.' * node.level}{module}._C"
