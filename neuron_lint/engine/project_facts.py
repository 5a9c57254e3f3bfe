"""Facts about the project around a checked file, read from the file system.

Whether ``import mamba_ssm`` is the project's own package depends on the folders around the file,
not only on its bytes; a cached result records the questions asked here (see :func:`recorded_lookups`
and the runner) and stays valid while they get the same answers.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from functools import lru_cache
from typing import Iterator

_recording: list[list[tuple[str, str, bool]]] = []


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
def recorded_lookups() -> Iterator[list[tuple[str, str, bool]]]:
    """Collect the (file, package, answer) questions asked of the disk inside the block.

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
