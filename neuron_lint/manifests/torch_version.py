"""The project's torch: the oldest version its manifests declare."""

from __future__ import annotations

import re
from pathlib import Path

from .entries import REQ_RE, Entry
from .kinds import manifest_files, manifest_kind, scan_text

#: Requirement names of PyTorch itself (``pytorch`` is conda's name for it).
TORCH_NAMES = ("torch", "pytorch")
#: Version operators that set a lower bound (``=`` and a bare version are conda's ``==``).
_LOWER_OPS = ("~=", "===", "==", ">=", ">", "=")
_CLAUSE_RE = re.compile(r"\s*(~=|===|==|!=|<=|>=|<|>|=)?\s*v?(\d+(?:\.\d+){0,2})")
#: Manifests read for the project's torch (requirement files also inside a ``requirements/`` folder).
MANIFEST_READ_LIMIT = 1024 * 1024


def torch_lower_bound(entry: Entry) -> tuple[int, ...] | None:
    """The lowest torch version ``entry`` allows, or None (not torch, no lower bound, a URL).

    ``torch>=2.4,<3`` -> (2, 4); ``torch==2.4.1+cu121`` -> (2, 4, 1); ``torch~=2.6`` -> (2, 6);
    ``torch>2.5`` -> (2, 5) (the bound itself is taken: "newer than 2.5" includes 2.5.1);
    ``pytorch=2.1.0=py3.10_cuda12.1_0`` (conda) -> (2, 1, 0); ``torch``, ``torch<3`` -> None.
    """
    if entry.kind != "requirement" or entry.name not in TORCH_NAMES or entry.url:
        return None
    text = entry.text.split("::", 1)[-1]  # a conda channel: nvidia::pytorch
    m = REQ_RE.match(text)
    if not m:
        return None
    rest = text[m.end():].split(";", 1)[0].strip().strip("()")
    if not rest or rest.startswith("@"):
        return None
    if re.match(r"\d", rest):  # conda: `pytorch 2.1.0 build`
        rest = "=" + rest.split()[0]
    bounds = []
    for clause in rest.split(","):
        c = _CLAUSE_RE.match(clause)
        if c and (c.group(1) or "=") in _LOWER_OPS:
            bounds.append(tuple(int(p) for p in c.group(2).split(".")))
    return max(bounds) if bounds else None


def declared_torch(directory: Path | str) -> tuple[tuple[int, ...], str] | None:
    """The oldest torch the project in ``directory`` declares, and where: ``((2, 4), "pyproject.toml: torch>=2.4")``.

    Reads every manifest of :func:`manifest_files` with the scanners above (``[project]``
    dependencies and extras, requirement files, ``setup.py``/``setup.cfg`` requirements, conda
    environments) and takes the lowest lower bound of a ``torch`` requirement: the fixed code must
    run on every version the project says it supports. None when no requirement bounds torch
    from below. Unreadable or malformed manifests are passed over (``check`` reports them).
    """
    from ..io.source import decode, read_source_bytes

    best: tuple[tuple[int, ...], str] | None = None
    for path in manifest_files(directory):
        kind = manifest_kind(path)
        try:
            data = read_source_bytes(path, MANIFEST_READ_LIMIT)
            text = decode(data).text if kind == "setup.py" else data.decode("utf-8-sig")
            entries = scan_text(text, kind)
        except Exception:  # a pipe, a huge file, bad TOML, a setup.py that does not parse...
            continue
        for entry in entries:
            bound = torch_lower_bound(entry)
            if bound is not None and (best is None or bound < best[0]):
                rel = path.name if path.parent == Path(directory) else f"{path.parent.name}/{path.name}"
                best = (bound, f"{rel}: {entry.text}")
    return best
