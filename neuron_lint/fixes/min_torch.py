"""The oldest PyTorch a project declares, as the default ``min-torch`` of its fixes.

The project's folder is the nearest one, from a starting folder up to the repository root, that
holds a dependency manifest (:func:`neuron_lint.manifests.manifest_files`).
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from .project_scan import PROJECT_MARKERS

#: The oldest PyTorch a fix may target: ``torch.accelerator``, which every device rewrite uses, is new in 2.6.
FIX_TORCH_FLOOR = (2, 6)
#: The PyTorch TorchNeuron needs: the default for a project that declares no lower bound for torch
#: (code being ported to Trainium runs on it there; pass --min-torch to keep older CUDA installs working).
TORCHNEURON_TORCH = "2.13"


def project_root(start: Path) -> Path | None:
    """The nearest folder, from ``start`` up, that holds a dependency manifest.

    The walk stops at the repository root (a folder with ``.git``): a checkout's own manifests
    decide, never those of a folder above it.
    """
    from ..manifests import manifest_files

    for directory in (start, *start.parents):
        if manifest_files(directory):
            return directory
        if os.path.exists(directory / ".git"):  # Path.exists() raises on 3.11 under an unsearchable folder
            return None
    return None




def _bounding_project(start: Path):
    """The manifests' torch bound of the nearest folder, from ``start`` up to the repository root
    (or to a folder with a ``pyproject.toml``, ``setup.py`` or ``setup.cfg``), whose manifests bound
    torch from below: ``((2, 6), "setup.py: torch>=2.6")``, or None.

    A manifest that does not bound torch says nothing about it: diffusers' ``examples/dreambooth/
    requirements.txt`` lists accelerate and transformers, and the scripts run on the torch the
    library's ``setup.py`` asks for (``torch>=2.6``)."""
    from ..manifests import declared_torch

    root = project_root(start)
    while root is not None:
        found = declared_torch(root)
        if found is not None:
            return found
        if root.parent == root or any(os.path.exists(root / m) for m in PROJECT_MARKERS):
            return None  # the repository root, or a package's own project: nothing above it decides
        root = project_root(root.parent)
    return None


def project_min_torch(start: Path) -> tuple[str, str, str]:
    """The default ``min-torch`` for the project around ``start``: (version, where, declared-if-below-2.6).

    The oldest torch the nearest manifests that bound torch declare (see :func:`_bounding_project`
    and :func:`neuron_lint.manifests.declared_torch`), but never below 2.6: every device rewrite
    writes ``torch.accelerator``, so a lower value would not make the fixes safe for older
    releases, it would only withhold some of them. When the project declares less, the third value
    says so (the CLI warns). When nothing bounds torch, the PyTorch TorchNeuron needs (2.13), with
    no origin.
    """
    found = _bounding_project(start)
    if found is None:
        return TORCHNEURON_TORCH, "", ""
    bound, where = found
    shown = ".".join(str(p) for p in bound)
    if bound < FIX_TORCH_FLOOR:
        return ".".join(str(p) for p in FIX_TORCH_FLOOR), where, shown
    return shown, where, ""


#: Modules of PyTorch before 1.0 (pixel2style2pixel's sketch script: `load_lua`, "Must have torch==0.4.1").
_PRE_1_0 = ("torch.utils.serialization", "torch.legacy")


def pre_1_0_import(ctx) -> ast.stmt | None:
    """The first import of a module PyTorch 1.0 removed, or None (asked once per module)."""
    if "_nrn_pre_1_0" not in ctx.__dict__:
        ctx.__dict__["_nrn_pre_1_0"] = next((
            n for n in ctx.walk(ctx.tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and any(
                name == m or name.startswith(m + ".") for m in _PRE_1_0
                for name in ([n.module or ""] if isinstance(n, ast.ImportFrom) else [a.name for a in n.names]))
        ), None) if "torch.utils.serialization" in ctx.text or "torch.legacy" in ctx.text else None
    return ctx.__dict__["_nrn_pre_1_0"]
