"""Code that must not start the CUDA driver, where a device-agnostic rewrite would: it asks
``torch.accelerator.is_available()``, and on a CUDA machine that initialises the driver.

A forked worker's parent, the ``__init__`` of a ``multiprocessing.Process`` subclass: SlowFast's
``AsyncVis``/``AsyncDemo`` workers (UniFormer, read set 99) store ``self.device =
torch.device("cuda:{}".format(gpu_id))`` in ``__init__``, which runs in the parent before ``start()``
forks; only the child touches the GPU. A device-agnostic rewrite asks
``torch.accelerator.is_available()`` there, and on a CUDA machine that initialises the driver in the
parent: with the ``fork`` start method each child then fails at its first CUDA call. So nothing there is rewritten; the child's
``run()`` is where the device can be chosen; so is the function that makes such workers.

What a module runs before it chooses its visible GPUs (``os.environ["CUDA_VISIBLE_DEVICES"] = ...``,
:func:`.visible_devices.chosen_after`): the driver, started first, ignores that choice, and every
rank of transfuser's training ran on the same GPU (read set 102). Nothing there is rewritten either.
"""

from __future__ import annotations

import ast

from .visible_devices import chosen_after

#: ``multiprocessing.Process`` as the base resolves (``torch.multiprocessing`` re-exports it; a
#: project's own class named ``Process`` is not one).
_PROCESS_BASES = ("multiprocessing.Process", "multiprocessing.context.Process")


def fork_parent_note(ctx, node: ast.AST) -> str:
    """The note when ``node`` is in the ``__init__`` of a ``Process`` subclass, or in a function that
    makes such workers (detectron2's ``AsyncPredictor.__init__`` sets each worker's
    ``cfg.MODEL.DEVICE = "cuda:{}".format(gpuid)`` before making it; Ask-Anything's copies, read set
    104), else ``""``."""
    func = next((p for p in (node, *ctx.ancestors(node)) if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if func is None or "Process" not in ctx.text:
        return ""
    cls = ctx.parent(func)
    if func.name == "__init__" and isinstance(cls, ast.ClassDef) and _is_process(ctx, cls):
        return (f"not rewritten: `{cls.name}.__init__` runs in the parent before the worker process forks; a "
                "device-agnostic choice asks `torch.accelerator.is_available()` there, which on CUDA initialises the "
                "driver before the fork (each forked child then fails at its first CUDA call). Choose the device in "
                "`run()`, in the child")
    made = _made_worker(ctx, func)
    return (f"not rewritten: the function makes worker processes (`{ctx.segment(made.func)}`, line {made.lineno}) "
            "and runs in their parent; a device-agnostic choice asks `torch.accelerator.is_available()` there, which "
            "on CUDA initialises the driver before they fork (each forked worker then fails at its first CUDA "
            "call). Choose the device in the worker") if made is not None else ""


def _made_worker(ctx, func: ast.AST) -> ast.Call | None:
    """The first call of ``func`` that makes a ``Process`` (or a subclass of the module's), kept per function."""
    known = ctx.__dict__.setdefault("_nrn_made_worker", {})
    if id(func) not in known:
        workers = _process_classes(ctx)
        known[id(func)] = next((n for n in ctx.walk(func) if isinstance(n, ast.Call) and (
            (ctx.qualname(n.func) or "").endswith(_PROCESS_BASES) or _called_name(n.func) in workers)), None)
    return known[id(func)]


def _is_process(ctx, cls: ast.ClassDef) -> bool:
    return any((ctx.qualname(b) or "").endswith(_PROCESS_BASES) for b in cls.bases)


def _process_classes(ctx) -> frozenset[str]:
    """The names of the module's ``Process`` subclasses."""
    if "_nrn_process_classes" not in ctx.__dict__:
        ctx.__dict__["_nrn_process_classes"] = frozenset(
            n.name for n in ctx.walk(ctx.tree) if isinstance(n, ast.ClassDef) and _is_process(ctx, n))
    return ctx.__dict__["_nrn_process_classes"]


def _called_name(func: ast.AST) -> str:
    """``Worker`` of ``Worker(...)`` and of ``Outer.Worker(...)``."""
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def visible_later_note(ctx, node: ast.AST) -> str:
    """The note when ``node`` runs before the module chooses its visible GPUs, else ``""``."""
    line = chosen_after(ctx, node)
    if line is None:
        return ""
    return (f"not rewritten: this runs before the module chooses its visible GPUs (`*_VISIBLE_DEVICES`, line "
            f"{line}); a device-agnostic rewrite asks `torch.accelerator.is_available()` here, which on CUDA starts "
            "the driver first, and the choice would be ignored. Choose the GPUs first, or leave this site as it is")


def early_driver_note(ctx, node: ast.AST) -> str:
    """The note when ``node`` runs where the CUDA driver must not start yet (see the module docs), else ``""``."""
    return fork_parent_note(ctx, node) or visible_later_note(ctx, node)
