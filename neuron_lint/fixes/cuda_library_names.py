"""Module-level names a module binds to a CUDA-only library's code (flash-attn, apex, xFormers...)
in ways its imports alone do not show: their calls are CUDA code, and a device guard in front of
one (``if rms_norm is not None and x.is_cuda:``) is the right question there."""

from __future__ import annotations

import ast
from collections.abc import Callable

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def cuda_library_names(ctx, cuda_library: Callable[[str], bool]) -> dict[str, str]:
    """Each such name, with how it is bound (for a note); ``cuda_library(module)``: is the dotted
    ``module`` a CUDA-only library's? Kept per module."""
    found = ctx.__dict__.get("_nrn_cuda_library_names")
    if found is None:
        found = {}
        for stmt in ctx.tree.body:
            if isinstance(stmt, ast.Try):
                found.update(_defined_in_try(stmt, cuda_library))
            elif isinstance(stmt, _FUNCTIONS):
                found.update(_set_as_globals(stmt, cuda_library))
        ctx.__dict__["_nrn_cuda_library_names"] = found
    return found


def _from_library(stmt, cuda_library) -> bool:
    return (isinstance(stmt, ast.Import) and any(cuda_library(a.name) for a in stmt.names)
            or isinstance(stmt, ast.ImportFrom) and not stmt.level and bool(stmt.module) and cuda_library(stmt.module))


def _defined_in_try(stmt: ast.Try, cuda_library) -> dict[str, str]:
    """Names defined in a module-level ``try`` that imports a CUDA-only library: fairseq's
    ``try: from apex.normalization import FusedLayerNorm as _FusedLayerNorm`` then ``class
    FusedLayerNorm(_FusedLayerNorm)`` in the same ``try`` (apex's fused kernels)."""
    if not any(_from_library(s, cuda_library) for s in stmt.body):
        return {}
    how = "defined with a CUDA-only library (the `try` that imports it)"
    found = {}
    for s in stmt.body:
        if isinstance(s, (ast.ClassDef, *_FUNCTIONS)):
            found[s.name] = how
        elif isinstance(s, ast.Assign):
            found.update((t.id, how) for t in s.targets if isinstance(t, ast.Name))
    return found


def _set_as_globals(func, cuda_library) -> dict[str, str]:
    """Globals a function sets to what it imports from a CUDA-only library: Qwen's
    ``_import_flash_attn()`` (``global rms_norm`` ... ``from flash_attn.ops.rms_norm import rms_norm
    as __rms_norm``; ``rms_norm = __rms_norm``), which the model calls once its config asks for
    flash-attn (mPLUG-Owl, read set 108)."""
    declared = {name for n in ast.walk(func) if isinstance(n, ast.Global) for name in n.names}
    if not declared:
        return {}
    imported: dict[str, str] = {}
    for n in ast.walk(func):
        if isinstance(n, (ast.Import, ast.ImportFrom)) and _from_library(n, cuda_library):
            origin = n.module if isinstance(n, ast.ImportFrom) else None
            for alias in n.names:
                imported[alias.asname or alias.name.partition(".")[0]] = origin or alias.name
    found = {}
    for n in ast.walk(func):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) and n.value.id in imported:
            for t in n.targets:
                if isinstance(t, ast.Name) and t.id in declared:
                    found[t.id] = (f"(which `{func.name}` sets to code of the CUDA-only "
                                   f"`{imported[n.value.id]}`)")
    for name in declared & imported.keys():
        found[name] = f"(which `{func.name}` imports from the CUDA-only `{imported[name]}`)"
    return found
