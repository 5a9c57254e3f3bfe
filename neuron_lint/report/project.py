"""What the readiness report calls things: the project, its packages, and shares of a whole."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

TOP_LEVEL = "(top level)"
#: Folders that hold a project's packages rather than being one (the src layout).
SOURCE_FOLDERS = ("src",)


def _common_folder(roots: Iterable[str]) -> Path:
    folders = []
    for root in roots:
        absolute = os.path.abspath(root)
        folders.append(absolute if os.path.isdir(absolute) else os.path.dirname(absolute))
    try:
        return Path(os.path.commonpath(folders)) if folders else Path.cwd()
    except ValueError:  # different drives
        return Path.cwd()


def _declared_name(pyproject: Path) -> str | None:
    """``[project].name`` (or Poetry's ``[tool.poetry].name``) of a pyproject.toml, if it has one."""
    from ..config.files import tomllib
    from ..io.source import SourceError, read_source_bytes

    try:
        data = tomllib.loads(read_source_bytes(pyproject, 1024 * 1024).decode("utf-8"))
    except (OSError, SourceError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    for table in (data.get("project"), (data.get("tool") or {}).get("poetry") if isinstance(data.get("tool"), dict) else None):
        name = table.get("name") if isinstance(table, dict) else None
        if isinstance(name, str) and name.strip():
            return name.strip()
    return None


def project_name(roots: Iterable[str]) -> str:
    """The name the report gives the code: the ``[project] name`` of the nearest pyproject.toml, from
    the folder holding every path up to the repository root; else that folder's own name."""
    folder = _common_folder(list(roots) or ["."])
    for directory in (folder, *folder.parents):
        pyproject = directory / "pyproject.toml"
        if os.path.isfile(pyproject):
            name = _declared_name(pyproject)
            if name:
                return name
        if os.path.exists(directory / ".git"):
            break
    return folder.name or str(folder)


def package_of(rel: str) -> str:
    """The top-level package of a path relative to its root: its first folder, or in the src
    layout (``src/pkg/...``) the folder below ``src``."""
    parts = rel.split("/")
    if len(parts) > 2 and parts[0] in SOURCE_FOLDERS:
        return parts[1]
    return parts[0] if len(parts) > 1 and parts[0] not in SOURCE_FOLDERS else TOP_LEVEL


def shares(counts: dict[str, int]) -> dict[str, int]:
    """Whole percentages of ``counts`` that add up to exactly 100 (largest remainder); all 0 when empty."""
    total = sum(counts.values())
    if not total:
        return {key: 0 for key in counts}
    exact = {key: 100 * n / total for key, n in counts.items()}
    out = {key: int(value) for key, value in exact.items()}
    left = 100 - sum(out.values())
    order = sorted(counts, key=lambda key: (-(exact[key] - out[key]), list(counts).index(key)))
    for key in order[:left]:
        out[key] += 1
    return out
