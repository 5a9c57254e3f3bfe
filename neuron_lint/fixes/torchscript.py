"""Code that TorchScript compiles: no fix inside it.

``@torch.jit.script`` compiles a function (or a class's methods) when the module is imported, and
TorchScript knows only a subset of Python and of torch: ``torch.accelerator`` calls, the
``_current_device()`` helper and a module-level ``DEVICE`` are not in it. A rewrite there makes the
import itself fail, on every machine (kaolin's ``math.quat``, set 58: ``import kaolin`` broke).
Scripted code is the author's to port by hand: the device a scripted function should use is
passed in by its callers.
"""

from __future__ import annotations

import ast

#: Decorators and calls that compile their function or class with TorchScript.
SCRIPTING = frozenset({"torch.jit.script", "torch.jit.script_method", "torch.jit.interface",
                       "torch.jit._script.script"})


#: Base classes whose subclasses TorchScript compiles (``@torch.jit.script_method`` methods).
_SCRIPT_MODULES = frozenset({"torch.jit.ScriptModule", "torch.jit._script.ScriptModule"})


def scripted(ctx, node: ast.AST) -> str:
    """The name of the function or class holding ``node`` (or ``node`` itself) that TorchScript
    compiles, decorated, passed to ``torch.jit.script(name)`` in the module or derived from
    ``torch.jit.ScriptModule``, or ``""``."""
    if "jit" not in ctx.text:
        return ""
    for p in (node, *ctx.ancestors(node)):
        if not isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if any(ctx.qualname(d.func if isinstance(d, ast.Call) else d) in SCRIPTING for d in p.decorator_list):
            return p.name
        if isinstance(p, ast.ClassDef) and any(ctx.qualname(b) in _SCRIPT_MODULES for b in p.bases):
            return p.name  # its methods are compiled, and its `__init__` sets what they read (pytorch-kaldi's liGRU)
        if p.name in _scripted_names(ctx) and ctx.parent(p) is ctx.tree:
            return p.name
    return ""


def _scripted_names(ctx) -> frozenset[str]:
    """Module-level functions and classes the module hands to ``torch.jit.script(...)`` by name."""
    found = ctx.__dict__.get("_nrn_scripted")
    if found is None:
        found = frozenset(n.args[0].id for n in ctx.walk(ctx.tree)
                          if isinstance(n, ast.Call) and n.args and isinstance(n.args[0], ast.Name)
                          and ctx.qualname(n.func) in SCRIPTING)
        ctx.__dict__["_nrn_scripted"] = found
    return found
