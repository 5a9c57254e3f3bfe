"""Source lines to show next to a finding: from a file, a notebook's cell, or text in memory.

Read once per file for a whole output (the caller keeps the cache); a file that vanished or cannot
be decoded any more simply has no lines, and its findings are shown without them.
"""

from __future__ import annotations


def source_lines(path: str, cell: int, cache: dict, texts: dict | None = None) -> list[str] | None:
    """The lines of ``path`` (of cell ``cell`` in a notebook; 0 elsewhere). ``texts``: contents by
    path already in memory (standard input), used instead of the file."""
    if path not in cache:
        try:
            from .notebook import is_notebook, parse_notebook
            from .positions import split_lines
            from .source import decode

            if texts is not None and path in texts:
                data = texts[path]
            else:
                with open(path, "rb") as fh:
                    data = fh.read()
            if is_notebook(path):
                cache[path] = {c.number: split_lines(c.source) for c in parse_notebook(data).cells}
            else:
                cache[path] = {0: split_lines(decode(data).text)}
        except Exception:  # the source is a courtesy; a vanished file still gets its finding
            cache[path] = None
    return cache[path].get(cell) if cache[path] is not None else None
