"""Positions between the engine and the editor.

The engine counts 1-based lines and 1-based *character* columns (code points). LSP counts 0-based
lines and, by default, UTF-16 code units (``positionEncoding`` may instead be ``utf-8`` bytes or
``utf-32`` code points, when the client offers them and pygls picks them). Both split lines at
``\\n``, ``\\r\\n`` and ``\\r`` only (never at form feeds or ``\\u2028``, which ``str.splitlines``
would split at), so line numbers agree; only the columns need converting.

Every conversion goes through a character offset into the text, so a position at the end of a
line, on its line break, or after the last line break of the text lands where it should (an
insertion at the end of a file must not be pulled back before its final newline).
"""

from __future__ import annotations

import bisect

from lsprotocol import types

from ..io.positions import LineIndex

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


def code_units(text: str, encoding: str) -> int:
    """How many code units of ``encoding`` ``text`` takes."""
    if text.isascii():
        return len(text)
    if encoding == UTF32:
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)  # astral characters are surrogate pairs


def characters_for_units(line: str, units: int, encoding: str) -> int:
    """How many characters of ``line`` the first ``units`` code units cover (clamped to the line;
    a unit count that falls inside a character ends before it)."""
    if units <= 0:
        return 0
    if line.isascii() or encoding == UTF32:
        return min(units, len(line))
    used = 0
    for i, ch in enumerate(line):
        code = ord(ch)
        if encoding == UTF8:
            width = 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
        else:
            width = 2 if code > 0xFFFF else 1
        if used + width > units:
            return i
        used += width
    return len(line)


def encoding_name(kind) -> str:
    """The negotiated ``PositionEncodingKind`` (or None: UTF-16) as one of the names above."""
    value = getattr(kind, "value", kind)
    return value if value in (UTF8, UTF16, UTF32) else UTF16


class TextLines:
    """A text's lines, to convert offsets, engine positions and LSP positions."""

    def __init__(self, text: str, encoding: str = UTF16) -> None:
        self.text = text
        self.encoding = encoding
        self._index = LineIndex(text)

    @property
    def line_count(self) -> int:
        """Lines as LSP counts them: a final line break starts one more (empty) line."""
        lines = self._index.lines
        return len(lines) + 1 if not lines or lines[-1].endswith(("\n", "\r")) else len(lines)

    def _content(self, i: int) -> str:
        """0-based line ``i`` without its line break."""
        return self._index.lines[i].rstrip("\r\n") if i < len(self._index.lines) else ""

    def offset_of_engine(self, line: int, col: int) -> int:
        """Character offset of an engine position (1-based line and character column)."""
        lines = self._index.lines
        if line < 1:
            return 0
        if line > len(lines):
            return len(self.text)
        within = min(max(col, 1) - 1, len(lines[line - 1]))  # at most to the start of the next line
        return self._index.starts[line - 1] + within

    def position_at(self, offset: int) -> types.Position:
        """The LSP position of a character offset."""
        offset = max(0, min(offset, len(self.text)))
        starts, lines = self._index.starts, self._index.lines
        i = bisect.bisect_right(starts, offset) - 1
        if i >= len(lines):  # the end of the text
            if not lines:
                return types.Position(line=0, character=0)
            if lines[-1].endswith(("\n", "\r")):
                return types.Position(line=len(lines), character=0)
            i = len(lines) - 1
        content = self._content(i)
        within = min(offset - starts[i], len(content))  # on a line break: the end of the line
        return types.Position(line=i, character=code_units(content[:within], self.encoding))

    def engine_position(self, line: int, col: int) -> types.Position:
        return self.position_at(self.offset_of_engine(line, col))

    def engine_range(self, line: int, col: int, end_line: int, end_col: int) -> types.Range:
        return types.Range(start=self.engine_position(line, col), end=self.engine_position(end_line, end_col))

    def offset_at(self, position: types.Position) -> int:
        """The character offset of an LSP position (past the end of a line: its end; past the last
        line: the end of the text)."""
        lines = self._index.lines
        if position.line < 0:
            return 0
        if position.line >= len(lines):
            return len(self.text)
        content = self._content(position.line)
        return self._index.starts[position.line] + characters_for_units(content, position.character, self.encoding)


def apply_change(text: str, change, encoding: str) -> str:
    """``text`` after one ``TextDocumentContentChangeEvent`` (whole text, or a range and its text)."""
    change_range = getattr(change, "range", None)
    if change_range is None:
        return change.text
    lines = TextLines(text, encoding)
    start, end = lines.offset_at(change_range.start), lines.offset_at(change_range.end)
    if end < start:
        start, end = end, start
    return text[:start] + change.text + text[end:]


def ranges_touch(a: types.Range, b: types.Range) -> bool:
    """Whether two ranges overlap or meet (a cursor on either end of a finding counts)."""
    def key(p: types.Position) -> tuple[int, int]:
        return p.line, p.character

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)
