"""pygls's protocol, adjusted: the server keeps the documents, and the stdio streams are guarded.

pygls keeps its own copy of every open document and applies incremental changes to it with
``str.splitlines``, which also breaks lines at form feeds and ``\\u2028`` (LSP does not), so its
copy of such a file drifts from the editor's. Its built-in handlers for document and notebook
synchronisation are replaced here by ones that only pass the notification on to the server's
handlers, which keep the documents themselves (:mod:`.documents`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

from lsprotocol import types
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method


class NeuronLintProtocol(LanguageServerProtocol):
    def _to_server(self, method: str, params):
        handler = self.fm.features.get(method)
        if handler is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams):
        yield from self._to_server(types.TEXT_DOCUMENT_DID_OPEN, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        yield from self._to_server(types.TEXT_DOCUMENT_DID_CHANGE, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams):
        yield from self._to_server(types.TEXT_DOCUMENT_DID_CLOSE, params)

    @lsp_method(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def lsp_notebook_document__did_open(self, params: types.DidOpenNotebookDocumentParams):
        yield from self._to_server(types.NOTEBOOK_DOCUMENT_DID_OPEN, params)

    @lsp_method(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def lsp_notebook_document__did_change(self, params: types.DidChangeNotebookDocumentParams):
        yield from self._to_server(types.NOTEBOOK_DOCUMENT_DID_CHANGE, params)

    @lsp_method(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def lsp_notebook_document__did_close(self, params: types.DidCloseNotebookDocumentParams):
        yield from self._to_server(types.NOTEBOOK_DOCUMENT_DID_CLOSE, params)


def capability(caps, dotted: str, default=None):
    """A client capability by its dotted path (``workspace.configuration``), or ``default``."""
    value = caps
    for name in dotted.split("."):
        value = getattr(value, name, None)
        if value is None:
            return default
    return value


@contextmanager
def protocol_streams() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """Binary stdin and stdout for the protocol, with everything else kept off stdout.

    The protocol's stdout is a duplicate of file descriptor 1, and descriptor 1 itself then points
    at stderr: a stray ``print`` (ours, a library's, or C code's) lands in the log instead of
    corrupting the message stream. ``sys.stdout`` (the CLI's guarded stream) is put back afterwards.
    """
    stdin = sys.__stdin__.buffer if sys.__stdin__ is not None else sys.stdin.buffer
    saved_stdout = sys.stdout
    try:
        fd = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no stderr to point at: write to stdout as it is
        yield stdin, sys.__stdout__.buffer
        return
    out = os.fdopen(fd, "wb")
    sys.stdout = sys.stderr
    try:
        yield stdin, out
    finally:
        sys.stdout = saved_stdout
        try:
            out.close()
        except OSError:
            pass
