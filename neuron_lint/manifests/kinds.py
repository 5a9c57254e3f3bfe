"""Which files are manifests, and the parser for each kind."""

from __future__ import annotations

import os
from pathlib import Path

from .cog import scan_cog
from .conda import scan_conda
from .entries import Entry
from .pyproject import scan_pyproject
from .requirements import scan_requirements
from .setup_files import scan_setup_cfg, scan_setup_py

def manifest_kind(path: Path | str) -> str | None:
    """``requirements``, ``pyproject``, ``setup.py``, ``setup.cfg``, ``conda``, ``cog`` or None."""
    p = Path(path)
    name = p.name.lower()
    if name == "pyproject.toml":
        return "pyproject"
    if name == "setup.py":
        return "setup.py"
    if name == "setup.cfg":
        return "setup.cfg"
    if name.endswith(".txt") and ("requirements" in name or p.parent.name.lower() == "requirements"):
        return "requirements"
    if name.startswith("environment") and name.endswith((".yml", ".yaml")):
        return "conda"
    if name in ("cog.yaml", "cog.yml"):
        return "cog"
    return None


def manifest_files(directory: Path | str) -> list[Path]:
    """The dependency manifests directly in ``directory`` (and in its ``requirements/`` folder)."""
    directory = Path(directory)
    found: list[Path] = []
    for folder in (directory, directory / "requirements"):
        try:
            names = sorted(e.name for e in os.scandir(folder) if e.is_file())
        except OSError:
            continue
        found.extend(folder / n for n in names if manifest_kind(folder / n) is not None)
    return found


SCANNERS = {
    "requirements": scan_requirements,
    "pyproject": scan_pyproject,
    "setup.py": scan_setup_py,
    "setup.cfg": scan_setup_cfg,
    "conda": scan_conda,
    "cog": scan_cog,
}


def scan_text(text: str, kind: str) -> list[Entry]:
    """Every entry of a manifest of the given kind. Raises ValueError/SyntaxError on unreadable files."""
    return list(SCANNERS[kind](text))
