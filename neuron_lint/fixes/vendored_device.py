"""Packages that choose their device with their own CUDA-only ``select_device``.

YOLOv5's and ultralytics' ``select_device`` (copied into FastSAM, MobileSAM, deep_sort and many
more) takes ``cpu``, ``mps`` or CUDA indices, sets ``CUDA_VISIBLE_DEVICES`` and raises for any other
device: ``neuron`` included. On Trainium such a package can only ever run on the CPU, so its other
CUDA code (device counts for the DDP world size, a profiler's default device, ``.cuda()`` of the
models it selected for) is decided by that function; rewritten on its own, it would send NeuronCores
where ``select_device`` chose the CPU. What to port is ``select_device``, by hand.
"""

from __future__ import annotations

import os
import re

from .project_scan import project_root, source_index, source_reader

_DEFINED = re.compile(rb"^def select_device\(", re.M)


def _selecting_packages(root: str) -> tuple[tuple[str, str], ...]:
    """(the top folder of the package, ``path:line`` of its definition) for each CUDA-only
    ``select_device`` defined in a package of the project (a script's own is its own business)."""
    return tuple((top, f"{os.path.relpath(file, root).replace(os.sep, '/')}:{line}")
                 for file, top, line in source_index(root, "select_device"))


@source_reader("select_device", lambda parts, name: True)
def _selecting_package(file: str, data: bytes) -> tuple[str, str, int] | None:
    """(the file, the top folder of its package, the line) where a package's module defines a
    CUDA-only ``select_device``, else None."""
    match = _DEFINED.search(data) if b"select_device" in data else None
    if not match or b"CUDA_VISIBLE_DEVICES" not in data or b"cuda.is_available" not in data:
        return None
    if b"neuron" in data or b"accelerator" in data:  # ported already: it knows other devices
        return None
    folder = top = os.path.dirname(os.path.abspath(file))
    if not os.path.isfile(os.path.join(folder, "__init__.py")):
        return None
    while os.path.isfile(os.path.join(os.path.dirname(top), "__init__.py")):
        top = os.path.dirname(top)
    return file, top, data.count(b"\n", 0, match.start()) + 1


def selecting_package(path: str) -> str:
    """Where the package holding ``path`` defines its CUDA-only ``select_device`` (``path:line``), or ``""``."""
    root = project_root(path) if path else None
    if not root:
        return ""
    here = os.path.abspath(path)
    return next((where for top, where in _selecting_packages(os.path.abspath(root))
                 if here.startswith(top + os.sep)), "")
