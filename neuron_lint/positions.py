"""Convert between ast positions (1-based line, UTF-8 byte column) and character columns."""

from __future__ import annotations

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

    def line(self, lineno: int) -> str:
        """Line text without its ending (1-based); empty past the end."""
        if 1 <= lineno <= len(self.lines):
            return self.lines[lineno - 1].rstrip("\r\n")
        return ""

    def char_col(self, lineno: int, byte_col: int) -> int:
        """0-based character column for an ast byte offset."""
        line = self.line(lineno)
        if line.isascii():
            return byte_col
        return len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def offset(self, lineno: int, col: int) -> int:
        """Character offset in the text of a 1-based line and 1-based character column."""
        if lineno > len(self.lines):
            return len(self.text)
        return self.starts[lineno - 1] + col - 1

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a character offset."""
        import bisect

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
