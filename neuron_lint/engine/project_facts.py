"""Facts about the project around a checked file, read from the file system.

Whether ``import mamba_ssm`` is the project's own package depends on the folders around the file,
not only on its bytes; nor do the fixes planned in a file depend on it alone, where they read the
whole project (another module asks for NCCL by name, reads a stream handle, turns TF32 off). A
cached result records the questions asked here (see :func:`recorded_lookups` and the runner) and
stays valid while they get the same answers: ``(file, package, answer)`` for a package lookup,
``(project root, fingerprint)`` for a project read as a whole (:func:`project_fingerprint`).
"""

from __future__ import annotations

import hashlib
import os
import re
from contextlib import contextmanager
from functools import lru_cache
from typing import Callable, Iterator

_recording: list[list[tuple]] = []


@lru_cache(maxsize=4096)
def _import_roots(directory: str) -> tuple[str, ...]:
    """The ancestors of a directory that could be on sys.path: those that are not packages themselves."""
    roots = []
    d = os.path.abspath(directory)
    while True:
        if not os.path.isfile(os.path.join(d, "__init__.py")):
            roots.append(d)
        parent = os.path.dirname(d)
        if parent == d:
            return tuple(roots)
        d = parent


@lru_cache(maxsize=4096)
def _provides(root: str, name: str) -> bool:
    return os.path.isfile(os.path.join(root, name, "__init__.py")) or os.path.isfile(os.path.join(root, name + ".py"))


@contextmanager
def recorded_lookups() -> Iterator[list[tuple]]:
    """Collect the questions asked of the disk inside the block: ``(file, package, answer)`` and
    ``(project root,)`` (:func:`settled` gives it its fingerprint).

    A cached result stays valid only while the same questions get the same answers (see runner).
    """
    lookups: list[tuple[str, str, bool]] = []
    _recording.append(lookups)
    try:
        yield lookups
    finally:
        _recording.remove(lookups)


def is_local_package(path: str, top: str) -> bool:
    """Is `top` a package of the project being checked (a sibling of one of the file's import roots)?

    `import mamba_ssm` inside the mamba repository is the project's own code, whose CUDA parts are
    reported where they are; `import triton` from `mamba_ssm/ops/triton/x.py` is still the real
    Triton, since `mamba_ssm/ops` is a package and so not an import root.
    """
    try:
        if not os.path.isfile(path):
            return False  # source text given without a real file (stdin, the library API, examples)
        answer = any(_provides(root, top) for root in _import_roots(os.path.dirname(path) or "."))
        for lookups in _recording:
            lookups.append((path, top, answer))
        return answer
    except (OSError, ValueError):
        return False


def project_read(root: str) -> None:
    """Record that what is being worked out reads the project at ``root`` as a whole: a cached result
    holds only while the project's files stay as they were. Recorded as ``(root,)``, given its
    fingerprint by :func:`settled` when the result is stored (nothing is worked out without a cache)."""
    for lookups in _recording:
        if (root,) not in lookups:
            lookups.append((root,))


def settled(lookups: list[tuple]) -> list[tuple]:
    """``lookups`` as a cache entry keeps them: each project read, ``(root,)``, with its fingerprint."""
    return [(asked[0], project_fingerprint(asked[0])) if len(asked) == 1 else asked for asked in lookups]


#: The files whose changes make a project read as a whole read differently: its sources, the YAML
#: configurations that name its modules, its manifests.
_PROJECT_SUFFIXES = (".py", ".yaml", ".yml", ".toml", ".cfg", ".txt")
#: Folders no whole-project read looks into (nor hidden ones, nor virtual environments).
NOT_PROJECT_FOLDERS = {"node_modules", "site-packages", "__pycache__", "build", "dist", "venv", "env"}
#: A bound on the files one whole-project read looks at (a huge tree).
MAX_PROJECT_FILES = 20_000
_FINGERPRINTS: dict[str, str] = {}


def walk_project(root: str, suffixes: tuple[str, ...],
                 wanted: Callable[[tuple[str, ...], str], bool] | None = None) -> Iterator[str]:
    """The paths of the files under ``root`` whose names end in one of ``suffixes`` (and for which
    ``wanted(folder parts relative to root, name)`` holds), in a fixed order, hidden folders, virtual
    environments and build output left out, at most :data:`MAX_PROJECT_FILES` of them."""
    seen = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in NOT_PROJECT_FOLDERS and "venv" not in d)
        parts = tuple(os.path.relpath(folder, root).split(os.sep))
        for name in sorted(files):
            if not name.endswith(suffixes) or (wanted is not None and not wanted(parts, name)):
                continue
            seen += 1
            if seen > MAX_PROJECT_FILES:
                return
            yield os.path.join(folder, name)


def project_fingerprint(root: str) -> str:
    """A hash of the path, size and modification time of the files under ``root`` a whole-project
    read may look at (:data:`_PROJECT_SUFFIXES`, as :func:`walk_project` finds them). Worked out once
    per run and root (:func:`forget_projects` starts a run)."""
    found = _FINGERPRINTS.get(root)
    if found is None:
        h = hashlib.blake2b(digest_size=16)
        for full in walk_project(root, _PROJECT_SUFFIXES):
            try:
                st = os.stat(full)
            except OSError:
                continue
            h.update(f"{os.path.relpath(full, root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
        found = _FINGERPRINTS[root] = h.hexdigest()
    return found


def forget_projects() -> None:
    """Forget the projects' fingerprints: a new run looks at the disk again."""
    _FINGERPRINTS.clear()


_CUDA_SETUP: dict[str, bool] = {}


def project_builds_cuda(path: str | None) -> bool:
    """Does the nearest ``setup.py`` above ``path`` build a CUDA extension (``CUDAExtension``, ``.cu`` sources)?"""
    if not path:
        return False
    directory = os.path.dirname(os.path.abspath(path))
    seen = []
    for _ in range(8):
        if directory in _CUDA_SETUP:
            answer = _CUDA_SETUP[directory]
            break
        seen.append(directory)
        setup = os.path.join(directory, "setup.py")
        if os.path.isfile(setup):
            try:
                with open(setup, encoding="utf-8", errors="replace") as f:
                    text = f.read(200_000)
            except OSError:
                text = ""
            answer = "CUDAExtension" in text or bool(re.search(r"\.cu['\"]", text))
            break
        parent = os.path.dirname(directory)
        if parent == directory:
            answer = False
            break
        directory = parent
    else:
        answer = False
    for d in seen:
        _CUDA_SETUP[d] = answer
    return answer
