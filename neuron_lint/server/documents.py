"""The documents the editor has open, as the editor has them (not as they are on disk).

The server keeps its own copy rather than pygls's workspace: changes are applied with LSP's line
rules and the negotiated position encoding (:mod:`.text`), and every change bumps a *revision* so
that a result computed for older text is recognised as stale. A notebook is a list of cells, each
a text document of its own; the notebook's revision changes with any of them.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field, replace
from urllib.parse import unquote, urlparse

from .text import apply_change

PYTHON = "python"
_revisions = itertools.count(1)


#: The scheme VS Code gives a notebook cell sent as a text document of its own (by a client that
#: does not sync notebooks): its path is the notebook's.
CELL_SCHEME = "vscode-notebook-cell"


def uri_to_path(uri: str) -> str | None:
    """The file system path of a ``file:`` URI (or of a cell's notebook); None for other schemes
    (``untitled:``...)."""
    parsed = urlparse(uri)
    if parsed.scheme not in ("file", CELL_SCHEME):
        return None
    path = unquote(parsed.path)
    if parsed.netloc and parsed.netloc != "localhost":  # a UNC path: //server/share/...
        path = f"//{parsed.netloc}{path}"
    if os.name == "nt" and len(path) >= 3 and path[0] == "/" and path[2] == ":":
        path = path[1:]
    return path


@dataclass
class Document:
    uri: str
    language_id: str
    version: int | None
    text: str
    revision: int = field(default_factory=lambda: next(_revisions))
    notebook: str | None = None  # the notebook's URI, for a cell

    @property
    def path(self) -> str | None:
        return uri_to_path(self.uri)

    @property
    def is_python(self) -> bool:
        return self.language_id == PYTHON


@dataclass
class Notebook:
    uri: str
    notebook_type: str
    version: int | None
    cells: list[str]  # the cells' document URIs, in order
    code: set[str] = field(default_factory=set)  # which of them are code cells
    revision: int = field(default_factory=lambda: next(_revisions))

    @property
    def path(self) -> str | None:
        return uri_to_path(self.uri)


@dataclass(frozen=True)
class Unit:
    """What is checked as one module: a Python document, or a notebook's Python code cells."""

    key: str  # the document's or the notebook's URI
    revision: int
    path: str | None
    documents: tuple[Document, ...]  # one document; or the code cells, in order
    is_notebook: bool = False


class DocumentStore:
    """Open documents and notebooks, by URI. Used from the event loop's thread only."""

    def __init__(self, encoding: str = "utf-16") -> None:
        self.encoding = encoding
        self.documents: dict[str, Document] = {}
        self.notebooks: dict[str, Notebook] = {}

    # ------------------------------------------------------------- text documents
    def open(self, uri: str, language_id: str, version: int | None, text: str, notebook: str | None = None) -> Document:
        doc = Document(uri, language_id, version, text, notebook=notebook)
        self.documents[uri] = doc
        return doc

    def change(self, uri: str, version: int | None, changes) -> Document | None:
        doc = self.documents.get(uri)
        if doc is None:
            return None
        for change in changes:
            doc.text = apply_change(doc.text, change, self.encoding)
        doc.version = version
        doc.revision = next(_revisions)
        if doc.notebook in self.notebooks:
            self.notebooks[doc.notebook].revision = next(_revisions)
        return doc

    def close(self, uri: str) -> Document | None:
        return self.documents.pop(uri, None)

    # ------------------------------------------------------------- notebooks
    def open_notebook(self, params) -> Notebook:
        nb = params.notebook_document
        notebook = Notebook(nb.uri, nb.notebook_type, nb.version, [c.document for c in nb.cells],
                            {c.document for c in nb.cells if _is_code(c)})
        self.notebooks[nb.uri] = notebook
        for item in params.cell_text_documents:
            self.open(item.uri, item.language_id, item.version, item.text, notebook=nb.uri)
        return notebook

    def change_notebook(self, params) -> tuple[Notebook | None, list[str]]:
        """Apply a ``notebookDocument/didChange``; the notebook and the URIs of cells it closed."""
        notebook = self.notebooks.get(params.notebook_document.uri)
        if notebook is None:
            return None, []
        notebook.version = params.notebook_document.version
        cells = params.change.cells
        closed: list[str] = []
        if cells is not None:
            if cells.structure is not None:
                closed = self._restructure(notebook, cells.structure)
            for data in cells.data or ():
                (notebook.code.add if _is_code(data) else notebook.code.discard)(data.document)
            for content in cells.text_content or ():
                self.change(content.document.uri, content.document.version, content.changes)
        notebook.revision = next(_revisions)
        return notebook, closed

    def _restructure(self, notebook: Notebook, structure) -> list[str]:
        array = structure.array
        added = [c.document for c in array.cells or ()]
        notebook.cells[array.start:array.start + array.delete_count] = added
        for cell in array.cells or ():
            (notebook.code.add if _is_code(cell) else notebook.code.discard)(cell.document)
        for item in structure.did_open or ():
            self.open(item.uri, item.language_id, item.version, item.text, notebook=notebook.uri)
        closed = [item.uri for item in structure.did_close or ()]
        for uri in closed:
            self.close(uri)
            notebook.code.discard(uri)
        return closed

    def close_notebook(self, uri: str) -> Notebook | None:
        notebook = self.notebooks.pop(uri, None)
        if notebook is not None:
            for cell in notebook.cells:
                self.close(cell)
        return notebook

    # ------------------------------------------------------------- what is checked
    def unit(self, key: str) -> Unit | None:
        """The unit a document or notebook URI stands for, as it is now (copies: the engine's thread
        reads them while the editor goes on changing the originals); None if nothing to check."""
        notebook = self.notebooks.get(key)
        if notebook is not None:
            cells = tuple(replace(self.documents[c]) for c in notebook.cells
                          if c in notebook.code and c in self.documents and self.documents[c].is_python)
            return Unit(key, notebook.revision, notebook.path, cells, is_notebook=True)
        doc = self.documents.get(key)
        if doc is None or doc.notebook is not None or not doc.is_python:
            return None
        lone_cell = urlparse(key).scheme == CELL_SCHEME  # checked as a one-cell notebook: magics masked
        return Unit(key, doc.revision, doc.path, (replace(doc),), is_notebook=lone_cell)

    def unit_key_for(self, uri: str) -> str | None:
        """The key of the unit ``uri`` belongs to (a cell belongs to its notebook)."""
        doc = self.documents.get(uri)
        if doc is not None and doc.notebook is not None:
            return doc.notebook
        return uri if uri in self.documents or uri in self.notebooks else None

    def unit_keys(self) -> list[str]:
        """Every unit that can be checked now."""
        plain = [uri for uri, d in self.documents.items() if d.notebook is None and d.is_python]
        return plain + list(self.notebooks)


def _is_code(cell) -> bool:
    kind = getattr(cell.kind, "value", cell.kind)
    return kind == 2  # NotebookCellKind.Code (1 is Markup)
