"""The project's own functions a device guard's code calls, looked into three calls deep.

A guard that decides ``self.accelerate()`` decides what ``accelerate`` runs: svox2's grid calls its
compiled extension there (``_C.accel_dist_prop``), so ``if self.links.is_cuda:`` in front of the call
is the right question and stays. Only callees the module itself defines are followed: a method of
the enclosing class (``self.name(...)``), a module-level function (``name(...)``) and an autograd
``Function``'s ``forward`` (``Name.apply(...)``), and the module's own functions those call, to
:data:`_DEPTH` levels.
"""

from __future__ import annotations

import ast

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _callee(ctx, call: ast.Call):
    """The definition ``call`` runs, when the module defines it, else None."""
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        owner = func.value.id
        if owner == "self":
            cls = next((p for p in ctx.ancestors(call) if isinstance(p, ast.ClassDef)), None)
            if cls is None:
                return None
            return _defined(cls.body, func.attr) or _submodule_forward(ctx, cls, func.attr)
        if func.attr == "apply":  # `_RenderFunction.apply(...)`: an autograd Function's forward
            cls = next((s for s in ctx.tree.body if isinstance(s, ast.ClassDef) and s.name == owner), None)
            return _defined(cls.body, "forward") if cls is not None else None
        return None
    if isinstance(func, ast.Name):
        return _defined(ctx.tree.body, func.id)
    return None


def _submodule_forward(ctx, cls: ast.ClassDef, attr: str):
    """The ``forward`` of the module's own class that ``cls`` keeps an instance of in ``self.<attr>``
    (Qwen's ``self.core_attention_flash = FlashSelfAttention(...)``, called as
    ``self.core_attention_flash(q, k, v)``), when every such assignment makes one of that class."""
    made = _made_in(ctx, cls).get(attr, ())
    if len(made) != 1:
        return None
    made_by = next(iter(made))
    owner = next((s for s in ctx.tree.body if isinstance(s, ast.ClassDef) and s.name == made_by), None)
    return _defined(owner.body, "forward") if owner is not None else None


def _made_in(ctx, cls: ast.ClassDef) -> dict[str, set[str]]:
    """For each ``self.<attr> = Name(...)`` in ``cls``: the names called to make ``attr``. Kept per class."""
    memo = ctx.__dict__.setdefault("_nrn_made_in", {})
    made = memo.get(id(cls))
    if made is None:
        made = memo[id(cls)] = {}
        for n in ctx.walk(cls):
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Name):
                for t in n.targets:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                        made.setdefault(t.attr, set()).add(n.value.func.id)
    return made


def _defined(body, name: str):
    return next((s for s in body if isinstance(s, _FUNCTIONS) and s.name == name), None)


def cuda_only_callee(ctx, call: ast.Call) -> str:
    """What makes the module's own function that ``call`` runs CUDA-only code (for a guard's note),
    or ``""``."""
    target = _callee(ctx, call)
    if target is None:
        return _inherited_cuda_method(ctx, call)
    if ctx.enclosing_function(call) is target:
        return ""
    found = _cuda_only_in(ctx, target, _DEPTH)
    return f"`{ctx.segment(call.func)}` (line {call.lineno}), whose code calls {found}" if found else ""


#: How many calls deep the module's own functions are followed: FastVideo's block-sparse attention
#: reaches flash-attn's kernel through two of its own helpers (read set 112).
_DEPTH = 3


def _cuda_only_in(ctx, target, depth: int) -> str:
    """What in ``target``'s code, or in the module's own functions it calls (``depth`` levels in all),
    is CUDA-only code, or ``""``. Kept per function and depth."""
    from .cuda_only import cuda_only_node

    cache = ctx.__dict__.setdefault("_nrn_callee_cuda_only", {})
    key = (id(target), depth)
    if key in cache:
        return cache[key]
    cache[key] = ""  # a function that calls itself, directly or not, adds nothing
    found = next((what for n in ctx.walk(target) if n is not target and (what := cuda_only_node(ctx, n))), "")
    if not found and depth > 1:
        for n in ctx.walk(target):
            inner = _callee(ctx, n) if isinstance(n, ast.Call) else None
            deeper = _cuda_only_in(ctx, inner, depth - 1) if inner is not None and inner is not target else ""
            if deeper:
                found = f"`{ctx.segment(n.func)}` (line {n.lineno}), whose code calls {deeper}"
                break
    cache[key] = found
    return found


#: Methods that OpenMMLab's logger hooks define and read CUDA's memory statistics with
#: (``torch.cuda.max_memory_allocated``): a subclass calling one under ``torch.cuda.is_available()``
#: (ViT-Adapter's ``CustomizedTextLoggerHook``, read set 94) asks CUDA, whatever its own test says.
_LIBRARY_CUDA_METHODS = {"_get_max_memory": ("mmcv", "mmengine")}


def _inherited_cuda_method(ctx, call: ast.Call) -> str:
    """``self.<method>(...)`` of :data:`_LIBRARY_CUDA_METHODS` in a class derived from one of the
    libraries that define it, as the note names it, or ``""``."""
    func = call.func
    libraries = _LIBRARY_CUDA_METHODS.get(getattr(func, "attr", ""))
    if not (libraries and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
        return ""
    cls = next((p for p in ctx.ancestors(call) if isinstance(p, ast.ClassDef)), None)
    library = next((top for b in (cls.bases if cls is not None else [])
                    if (top := (ctx.qualname(b) or "").split(".")[0]) in libraries), "")
    return (f"`{ctx.segment(func)}` (line {call.lineno}), which its {library} base class defines to read "
            "`torch.cuda`'s memory statistics" if library else "")
