"""A function that calls a compiled CUDA extension whatever the device: its CUDA code stays with it.

bevfusion's ``KNN.forward`` sets CUDA's current device to its input's (``if
torch.cuda.current_device() != center_xyz_device: torch.cuda.set_device(...)``), then calls
``knn_ext.knn_wrapper(...)``, a kernel built for CUDA only; ``BaseInstance3DBoxes.overlaps`` makes
``overlaps_bev = ....cuda()`` for ``iou3d_cuda.boxes_overlap_bev_gpu`` to fill (read set 96).
Rewritten, those lines change nothing on a GPU, and on Trainium they let a neuron tensor get past
them into the extension, which takes CUDA memory only: the function runs on CUDA or not at all, and
the port is the kernel's. So every CUDA finding of such a function stays, with a note.

Only strong evidence counts: a call of a module-level import named as a compiled or CUDA-only
extension (``knn_ext``, ``iou3d_cuda``: :func:`.cuda_only.imported_cuda_names`) with no Python source in
the project (rl_games' ``torch_ext`` module is Python), of a name bound by
``torch.utils.cpp_extension.load``, or a Triton or Numba launch (``kernel[grid](...)``), made at the
function's own level: not under an ``if``, ``try`` or conditional expression (a dispatch by device
decides it), nor in a nested function. Test code is left to its CUDA skips (:func:`.withheld.test_gate`
keeps them): torchtitan's Triton kernel tests make their inputs on the accelerator only where the
skip lets them run.
"""

from __future__ import annotations

import ast
import re

_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_CONDITIONAL_STMT = (ast.If, ast.Try, ast.Match) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())
#: Imports named as CUDA's that are libraries with host-side helpers too (``triton.cdiv``,
#: ``numba.njit``): their kernels count only when launched.
_NOT_EXTENSIONS = frozenset({"triton", "numba"})
#: Import names that say compiled CUDA code (``knn_ext``, ``iou3d_cuda``, ``_C``, ``silu_kernel``); a class
#: named ``Fused...`` or ``...Kernel`` (torchtitan's ``FusedGroupedExperts``, gpytorch's ``RBFKernel``) may
#: be Python.
_EXTENSION_NAME = re.compile(r"_C|_?ext|\w*_ext|_ext\w*|\w*cuda\w*|\w*CUDA\w*|[a-z0-9_]*kernel[a-z0-9_]*|cupy|\w*nvrtc\w*")
_CONDITIONAL_EXPR = (ast.IfExp, ast.BoolOp, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def kernel_function_note(ctx, node: ast.AST) -> str:
    """The note when ``node`` is in a function that always calls a compiled CUDA extension, or ``""``."""
    from .module_kind import is_test_path

    # (a lambda's code runs as its function's: `move = lambda t: t.cuda()` before the kernel call; a
    # default the fix rewrites is planned at its function)
    func = next((p for p in (node, *ctx.ancestors(node)) if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if func is None or is_test_path(getattr(ctx, "path", "")):
        return ""
    known = ctx.__dict__.setdefault("_nrn_kernel_function", {})
    found = known.get(id(func))
    if found is None:
        found = known[id(func)] = _unconditional_kernel_call(ctx, func) or ()
    if not found:
        return ""
    what, line = found
    return (f"not rewritten: the function always calls {what} (line {line}), which takes CUDA tensors only, so "
            "it runs on CUDA or not at all; rewritten, the devices and streams it sets up for that call would let "
            "Trainium's tensors through to it. Port the kernel (or give Trainium another path) first")


def extension_call(ctx, call: ast.Call) -> str:
    """What makes ``call`` a call into a compiled CUDA extension or a kernel launch (for the note), or ``""``."""
    from .cuda_only import cuda_only_part, dotted, extension_names, imported_cuda_names, launches_kernels

    func = call.func
    if isinstance(func, ast.Subscript):
        return "a kernel launch `kernel[grid](...)`" if launches_kernels(ctx, func) else ""
    written = dotted(func)
    if not written or written[0] in _NOT_EXTENSIONS or (ctx.qualname(func) or "").split(".")[0] == "torch":
        return ""  # (torch's own `from torch.backends.cuda import sdp_kernel` is another rule's finding)
    if written[0] in extension_names(ctx):
        package = ctx.__dict__.get("_nrn_cuda_package", {}).get(written[0])
        return (f"`{'.'.join(written)}` of `{package}`, a package the project builds for CUDA alone" if package
                else f"`{'.'.join(written)}`, a compiled extension")
    if _launches_with_cpm_kernels(ctx) and ((len(written) > 1 and "kernel" in written[0].lower()) or any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "data_ptr"
            for a in call.args for n in ast.walk(a))):
        # CodeGeeX's `kernels = Kernel(...)` over a fatbin, then `kernels.int4WeightCompression(grid, block, 0,
        # stream, [ctypes.c_void_p(x.data_ptr()), ...])`, which takes CUDA's stream and memory (read set 106)
        return f"`{'.'.join(written)}`, a CUDA kernel launched with cpm_kernels"
    # (a name not itself named so is an alias of one: `import pointnet2_cuda as pointnet2`)
    if (written[0] in imported_cuda_names(ctx) and (_compiled_name(written[0]) or not cuda_only_part(written[0]))
            and not _python_source(ctx, written[0])):
        return f"`{'.'.join(written)}`, imported code named as CUDA's or as a compiled extension"
    return ""


def _launches_with_cpm_kernels(ctx) -> bool:
    """Does the module import cpm_kernels, which loads compiled CUDA kernels and launches them? Kept per module."""
    from .module_kind import imported_modules

    if "_nrn_cpm_kernels" not in ctx.__dict__:
        ctx.__dict__["_nrn_cpm_kernels"] = "cpm_kernels" in ctx.text and any(
            module.split(".")[0] == "cpm_kernels" for module, level in imported_modules(ctx.tree.body) if not level)
    return ctx.__dict__["_nrn_cpm_kernels"]


#: Words that make a name about CUDA a helper of the program rather than compiled code (RFdiffusion's
#: ``to_cuda``, a ``use_cuda`` flag, ``cuda_device``).
_HELPER_WORDS = frozenset({"to", "move", "device", "devices", "available", "is", "has", "use", "set", "get",
                           "init", "sync", "synchronize", "empty", "cache", "memory", "seed", "graph", "cudagraph"})


def _compiled_name(name: str) -> bool:
    from .name_words import name_words

    return bool(_EXTENSION_NAME.fullmatch(name)) and not _HELPER_WORDS & set(name_words(name))


def _python_source(ctx, name: str) -> bool:
    """Is ``name`` bound by a top-level import to Python source of the project: a module file of its
    own (rl_games' ``from rl_games.algos_torch import torch_ext``, held-out set 92), or a name a plain
    module file defines (``from .cauchy import cauchy_mult as cauchy_cuda``)? A compiled extension has
    no source there (bevfusion's ``from . import knn_ext``)."""
    from .module_kind import import_candidates

    known = ctx.__dict__.setdefault("_nrn_python_source", {})
    if name not in known:
        known[name] = False
        for stmt in ctx.tree.body if ctx.path else ():
            for alias in getattr(stmt, "names", ()) if isinstance(stmt, (ast.Import, ast.ImportFrom)) else ():
                if (alias.asname or alias.name.split(".")[0]) != name:
                    continue
                if isinstance(stmt, ast.Import):
                    known[name] = bool(import_candidates(ctx.path, alias.name, 0))
                else:
                    module = f"{stmt.module}.{alias.name}" if stmt.module else alias.name
                    known[name] = bool(import_candidates(ctx.path, module, stmt.level)) or any(
                        not f.endswith("__init__.py") for f in import_candidates(ctx.path, stmt.module or "", stmt.level))
    return known[name]


def _unconditional_kernel_call(ctx, func) -> tuple[str, int] | None:
    if not _mentions_extension(ctx):
        return None
    pending = list(func.body)
    while pending:
        stmt = pending.pop(0)
        if isinstance(stmt, _CONDITIONAL_STMT + _NESTED):
            continue
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)):
            pending[:0] = stmt.body
            heads = [stmt.iter] if isinstance(stmt, (ast.For, ast.AsyncFor)) else (
                [item.context_expr for item in stmt.items] if isinstance(stmt, (ast.With, ast.AsyncWith)) else [])
        else:
            heads = [stmt]
        for head in heads:
            for call in _calls(head):
                what = extension_call(ctx, call)
                if what:
                    return what, call.lineno
    return None


def _calls(root: ast.AST):
    """The calls in ``root``, outside its conditional expressions and lambdas."""
    pending = [root]
    while pending:
        n = pending.pop()
        if isinstance(n, _CONDITIONAL_EXPR):
            continue
        if isinstance(n, ast.Call):
            yield n
        pending.extend(ast.iter_child_nodes(n))


def _mentions_extension(ctx) -> bool:
    """Can the module call an extension at all (it imports one, loads one, or launches kernels)?"""
    from .cuda_only import extension_names, imported_cuda_names

    found = ctx.__dict__.get("_nrn_mentions_extension")
    if found is None:
        found = ctx.__dict__["_nrn_mentions_extension"] = bool(
            imported_cuda_names(ctx) or extension_names(ctx) or "[grid]" in ctx.text or "kernel[" in ctx.text)
    return found
