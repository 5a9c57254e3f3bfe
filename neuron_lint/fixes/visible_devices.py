"""Does a module choose the visible GPUs when it runs? Then a device asked for at its import would
start the CUDA driver before that choice, and the choice would be ignored (``--device 1`` ran on GPU
0): such a module asks for the device at run time.
"""

from __future__ import annotations

import ast
import re

from .module_kind import top_import_files
from .project_scan import per_file_version


def picks_visible_devices(ctx) -> bool:
    """Does the module choose the visible GPUs when it runs: set ``CUDA_VISIBLE_DEVICES`` (or
    another ``*_VISIBLE_DEVICES``) or call a ``select_device`` (yolov5's, which sets it)? Asking for
    the device at import would start the CUDA driver before that, and the choice would be ignored
    (``--device 1`` ran on GPU 0). Asked once per module (the answer is kept on ``ctx``)."""
    found = ctx.__dict__.get("_nrn_visible_devices")
    if found is None:
        # most modules name neither: the text says so without a walk of the tree
        found = ("_VISIBLE_DEVICES" in ctx.text or "select_device" in ctx.text) and any(
            (isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.endswith("_VISIBLE_DEVICES"))
            or (isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", "")) == "select_device")
            for n in ctx.walk(ctx.tree))
        found = found or _imports_device_picker(ctx)
        ctx.__dict__["_nrn_visible_devices"] = found
    return found


def _imports_device_picker(ctx) -> bool:
    """Does the module import, at its top, a module of its project that sets ``*_VISIBLE_DEVICES``
    (MedicalNet's ``train.py``: ``from model import generate_model``, which sets
    ``os.environ["CUDA_VISIBLE_DEVICES"]`` before building the model, set 80)?"""
    return any(_sets_visible_devices(path) for path, _ in top_import_files(ctx))


@per_file_version(missing=False)
def _sets_visible_devices(path: str) -> bool:
    """Does the module at ``path`` assign a ``*_VISIBLE_DEVICES`` variable?"""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return False
    return _SETS_VISIBLE.search(data) is not None if b"_VISIBLE_DEVICES" in data else False


#: ``os.environ["CUDA_VISIBLE_DEVICES"] = ...`` (any ``*_VISIBLE_DEVICES``).
_SETS_VISIBLE = re.compile(rb"""\[\s*['"]\w*_VISIBLE_DEVICES['"]\s*\]\s*=[^=]""")


#: The note where a definition that probed nothing would ask the accelerator before the GPUs are chosen.
VISIBLE_LATER = ("the module chooses its visible GPUs (`*_VISIBLE_DEVICES`) after this definition, which "
                 "asks no driver; asking the accelerator here would start the CUDA driver first, and the "
                 "choice would be ignored. Choose the GPUs above it, or define the device after")


def chosen_before(ctx, stmt: ast.stmt) -> bool:
    """Are the visible GPUs chosen before ``stmt`` (a module-level statement) runs: every
    ``*_VISIBLE_DEVICES`` the module names is assigned at its top level above ``stmt``, and it calls no
    ``select_device`` and imports no module of its project that sets them?"""
    if _imports_device_picker(ctx):
        return False
    top = {id(s): s for s in ctx.tree.body}
    for n in ctx.walk(ctx.tree):
        if isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", "")) == "select_device":
            return False
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.endswith("_VISIBLE_DEVICES"):
            owner = next((p for p in (n, *ctx.ancestors(n)) if id(p) in top), None)
            if owner is None or owner.lineno >= stmt.lineno:
                return False
    return True


def chosen_after(ctx, node: ast.AST) -> int | None:
    """The line of an ``os.environ["CUDA_VISIBLE_DEVICES"] = ...`` (any ``*_VISIBLE_DEVICES``) of the
    module that runs after the site ``node``, or None. A site runs before one in the function that
    assigns it when it is above it there; code at the module's top level (a ``__main__`` block's
    argparse defaults, a parameter's default value) runs before one in a function the module calls
    only below it. transfuser's ``main()`` sets it after its first lines (read set 102), gorilla's
    CLI in ``main(args)``, called after its parser is built (read set 103)."""
    if "_VISIBLE_DEVICES" not in ctx.text:
        return None
    site = _runs_in(ctx, node)
    for fn, assigned in _assignments(ctx):
        if fn is site:
            if node.lineno < assigned.lineno:
                return assigned.lineno
        elif site is None and not _called_above(ctx, fn, node.lineno):
            return assigned.lineno
    return None


def _assignments(ctx) -> list[tuple[ast.AST | None, ast.AST]]:
    """``(function it runs in or None, node)`` of each ``os.environ[...] = ...`` (or ``os.environ.setdefault``,
    ``os.putenv``) of a ``*_VISIBLE_DEVICES`` variable, kept per module."""
    if "_nrn_visible_assignments" in ctx.__dict__:
        return ctx.__dict__["_nrn_visible_assignments"]
    found = ctx.__dict__["_nrn_visible_assignments"] = []
    for n in ctx.walk(ctx.tree):
        if not (isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.endswith("_VISIBLE_DEVICES")):
            continue
        parent = ctx.parent(n)
        stored = (isinstance(parent, ast.Subscript) and isinstance(parent.ctx, ast.Store)
                  and ctx.qualname(parent.value) == "os.environ")
        called = (isinstance(parent, ast.Call) and parent.args and parent.args[0] is n
                  and ctx.qualname(parent.func) in ("os.environ.setdefault", "os.putenv"))
        if stored or called:
            found.append((_runs_in(ctx, n), n))
    return found


def _runs_in(ctx, node: ast.AST) -> ast.AST | None:
    """The function whose body runs ``node``, or None for the module's top level (a default value or
    decorator runs where its ``def`` is)."""
    child = node
    for parent in ctx.ancestors(node):
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(child is s for s in parent.body):
            return parent
        if isinstance(parent, ast.Lambda) and child is parent.body:
            return parent
        child = parent
    return None


def _called_above(ctx, fn: ast.AST | None, line: int) -> bool:
    """Is the function ``fn`` called at the module's top level above ``line``?"""
    name = getattr(fn, "name", None)
    return name is not None and any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name and n.lineno < line
        and _runs_in(ctx, n) is None for n in ctx.walk(ctx.tree))
