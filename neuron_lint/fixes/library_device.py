"""Where a library module's site may not ask for the device through the helper a fix adds.

A library module gets ``_current_device()``, which asks ``torch.accelerator.is_available()`` when
it is called. That is wrong in two places:

- a module that imports torch only in its functions (an optional dependency: deepface's
  detectors, set 60): the helper needs ``import torch`` at the top;
- a function that starts worker processes by forking after the site (rlpyt's ``SyncRl``, set 62:
  the backend chosen before ``mp.Process(...).start()``): asking for the device starts the CUDA
  driver in the parent, and CUDA can then not start in the forked workers ("Cannot re-initialize
  CUDA in forked subprocess"), where the original asked nothing.
"""

from __future__ import annotations

import ast

from .function_imports import FunctionImports, torch_only_in_functions
from .module_kind import FORKERS, forks_workers


def library_device_note(ctx, node: ast.AST) -> str:
    """Why the site at ``node`` of a library module may not call the device helper, or ``""``."""
    only = ctx.__dict__.get("_nrn_torch_in_functions")
    if only is None:
        only = ctx.__dict__["_nrn_torch_in_functions"] = torch_only_in_functions(ctx.tree, FunctionImports(ctx).names)
    if only:
        return ("the module imports torch only in its functions (an optional dependency), and the device "
                "helper a fix adds would need `import torch` at its top; choose the device in the function")
    fork = _fork_after(ctx, node) if forks_workers(ctx) else None
    if fork is not None:
        return (f"the function forks worker processes after it (line {fork.lineno}); asking for the device here "
                "would start the CUDA driver first, and CUDA could then not start in the workers. Choose the "
                "device in the workers")
    return ""


def _fork_after(ctx, node: ast.AST) -> ast.Call | None:
    """A call that forks (``multiprocessing.Process(...)``, ``os.fork()``) in the function holding
    ``node``, below it, or None."""
    fn = ctx.enclosing_function(node)
    if fn is None:
        return None
    return next((n for n in ctx.walk(fn) if isinstance(n, ast.Call) and n.lineno > node.lineno
                 and ctx.qualname(n.func) in FORKERS), None)
