"""Code a forked worker's parent runs: the ``__init__`` of a ``multiprocessing.Process`` subclass.

SlowFast's ``AsyncVis``/``AsyncDemo`` workers (UniFormer, read set 99) store ``self.device =
torch.device("cuda:{}".format(gpu_id))`` in ``__init__``, which runs in the parent before ``start()``
forks; only the child touches the GPU. A device-agnostic rewrite asks ``torch.accelerator.is_available()``
there, and on a CUDA machine that initialises the driver in the parent: with the ``fork`` start
method each child then fails at its first CUDA call. So nothing there is rewritten; the child's
``run()`` is where the device can be chosen.
"""

from __future__ import annotations

import ast

#: ``multiprocessing.Process`` as the base resolves (``torch.multiprocessing`` re-exports it; a
#: project's own class named ``Process`` is not one).
_PROCESS_BASES = ("multiprocessing.Process", "multiprocessing.context.Process")


def fork_parent_note(ctx, node: ast.AST) -> str:
    """The note when ``node`` is in the ``__init__`` of a ``Process`` subclass, else ``""``."""
    func = next((p for p in (node, *ctx.ancestors(node)) if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if func is None or func.name != "__init__" or "Process" not in ctx.text:
        return ""
    cls = ctx.parent(func)
    if not isinstance(cls, ast.ClassDef) or not any((ctx.qualname(b) or "").endswith(_PROCESS_BASES) for b in cls.bases):
        return ""
    return (f"not rewritten: `{cls.name}.__init__` runs in the parent before the worker process forks; a "
            "device-agnostic choice asks `torch.accelerator.is_available()` there, which on CUDA initialises the "
            "driver before the fork (each forked child then fails at its first CUDA call). Choose the device in "
            "`run()`, in the child")
