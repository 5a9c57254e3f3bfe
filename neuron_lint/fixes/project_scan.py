"""The project around a file, and its Python files, for the few fixes that look past one module.

A project's root is the nearest folder up with a ``pyproject.toml``, ``setup.py``, ``setup.cfg``
or ``.git``. Its files are read in a fixed order, skipping hidden folders, virtual environments and
build output, at most ``MAX_PROJECT_FILES`` of them and none above ``MAX_BYTES``: what
:mod:`.native_neuron` (does the project already reach Trainium natively?) and :mod:`.mocked`
(which ``torch.cuda`` functions do its tests replace?) read, once per process each.

The indexes several modules keep of a project's sources (which modules it imports, its own
device-name dispatchers) come from one read of its non-test files (:func:`source_index`): each
registers, with :func:`source_reader`, what it takes from one file.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any, Callable, Iterator

from ..engine.project_facts import project_read, walk_project

#: What marks a project's own root (or the repository's): nothing above it decides for it.
PROJECT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")
MAX_BYTES = 2 * 1024 * 1024  # files larger than this are not read


def project_root(path: str) -> str | None:
    """The nearest folder up from ``path`` that holds a project marker, or None. Whatever asks for it
    reads the project as a whole, so a cached result that did holds while the project's files stay
    as they were (:func:`~neuron_lint.engine.project_facts.project_read`)."""
    try:
        folder = os.path.dirname(os.path.abspath(path))
    except (OSError, ValueError):
        return None
    root = _root_of(folder)
    if root is not None:
        project_read(root)
    return root


@functools.lru_cache(maxsize=256)
def _root_of(folder: str) -> str | None:
    """:func:`project_root` of the files in ``folder`` (asked for each `.cuda()` of a file: once)."""
    while True:
        if any(os.path.exists(os.path.join(folder, m)) for m in PROJECT_MARKERS):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def subproject(path: str, root: str) -> tuple[str, ...]:
    """The folders from ``root`` down to the project of its own that holds ``path``, as parts: the
    first folder on the way with Python files of its own (``()`` for a module at the root). A
    repository of several projects keeps them side by side, often below grouping folders:
    InternImage's ``classification/``, InternVideo's ``InternVideo1/Downstream/Video-Text-Retrieval/``."""
    parts = os.path.relpath(os.path.abspath(path), root).split(os.sep)[:-1]
    for n in range(1, len(parts) + 1):
        if _has_python_files(os.path.join(root, *parts[:n])):
            return tuple(parts[:n])
    return tuple(parts)


@functools.lru_cache(maxsize=1024)
def _has_python_files(folder: str) -> bool:
    try:
        return any(name.endswith(".py") for name in os.listdir(folder))
    except OSError:
        return False


def python_files(root: str, wanted: Callable[[tuple[str, ...], str], bool] | None = None,
                 ) -> Iterator[tuple[str, bytes]]:
    """``(path, bytes)`` of the ``.py`` files under ``root`` (for which ``wanted(folder parts
    relative to root, name)`` holds), in a fixed order; unreadable ones are passed over."""
    return project_files(root, (".py",), wanted)


def project_files(root: str, suffixes: tuple[str, ...], wanted: Callable[[tuple[str, ...], str], bool] | None = None,
                  ) -> Iterator[tuple[str, bytes]]:
    """``(path, bytes)`` of the files under ``root`` whose names end in one of ``suffixes``, as
    :func:`python_files` reads them."""
    for full in walk_project(root, suffixes, wanted):
        try:
            if os.path.getsize(full) > MAX_BYTES:
                continue
            with open(full, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        yield full, data


def per_file_version(missing: Any) -> Callable:
    """Keep what ``read(path)`` found for each version of the file (its path, time and size: an
    editor's server sees the file change); a file that cannot be looked at gives ``missing``."""
    def wrap(read: Callable[[str], Any]) -> Callable[[str], Any]:
        @functools.lru_cache(maxsize=256)
        def keyed(path: str, mtime_ns: int, size: int):
            return read(path)

        @functools.wraps(read)
        def cached(path: str):
            try:
                st = os.stat(path)
            except OSError:
                return missing
            return keyed(path, st.st_mtime_ns, st.st_size)
        return cached
    return wrap


#: What each project-wide index takes from one of the project's Python files: its name -> (``wanted``,
#: the files it reads, as :func:`python_files` takes it; ``read(path, data)``, which returns what to
#: keep of a file: None or empty, nothing).
_SOURCE_READERS: dict[str, tuple[Callable[[tuple[str, ...], str], bool], Callable[[str, bytes], Any]]] = {}


def source_reader(name: str, wanted: Callable[[tuple[str, ...], str], bool]) -> Callable:
    """Register ``read(path, data)`` as what the index ``name`` takes from each file ``wanted`` takes."""
    def register(read: Callable[[str, bytes], Any]) -> Callable[[str, bytes], Any]:
        _SOURCE_READERS[name] = (wanted, read)
        return read
    return register


def source_index(root: str, name: str) -> tuple:
    """What the reader registered as ``name`` kept of each Python file of the project at ``root``
    it wants, in the files' order: one walk and one read of the files serves every index registered
    so far; a reader registered later (its module imported later in the run) gets one more walk, for
    the readers still missing only."""
    indexes = _INDEXES.get(root)
    if indexes is None:
        if len(_INDEXES) >= _KEPT_ROOTS:
            _INDEXES.pop(next(iter(_INDEXES)))
        indexes = _INDEXES[root] = {}
    if name not in indexes:
        indexes.update(_read_indexes(root, [n for n in _SOURCE_READERS if n not in indexes]))
    return indexes[name]


#: Each project's indexes, by its root (the oldest root is forgotten first).
_INDEXES: dict[str, dict[str, tuple]] = {}
_KEPT_ROOTS = 16


def _read_indexes(root: str, names: list[str]) -> dict[str, tuple]:
    readers = [(name, *_SOURCE_READERS[name]) for name in names]
    found: dict[str, list] = {name: [] for name in names}
    for path, data in python_files(root):
        folder, file = os.path.split(os.path.relpath(path, root))
        parts = tuple(folder.split(os.sep)) if folder else (".",)
        for name, wanted, read in readers:
            if wanted(parts, file):
                kept = read(path, data)
                if kept:
                    found[name].append(kept)
    return {name: tuple(kept) for name, kept in found.items()}


#: The memos of what was read of a project as a whole (:func:`project_memo`).
_PROJECT_MEMOS: list = []


def project_memo(maxsize: int) -> Callable:
    """``functools.lru_cache(maxsize)`` for a function that reads a project as a whole: forgotten,
    with the indexes, by :func:`forget_project_reads`."""
    def wrap(read: Callable) -> Callable:
        memo = functools.lru_cache(maxsize=maxsize)(read)
        _PROJECT_MEMOS.append(memo)
        return memo
    return wrap


def forget_project_reads() -> None:
    """Forget what was read of every project (its indexes and memos): a project file changed (the
    language server, on a save) or a test wrote one."""
    _INDEXES.clear()
    for memo in _PROJECT_MEMOS:
        memo.cache_clear()


def pattern_index(name: str, pattern: "re.Pattern[bytes]", first: bytes) -> None:
    """Register the index ``name``: where ``pattern`` first matches in each project file (its path and
    line), looked for only in files that hold the bytes ``first``."""
    @source_reader(name, lambda parts, file: True)
    def found_in(full: str, data: bytes) -> tuple[str, int] | None:
        m = pattern.search(data) if first in data else None
        return (full, data.count(b"\n", 0, m.start()) + 1) if m else None


def first_in_project(path: str, name: str, own_project: bool = False) -> str:
    """``file:line`` (from the project's root) of the first match of the pattern index ``name`` in
    the project of ``path``; within its own project below the root (:func:`subproject`) when
    ``own_project``; ``""`` when there is none, or ``path`` is no file on disk."""
    root = project_root(path) if path and not path.startswith("<") and os.path.isfile(path) else None
    if not root:
        return ""
    folder = subproject(path, root) if own_project else ()
    for full, line in source_index(root, name):
        shown = os.path.relpath(full, root)
        if tuple(shown.split(os.sep)[:-1][:len(folder)]) == folder:
            return f"{shown}:{line}"
    return ""
