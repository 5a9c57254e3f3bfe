"""Conda ``environment*.yml``: the block-sequence layout conda writes, flow lists, a nested ``pip:`` list."""

from __future__ import annotations

import re
from typing import Iterator

from .entries import LOCAL_RE, Entry, normalize, strip_comment
from .requirements import pip_line

def yaml_scalar(raw: str) -> tuple[str, int]:
    """The value of a plain or quoted YAML scalar and its offset in ``raw``."""
    s = raw.strip()
    offset = len(raw) - len(raw.lstrip())
    if s[:1] in "\"'" and len(s) >= 2:
        quote = s[0]
        end = s.find(quote, 1)
        if end > 0:
            return s[1:end], offset + 1
    return strip_comment(s).strip(), offset


def _conda_spec(spec: str, line: int, col: int) -> Entry | None:
    """``pytorch=2.1.0=py3.10_cuda12.1_cudnn8_0``, ``nvidia::cuda-toolkit``, ``pytorch-cuda>=12``."""
    m = re.match(r"\s*(?:([^\s:]+)::)?([A-Za-z0-9_.-]+)\s*(.*)$", spec)
    if not m:
        return None
    tokens = m.group(3).split()
    if len(tokens) >= 2 and tokens[0][0] not in "=<>!~":  # `pytorch 2.1.0 py3.10_cuda12.1_0`
        rest = "=" + "=".join(tokens[:2])
    else:
        rest = "".join(tokens)
    parts = rest.lstrip("=<>!~").split("=") if rest else []
    build = parts[1] if rest.startswith("=") and len(parts) > 1 else ""
    local = LOCAL_RE.search(parts[0]) if parts else None
    stripped = spec.strip()
    return Entry("requirement", normalize(m.group(2)), build or (local.group(1) if local else ""), "", stripped,
                 line, col + 1, col + 1 + len(stripped))


def scan_conda(text: str) -> Iterator[Entry]:
    """Dependencies of a conda environment file, including its ``pip:`` list.

    Handles the block-sequence layout conda writes and documents (``- item`` lines, quoted or
    not, comments, one nested ``- pip:`` list) and one-line flow lists (``[a, b]``).
    """
    lines = text.splitlines()
    in_deps = False
    deps_indent = -1
    pip_indent = -1  # indentation of the "- pip:" item while inside its list
    for n, raw in enumerate(lines, 1):
        body = strip_comment(raw)
        if not body.strip() or body.strip() in ("---", "..."):
            continue
        indent = len(raw) - len(raw.lstrip())
        top = re.match(r"([A-Za-z_][\w-]*)\s*:\s*(.*)$", body) if indent == 0 else None
        if top:
            in_deps = top.group(1) == "dependencies"
            deps_indent, pip_indent = -1, -1
            flow = top.group(2).strip()
            if in_deps and flow.startswith("["):
                start = body.index("[") + 1
                for item in re.finditer(r"[^,\[\]]+", body[start:]):
                    value, off = yaml_scalar(item.group(0))
                    entry = _conda_spec(value, n, start + item.start() + off)
                    if value and entry:
                        yield entry
                in_deps = False
            continue
        if not in_deps:
            continue
        item = re.match(r"(\s*)-\s+(.*)$", body) or re.match(r"(\s*)-()$", body)
        if not item:
            continue
        if pip_indent >= 0 and indent <= pip_indent:
            pip_indent = -1
        value, off = yaml_scalar(item.group(2))
        col = item.start(2) + off  # 0-based
        if pip_indent >= 0:
            yield from pip_line(value, n, col + 1)
            continue
        if deps_indent < 0:
            deps_indent = indent
        if re.match(r"pip\s*:\s*$", value):
            pip_indent = indent
            continue
        if value:
            entry = _conda_spec(value, n, col)
            if entry is not None:
                yield entry
