"""The module text the engine checks, and the way back from it to the editor's documents.

A Python document is checked as it is (:class:`DocumentView`). A notebook's code cells are joined
into one module (:func:`neuron_lint.io.notebook.join_cells`: magics masked, a separator line between
cells) and checked once, so that an import in one cell is known in the next
(:class:`NotebookView`); a position in the joined module is mapped back to its cell. Either way a
view turns engine positions into LSP ranges of the right document, and a changed module text
into the text edits of each document that changed.
"""

from __future__ import annotations

from lsprotocol import types

from ..io.positions import LineIndex
from ..io.source import dominant_newline
from ..model import Edit
from .documents import Document, Unit
from .text import TextLines


def apply_engine_edits(text: str, edits) -> str:
    """``text`` with the engine's edits (1-based line, character column) carried out."""
    index = LineIndex(text)
    spans = sorted(((index.offset(e.line, e.col), index.offset(e.end_line, e.end_col), e.content) for e in edits),
                   reverse=True)
    for start, end, content in spans:
        text = text[:start] + content + text[end:]
    return text


def _minimal_edits(old: str, new: str) -> tuple[Edit, ...]:
    from ..fixes.edits import minimal_edits

    return minimal_edits(old, new)


def _text_edit(lines: TextLines, edit: Edit) -> types.TextEdit:
    return types.TextEdit(range=lines.engine_range(edit.line, edit.col, edit.end_line, edit.end_col), new_text=edit.content)


class DocumentView:
    """A Python document, checked as it is."""

    is_notebook = False

    def __init__(self, doc: Document, encoding: str) -> None:
        self.doc = doc
        self.text = doc.text
        self.lines = TextLines(doc.text, encoding)
        self.documents = {doc.uri: doc}
        self.newline = dominant_newline(doc.text)

    def locate(self, line: int, col: int, end_line: int, end_col: int) -> tuple[str, types.Range]:
        return self.doc.uri, self.lines.engine_range(line, col, end_line, end_col)

    def edits_for_fix(self, edits: tuple[Edit, ...]) -> dict[str, list[types.TextEdit]]:
        """The engine's edits of one fix, as LSP text edits."""
        return {self.doc.uri: [_text_edit(self.lines, e) for e in edits]}

    def edits_for_text(self, new_text: str) -> dict[str, list[types.TextEdit]] | None:
        """Text edits that turn the document into ``new_text``."""
        if new_text == self.text:
            return {}
        return {self.doc.uri: [_text_edit(self.lines, e) for e in _minimal_edits(self.text, new_text)]}


class NotebookView:
    """A notebook's Python code cells, joined into one module."""

    is_notebook = True
    newline = "\n"

    def __init__(self, cells: tuple[Document, ...], encoding: str) -> None:
        from ..io.notebook import join_cells

        self.cells = cells
        self.joined = join_cells([c.text for c in cells])
        self.text = self.joined.text
        self.cell_lines = [TextLines(c.text, encoding) for c in cells]
        self.documents = {c.uri: c for c in cells}

    def locate(self, line: int, col: int, end_line: int, end_col: int) -> tuple[str, types.Range]:
        """The cell of a module span and the span in it (a span running into a later cell, which
        only unbalanced brackets can make, ends at the end of its first cell)."""
        if not self.cells:
            return "", types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0))
        cell, cell_line = self.joined.locate(max(line, 1))
        end_cell, end_cell_line = self.joined.locate(max(end_line, 1))
        lines = self.cell_lines[cell]
        start = lines.engine_position(cell_line, col)
        if end_cell != cell:
            end = lines.position_at(len(lines.text))
        else:
            end = lines.engine_position(end_cell_line, end_col)
        return self.cells[cell].uri, types.Range(start=start, end=end)

    def edits_for_fix(self, edits: tuple[Edit, ...]) -> dict[str, list[types.TextEdit]] | None:
        return self.edits_for_text(apply_engine_edits(self.text, edits))

    def edits_for_text(self, new_text: str) -> dict[str, list[types.TextEdit]] | None:
        """Text edits for each cell the new module text changes; None when the new text cannot be
        split back into the cells (a fix moved a separator)."""
        sources = self.joined.split(new_text)
        if sources is None or len(sources) != len(self.cells):
            return None
        out: dict[str, list[types.TextEdit]] = {}
        for cell, lines, source in zip(self.cells, self.cell_lines, sources):
            old = cell.text
            if "\r" in old:  # the join wrote "\n"; give the cell its own line ends back
                source = source.replace("\n", dominant_newline(old))
            if source != old:
                out[cell.uri] = [_text_edit(lines, e) for e in _minimal_edits(old, source)]
        return out


def view_of(unit: Unit, encoding: str) -> DocumentView | NotebookView:
    if unit.is_notebook:
        return NotebookView(unit.documents, encoding)
    return DocumentView(unit.documents[0], encoding)
