"""Does the project build its own C++/CUDA operators?

A project whose ``setup.py`` builds extensions with ``torch.utils.cpp_extension`` (pytorch3d's
``_C``, detectron2's ``_C``, fairseq's ``libnat_cuda``) has operators with a CPU and a CUDA
kernel and nothing else: a ``neuron`` tensor reaching one raises ("Cannot use CPU implementation").
Its ``torch.cuda.is_available()`` tests send Trainium down the CPU path, the one that works there;
rewritten, they would send it to the accelerator and into those operators. Read once per project.
"""

from __future__ import annotations

import functools
import os
import re

from .project_scan import MAX_BYTES, project_root

_BUILDS = re.compile(rb"\b(CUDAExtension|CppExtension|BuildExtension)\b")


@functools.lru_cache(maxsize=64)
def _built_by(root: str) -> str:
    path = os.path.join(root, "setup.py")
    try:
        if os.path.getsize(path) > MAX_BYTES:
            return ""
        with open(path, "rb") as fh:
            found = _BUILDS.search(fh.read())
    except OSError:
        return ""
    return f"`{found.group(1).decode()}` in setup.py" if found else ""


def own_extension(path: str) -> str:
    """How the project around ``path`` builds its C++/CUDA operators (for the note), or ``""``."""
    root = project_root(path) if path else None
    return _built_by(root) if root else ""
