"""Which imports of the file being rewritten are first-party, as ruff's isort (I001) sorts them.

An added ``import torch`` is third-party: it goes after the standard library and before the
project's own modules, with a blank line between the sections. Ruff calls a module first-party
when it resolves under one of its ``src`` folders (the project root and its ``src/``: the folder
of the nearest ``pyproject.toml`` or ``ruff.toml``, else the repository root or the working
folder), or when it is the file's own top-level package. A relative import is local.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from functools import lru_cache

_FILE = contextvars.ContextVar("neuron_lint_rewritten_file", default=None)
_ROOT_MARKERS = ("pyproject.toml", "ruff.toml", ".ruff.toml")
_MAX_DEPTH = 32


@contextlib.contextmanager
def current_file(path: str | None):
    """Around the rewrite of ``path`` (a real file, or None for text with no place on disk)."""
    real = path if path and os.path.isfile(path) else None
    token = _FILE.set(os.path.abspath(real) if real else None)
    try:
        yield
    finally:
        _FILE.reset(token)


def rewritten_file() -> str | None:
    """The absolute path of the file being rewritten (None for text with no place on disk)."""
    return _FILE.get()


def is_first_party(module: str) -> bool:
    """Is ``module`` (``detectron2.config``; ``.utils`` for a relative import) one of the
    project's own, for the file being rewritten? False when the file is unknown."""
    if module.startswith("."):
        return True
    path = _FILE.get()
    if path is None or not module:
        return False
    folder = os.path.dirname(path)
    if module.split(".")[0] == _own_package(folder):
        return True
    return any(_resolves(root, module) for root in _source_roots(folder))


@lru_cache(maxsize=256)
def _own_package(folder: str) -> str | None:
    """The top-level package ``folder`` belongs to (the last folder up with an ``__init__.py``)."""
    top = None
    for _ in range(_MAX_DEPTH):
        if not os.path.isfile(os.path.join(folder, "__init__.py")):
            break
        top = os.path.basename(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return top


@lru_cache(maxsize=256)
def _source_roots(folder: str) -> tuple[str, ...]:
    root = _project_root(folder)
    return (root, os.path.join(root, "src")) if root else ()


def _project_root(folder: str) -> str | None:
    here, repository = folder, None
    for _ in range(_MAX_DEPTH):
        if any(os.path.isfile(os.path.join(here, name)) for name in _ROOT_MARKERS):
            return here
        if repository is None and os.path.exists(os.path.join(here, ".git")):
            repository = here
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    if repository is not None:
        return repository
    cwd = os.getcwd()
    return cwd if folder == cwd or folder.startswith(cwd.rstrip(os.sep) + os.sep) else None


@lru_cache(maxsize=1024)
def _resolves(root: str, module: str) -> bool:
    """Does ``module`` name a folder or a ``.py``/``.pyi`` file under ``root``?"""
    path = os.path.join(root, *module.split("."))
    return os.path.isdir(path) or os.path.isfile(path + ".py") or os.path.isfile(path + ".pyi")
