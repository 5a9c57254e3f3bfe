"""Calls that are CUDA-only code whatever the device of their arguments: compiled extensions, kernel
launches, custom operators, raw pointers. A device guard (``x.is_cuda``, ``torch.cuda.is_available()``,
a skip) that decides such a call is the right question there and stays."""

from __future__ import annotations

import ast
import fnmatch

#: Name parts of callees that are CUDA-only code (compiled extensions, kernels).
_CUDA_ONLY_PARTS = ("_C", "_ext", "*_ext", "_ext_*", "*cuda*", "*CUDA*", "*kernel*", "*Kernel*", "cupy", "triton",
                    "*helion*", "*nccl*", "*cudnn*", "*cublas*", "numba",
                    # CUDA-only libraries (NRN6xx): a guard that opens them is the right question there
                    "*bitsandbytes*", "bnb", "*xformers*", "xops", "flash_attn*", "apex")
_EXTENSION_LOADERS = ("torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline")


def dotted(node) -> list[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return list(reversed(parts))
    return []


def _extension_names(ctx) -> set[str]:
    """Names bound to ``torch.utils.cpp_extension.load(...)`` results (a compiled extension)."""
    found = ctx.__dict__.get("_nrn208_ext")
    if found is None:
        found = set()
        # the loaders live in torch.utils.cpp_extension: a module that never names it binds none
        for n in ast.walk(ctx.tree) if "cpp_extension" in ctx.text else ():
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and ctx.qualname(n.value.func) in _EXTENSION_LOADERS:
                found.update(t.id for t in n.targets if isinstance(t, ast.Name))
        ctx.__dict__["_nrn208_ext"] = found
    return found


def cuda_only_call(ctx, call: ast.Call) -> str:
    """What makes ``call`` CUDA-only code (for the note), or ``""``."""
    func = call.func
    if isinstance(func, ast.Subscript):
        return "a kernel launch `kernel[grid](...)`"
    if isinstance(func, ast.Attribute) and func.attr == "data_ptr":
        return "`.data_ptr()` (a raw device pointer for a kernel)"
    written = dotted(func)
    if not written:
        return ""
    qual = (ctx.qualname(func) or "").split(".")
    name = ".".join(written)
    if written[0] in _extension_names(ctx):
        return f"`{name}`, a compiled extension"
    if qual[:2] == ["torch", "ops"] and len(qual) > 3 and qual[2] not in ("aten", "prims", "quantized"):
        return f"`{name}`, a custom operator"
    for parts in (written, qual):
        if not parts or parts[0] == "torch" and (len(parts) < 2 or parts[1] in ("cuda", "_C", "backends")):
            continue  # torch's own CUDA API is another rule's finding (see `region`)
        for part in parts[:-1] if len(parts) > 1 else parts:
            if any(fnmatch.fnmatchcase(part, p) for p in _CUDA_ONLY_PARTS):
                return f"`{name}`, CUDA-only code (a compiled extension or kernel)"
        if len(parts) > 1 and any(fnmatch.fnmatchcase(parts[-1], p) for p in ("*cuda*", "*CUDA*", "*kernel*")):
            return f"`{name}`, CUDA-only code (a compiled extension or kernel)"
    return ""
