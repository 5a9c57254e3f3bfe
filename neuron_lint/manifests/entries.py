"""What every manifest parser produces: an :class:`Entry`, and the requirement-string grammar they share."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["Entry", "normalize", "requirement", "index_entry", "strip_comment", "tomllib"]


@dataclass(frozen=True)
class Entry:
    """One dependency or index URL in a manifest; columns are 1-based characters, end exclusive."""

    kind: str  # "requirement" | "index"
    name: str  # normalized package name ("" for an index)
    local: str  # local version label or conda build string ("" if none)
    url: str  # index / direct URL ("" if none)
    text: str  # what the user wrote (shown in messages)
    line: int
    col: int
    end_col: int


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


REQ_RE = re.compile(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(\[[^\]]*\])?")
LOCAL_RE = re.compile(r"\+([A-Za-z0-9][A-Za-z0-9._]*)")
_WHEEL_RE = re.compile(r"([A-Za-z0-9][A-Za-z0-9._]*?)-(\d[^-/]*?)(?:-[^/]*)?\.(?:whl|tar\.gz|zip)$")
URL_RE = re.compile(r"[a-z][a-z0-9+.-]*://\S+", re.I)


def requirement(text: str, line: int, col: int) -> Entry | None:
    """An Entry for a PEP 508 requirement (or a bare wheel URL) starting at ``col`` on ``line``."""
    stripped = text.strip()
    if not stripped:
        return None
    col += len(text) - len(text.lstrip())
    end = col + len(stripped)
    url_match = URL_RE.match(stripped)
    if url_match:  # a bare URL: name and version come from the file name
        url = url_match.group(0)
        wheel = _WHEEL_RE.search(url.split("#")[0])
        name = normalize(wheel.group(1)) if wheel else ""
        local = LOCAL_RE.search(wheel.group(2).replace("%2B", "+")) if wheel else None
        return Entry("requirement", name, local.group(1) if local else "", url, stripped, line, col, end)
    m = REQ_RE.match(stripped)
    if not m:
        return None
    rest = stripped[m.end():].split(";", 1)[0]
    url = ""
    if rest.lstrip().startswith("@"):
        url = rest.lstrip()[1:].strip().split()[0] if rest.lstrip()[1:].strip() else ""
        wheel = _WHEEL_RE.search(url.split("#")[0])
        local = LOCAL_RE.search(wheel.group(2).replace("%2B", "+")) if wheel else None
    else:
        local = LOCAL_RE.search(rest)
    return Entry("requirement", normalize(m.group(1)), local.group(1) if local else "", url, stripped, line, col, end)


def index_entry(url: str, line: int, col: int) -> Entry:
    return Entry("index", "", "", url, url, line, col, col + len(url))


_COMMENT_RE = re.compile(r"(^|\s)#")


def strip_comment(line: str) -> str:
    m = _COMMENT_RE.search(line)
    return line[: m.start()] if m else line
