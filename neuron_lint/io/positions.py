"""Convert between ast positions (1-based line, UTF-8 byte column) and character columns."""

from __future__ import annotations

import bisect
import re

_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """Lines as Python numbers them: only \\n, \\r\\n and \\r end a line.

    ``str.splitlines`` also breaks at form feeds, vertical tabs, \\x1c-\\x1e, \\x85 and
    \\u2028/\\u2029, which would shift every later line number.
    """
    lines = _LINE_RE.findall(text)
    return lines if keepends else [line.rstrip("\r\n") for line in lines]


class LineIndex:
    """Lines split exactly as the tokenizer splits them (\\n, \\r\\n, \\r; not form feeds)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines: list[str] = _LINE_RE.findall(text)
        self.starts: list[int] = []
        pos = 0
        for line in self.lines:
            self.starts.append(pos)
            pos += len(line)
        self.starts.append(pos)
        # line number -> None (ASCII) or the byte ends and running extra bytes of its wider characters
        self._wide: dict[int, tuple[list[int], list[int]] | None] = {}

    def line(self, lineno: int) -> str:
        """Line text without its ending (1-based); empty past the end."""
        if 1 <= lineno <= len(self.lines):
            return self.lines[lineno - 1].rstrip("\r\n")
        return ""

    def char_col(self, lineno: int, byte_col: int) -> int:
        """0-based character column for an ast byte offset.

        Each line is measured once, so many findings on one long line cost O(log n) each, not
        a re-encoding of the line per finding (a minified line with 10,000 calls took minutes).
        """
        if lineno in self._wide:
            table = self._wide[lineno]
        else:
            table = self._wide[lineno] = _wide_characters(self.line(lineno))
        if table is None:
            return byte_col
        ends, extra = table
        i = bisect.bisect_right(ends, byte_col)
        return byte_col - (extra[i - 1] if i else 0)

    def offset(self, lineno: int, col: int) -> int:
        """Character offset in the text of a 1-based line and 1-based character column."""
        if lineno > len(self.lines):
            return len(self.text)
        return self.starts[lineno - 1] + col - 1

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a character offset."""
        i = bisect.bisect_right(self.starts, offset) - 1
        i = max(0, min(i, len(self.lines) - 1)) if self.lines else 0
        return i + 1, offset - (self.starts[i] if self.starts else 0) + 1

    def node_span(self, node) -> tuple[int, int, int, int]:
        """1-based (line, col, end_line, end_col) of an ast node, columns in characters."""
        line, end_line = node.lineno, node.end_lineno or node.lineno
        col = self.char_col(line, node.col_offset) + 1
        end_col = self.char_col(end_line, node.end_col_offset if node.end_col_offset is not None else node.col_offset) + 1
        return line, col, end_line, end_col

    def segment(self, node) -> str:
        line, col, end_line, end_col = self.node_span(node)
        return self.text[self.offset(line, col): self.offset(end_line, end_col)]


def _wide_characters(line: str) -> tuple[list[int], list[int]] | None:
    """None for an ASCII line; else, for each character wider than one UTF-8 byte, the byte offset
    just after it and the extra bytes of all such characters up to it."""
    if line.isascii():
        return None
    ends: list[int] = []
    extra: list[int] = []
    pos = total = 0
    for ch in line:
        code = ord(ch)
        width = 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
        pos += width
        if width > 1:
            total += width - 1
            ends.append(pos)
            extra.append(total)
    return ends, extra
