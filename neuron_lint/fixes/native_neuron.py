"""Whether the project a file belongs to already has a native Neuron path of its own.

neuron-lint rewrites legacy torch_xla code (``xm.xla_device()``, ``xm.mark_step()``, ``"xla"``
device types...) into native TorchNeuron code, on the view that torch_xla code in a project is
its Trainium path. That view is wrong in a project that supports several XLA devices and already
reaches Trainium natively: Hugging Face accelerate asks whether Neuron is available (its
``is_..._available()`` helpers) and has a multi-Neuron mode, while its torch_xla branches serve TPUs. Rewritten, those branches send TPU
runs to the Neuron device (and to APIs TPUs do not have), so there the legacy-XLA fixes are not
offered, unless ``--device neuron`` says the code is meant for Trainium.

The evidence is looked for in the project's Python files (the folder up from the file that holds
``pyproject.toml``, ``setup.py``, ``setup.cfg`` or ``.git``), once per project and process, and
only when a legacy-XLA fix is planned. It is code that neuron-lint itself never writes (see
``_EVIDENCE``: a Neuron availability test, a multi-Neuron mode, an attribute of the ``torch``
Neuron module), so a fix run cannot change the answer half-way. (This file spells the patterns
so that they do not match themselves.)
"""

from __future__ import annotations

import os
import re

from .project_scan import project_memo, project_root, python_files

_EVIDENCE = re.compile(rb"\bis_\w*neuron\w*_available\b|\bMULTI_NEU" rb"RON\b|\btorch\.neu" rb"ron\.\w+")


def native_neuron_evidence(path: str) -> str:
    """``"file:line (text)"`` of the first native-Neuron code in ``path``'s project, or ``""``."""
    if not path or path.startswith("<") or not os.path.isfile(path):
        return ""  # text that is not a file of a project (stdin, a test's snippet)
    root = project_root(path)
    return _scan(root) if root else ""


@project_memo(32)
def native_neuron_note(path: str) -> str:
    """Why the legacy-XLA code of the project around ``path`` stays (the note), or ``""``."""
    evidence = native_neuron_evidence(path)
    if not evidence:
        return ""
    return (f"not rewritten: this project already reaches Trainium natively ({evidence}), so its "
            "torch_xla code serves other XLA devices (TPU) and stays; fix with `--device neuron` "
            "if it is meant for Trainium")


def _scan(root: str) -> str:
    for full, data in python_files(root):
        for m in _EVIDENCE.finditer(data):
            start = data.rfind(b"\n", 0, m.start()) + 1
            if b"#" in data[start:m.start()]:
                continue  # in a comment
            line = data.count(b"\n", 0, m.start()) + 1
            rel = os.path.relpath(full, root)
            return f"`{m.group().decode()}` in {rel}:{line}"
    return ""
