"""Project modules that choose their own device with a CUDA test when they are imported.

gluonts' ``sparse_layer.py`` holds ``device = torch.device("cuda:0" if torch.cuda.is_available() else
"cpu")`` at its top and creates its noise and masks there; ``train_adv.py`` imports its ``SparseNet``
and chooses its own device with the same test. The imported module is a library module, so its
choice stays (asking the accelerator at import is what a fix must not do): on Trainium it keeps the
CPU. Rewritten alone, the importing module's choice would move the net and the batches to the
accelerator while the imported code's tensors stay on the CPU, where the two used to agree (read set
91). Such a choice stays with a note, until both are ported; where the same run rewrites the imported
module's choice too (a plain ``torch.device("cuda" if ... else "cpu")``: what ``check`` plans for that
module says so), the two agree and both are rewritten.
"""

from __future__ import annotations

import os
import re

from .module_kind import top_import_files
from .project_scan import per_file_version

#: ``NAME = <...> "cuda..." <...> .is_available() <...>`` at the top level of a module, on one line.
_TOP_CHOICE = re.compile(rb"""^[A-Za-z_]\w*[ \t]*(?::[^=\n]*)?=[^=\n][^\n]*(?:['"]cuda[:'"][^\n]*"""
                         rb"""\bis_available\(\)|\bis_available\(\)[^\n]*['"]cuda[:'"])""", re.MULTILINE)


def imported_device_note(ctx) -> str:
    """Why a CUDA-or-CPU device choice of the module stays: a project module it imports at its top
    chooses its own device with a CUDA test when imported (``path:line``), or ``""``. Asked once per
    module."""
    found = ctx.__dict__.get("_nrn_imported_device")
    if found is None:
        found = ""
        for path, module in top_import_files(ctx):
            line = _choice_line(path)
            if line and os.path.abspath(path) != os.path.abspath(ctx.path) and not _rewritten(ctx, path, line):
                shown = os.path.relpath(path, os.path.dirname(os.path.abspath(ctx.path))).replace(os.sep, "/")
                found = (f"`{module}` ({shown}:{line}) chooses its own device with a CUDA test when it is "
                         "imported, and this run leaves that choice as it is; rewritten alone, this one would "
                         "put its data on the accelerator while that module's stays on the CPU. Port the two "
                         "together")
                break
        ctx.__dict__["_nrn_imported_device"] = found
    return found


def _rewritten(ctx, path: str, line: int) -> bool:
    """Does this fix run rewrite the device choice on ``line`` of the module at ``path`` too (a
    definition of the module's ``device`` without an index: every module then agrees)?"""
    found = ctx.peers(path) if ctx.peers is not None else None
    return bool(found) and any(
        f.line == line and f.fix is not None and f.fix.fixer and (f.fix.applicability == "safe" or ctx.settings.unsafe_fixes)
        for f in found)


@per_file_version(missing=0)
def _choice_line(path: str) -> int:
    """The line of the first module-level CUDA-or-CPU device choice of the module at ``path``, or 0."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return 0
    if b"is_available()" not in data:
        return 0
    m = _TOP_CHOICE.search(data)
    return data.count(b"\n", 0, m.start()) + 1 if m else 0
