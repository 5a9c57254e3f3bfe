"""``requirements*.txt``: one pip line at a time (also the ``pip:`` list of a conda file)."""

from __future__ import annotations

import re
from typing import Iterator

from .entries import URL_RE, Entry, index_entry, normalize, requirement, strip_comment

_INDEX_OPTS = ("--index-url", "--extra-index-url", "--find-links", "-i", "-f")
_OPT_RE = re.compile(r"(--index-url|--extra-index-url|--find-links|-i|-f)(?:\s*=\s*|\s+)(\S+)")


def pip_line(content: str, line: int, col: int) -> Iterator[Entry]:
    """Entries in one logical pip line (already without its comment), starting at ``col``."""
    stripped = content.strip()
    if not stripped:
        return
    if stripped.startswith("-"):
        m = _OPT_RE.search(content)
        if m and content.lstrip().startswith(m.group(1)):
            yield index_entry(m.group(2), line, col + m.start(2))
        elif stripped.startswith(("-e ", "--editable")):
            target = stripped.split(None, 1)[1] if " " in stripped else ""
            if URL_RE.match(target) and "#egg=" in target:
                name = normalize(target.split("#egg=", 1)[1].split("&")[0])
                start = col + content.index(target)
                yield Entry("requirement", name, "", target, target, line, start, start + len(target))
        return  # -r, -c, --hash-only lines, --pre, ...
    # per-requirement options (`--hash=...`, `--config-settings`) follow the requirement
    cut = re.search(r"\s--?[a-z]", content)
    req = content[: cut.start()] if cut else content
    entry = requirement(req, line, col)
    if entry is not None:
        yield entry


def scan_requirements(text: str) -> Iterator[Entry]:
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start = i
        content = strip_comment(lines[i])
        # a trailing backslash continues the logical line; report at the first physical line
        while content.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            content = content.rstrip()[:-1] + " " + strip_comment(lines[i]).strip()
        yield from pip_line(content, start + 1, 1)
        i += 1
