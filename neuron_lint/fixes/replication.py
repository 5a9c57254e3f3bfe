"""The project's own functions that replicate a model over CUDA devices with DataParallel's pieces
(``torch.nn.parallel.replicate``, ``scatter``, ``parallel_apply``, ``gather``), as Real-Time-Voice-
Cloning's ``data_parallel_workaround`` does: a module calling one counts its GPUs for it, and that
count stays CUDA's (on Trainium the replication never runs; a rewritten count only raised there).

The function is found where the module imports it from, a file of the project (``from
synthesizer.utils import data_parallel_workaround``, or a relative import), read once per file.
"""

from __future__ import annotations

import ast
import functools
import os

#: ``torch.nn.parallel`` functions that only CUDA builds can run on devices (``torch._C._scatter``...).
_PIECES = frozenset({"replicate", "scatter", "parallel_apply", "gather", "data_parallel", "DataParallel"})


def replicating_call(ctx) -> str:
    """The name of a function the module imports from the project and calls, whose definition
    replicates a model with DataParallel's pieces, or ``""``."""
    if not ctx.path:
        return ""
    called = {n.func.id for n in ctx.walk(ctx.tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    for stmt in ctx.walk(ctx.tree):
        if not isinstance(stmt, ast.ImportFrom):
            continue
        names = [a for a in stmt.names if (a.asname or a.name) in called]
        if not names:
            continue
        for path in _candidates(ctx.path, stmt.module or "", stmt.level):
            found = _replicating_in(path)
            hit = next((a.asname or a.name for a in names if a.name in found), None)
            if hit:
                return hit
    return ""


def _candidates(path: str, module: str, level: int) -> list[str]:
    """The files ``from <level dots><module> import ...`` in ``path`` may read (:func:`.module_kind.import_bases`:
    relative to its folder, or for an absolute import from the folders up to the project's root)."""
    from .module_kind import import_bases, module_files
    from .project_scan import project_root

    root = project_root(path)
    if not level and not root:
        return []
    parts = module.split(".") if module else []
    return [p for base in import_bases(path, root, level) for p in module_files(base, parts) if os.path.isfile(p)]


def _replicating_in(path: str) -> frozenset[str]:
    try:
        st = os.stat(path)
    except OSError:
        return frozenset()
    return _replicating_functions(path, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=256)
def _replicating_functions(path: str, mtime_ns: int, size: int) -> frozenset[str]:  # keyed on the version too
    """The module-level functions of ``path`` that call one of DataParallel's pieces."""
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()
    found = set()
    for fn in tree.body:
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and (n.func.attr == "DataParallel" or (
                    n.func.attr in _PIECES and isinstance(n.func.value, ast.Attribute) and n.func.value.attr == "parallel"))
                for n in ast.walk(fn)):
            found.add(fn.name)
    return frozenset(found)
