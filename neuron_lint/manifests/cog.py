"""Replicate Cog's ``cog.yaml``: the pip requirement strings of ``build.python_packages``.

BLIP's ``cog.yaml`` pins ``torch==1.10.0`` there, the only place the project names its torch.
The list is a YAML block sequence (``- "torch==1.10.0"``, quoted or not, at the key's indentation
or deeper) or a one-line flow list (``python_packages: ["torch==2.1"]``); every other key is
passed over (``python_requirements:`` names a requirements file, which is read as one itself).
"""

from __future__ import annotations

import re
from typing import Iterator

from .conda import yaml_scalar
from .entries import Entry, strip_comment
from .requirements import pip_line

_KEY = re.compile(r"(\s*)python_packages\s*:\s*(.*)$")


def scan_cog(text: str) -> Iterator[Entry]:
    """The requirements listed under ``python_packages`` in a ``cog.yaml``."""
    key_indent = -1  # indentation of the `python_packages:` key while inside its list
    for n, raw in enumerate(text.splitlines(), 1):
        body = strip_comment(raw)
        if not body.strip():
            continue
        indent = len(body) - len(body.lstrip())
        item = re.match(r"(\s*)-\s+(.*)$", body)
        if key_indent >= 0 and item and indent >= key_indent:
            value, off = yaml_scalar(item.group(2))
            yield from pip_line(value, n, item.start(2) + off + 1)
            continue
        key_indent = -1
        key = _KEY.match(body)
        if not key:
            continue
        flow = key.group(2).strip()
        if not flow:
            key_indent = len(key.group(1))
        elif flow.startswith("["):
            start = body.index("[") + 1
            for part in re.finditer(r"[^,\[\]]+", body[start:]):
                value, off = yaml_scalar(part.group(0))
                if value:
                    yield from pip_line(value, n, start + part.start() + off + 1)
