"""The language server: LSP requests and notifications in, diagnostics and code actions out.

Documents are checked from the editor's text (:mod:`.documents`), with the settings of their
project (:mod:`.document_settings`), on one worker thread and debounced (:mod:`.scheduler`);
findings become diagnostics (:mod:`.diagnostics`) and fixes become code actions (:mod:`.actions`).
"""

from __future__ import annotations

import logging
import os
import sys
import threading

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from .. import __version__
from .actions import CodeActions
from .analysis import Analysis, Engine
from .diagnostics import SOURCE, findings_to_diagnostics, syntax_error_diagnostics
from .document_settings import SettingsCache, editor_options, is_config_file
from .documents import DocumentStore, uri_to_path
from .protocol import NeuronLintProtocol, capability, protocol_streams
from .scheduler import Scheduler
from .text import encoding_name

logger = logging.getLogger(__name__)

NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[types.NotebookDocumentFilterWithCells(
        notebook="jupyter-notebook", cells=[types.NotebookCellLanguage(language="python")])],
)


class NeuronLintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(SOURCE, __version__, protocol_cls=NeuronLintProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         notebook_document_sync=NOTEBOOK_SYNC)
        self.store = DocumentStore()
        self.settings_cache = SettingsCache()
        self.engine = Engine(self.settings_cache)
        self.scheduler = Scheduler(self.engine, self.store, self.publish)
        self.shutdown_requested = False
        self._published: dict[str, set[str]] = {}  # unit -> the URIs it last published diagnostics for
        self._said: set[str] = set()  # messages already shown to the user
        self.code_actions = CodeActions(self)
        from .handlers import register

        register(self)

    # ------------------------------------------------------------- client capabilities
    @property
    def resolves_edits(self) -> bool:
        props = capability(self.client_capabilities, "text_document.code_action.resolve_support.properties", [])
        return "edit" in props

    @property
    def takes_document_changes(self) -> bool:
        return bool(capability(self.client_capabilities, "workspace.workspace_edit.document_changes", False))

    def initialize(self, params: types.InitializeParams) -> None:
        encoding = encoding_name(self.workspace.position_encoding)
        self.store.encoding = self.engine.encoding = encoding
        root = self.workspace.root_path or next(iter(uri_to_path(u) for u in self.workspace.folders), None)
        self.engine.root = root
        self.settings_cache.editor = editor_options(params.initialization_options)

    # ------------------------------------------------------------- diagnostics
    def publish(self, analysis: Analysis) -> None:
        """Send the diagnostics of a result (on the event loop), clearing those of cells it no longer has."""
        if analysis.failure:
            self.log(f"internal error while checking {analysis.unit.key}: {analysis.failure} (please report it)",
                     types.MessageType.Error)
        if analysis.settings.error:
            self.tell_once(analysis.settings.error, types.MessageType.Warning)
        by_uri = diagnostics_of(analysis, self.engine)
        key = analysis.unit.key
        for uri in self._published.get(key, set()) - set(by_uri):
            self.clear_diagnostics(uri)
        self._published[key] = set(by_uri)
        for uri, diagnostics in by_uri.items():
            version = analysis.view.documents[uri].version if uri in analysis.view.documents else None
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version))

    def clear_diagnostics(self, uri: str) -> None:
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def forget(self, key: str) -> None:
        """A document or notebook was closed: no more work for it, and its diagnostics go."""
        self.scheduler.forget(key)
        self.code_actions.forget(key)
        for uri in self._published.pop(key, {key}):
            self.clear_diagnostics(uri)

    def recheck_all(self) -> None:
        """Settings changed: every open document is checked again with them."""
        self.scheduler.drop_results()
        self.code_actions.forget()
        for key in self.store.unit_keys():
            self.scheduler.check_now(key)

    def settings_changed(self) -> None:
        self.settings_cache.clear()
        self._said.clear()  # a configuration file still broken after the change is said again
        self.recheck_all()

    def note_saved_or_changed_file(self, path: str | None) -> bool:
        """A file was saved or changed on disk; True if every open document is being checked again: a
        configuration file changed, or a Python file (or a YAML configuration naming modules) that may
        change what other modules' fixes read of the project as a whole (another module asks for NCCL
        by name, turns TF32 off): those reads start afresh."""
        if is_config_file(path):
            self.settings_changed()
            return True
        if path and path.endswith((".py", ".yaml", ".yml")):
            from ..fixes.project_scan import forget_project_reads

            forget_project_reads()
            self.recheck_all()
            return True
        return False

    # ------------------------------------------------------------- messages to the user
    def log(self, text: str, kind: types.MessageType = types.MessageType.Info) -> None:
        logger.log(logging.ERROR if kind == types.MessageType.Error else logging.INFO, "%s", text)
        self.window_log_message(types.LogMessageParams(type=kind, message=text))

    def tell_once(self, text: str, kind: types.MessageType) -> None:
        """Show a message in the editor and its log, once per text until the settings change (a
        broken configuration file is not news at every keystroke)."""
        if text in self._said:
            return
        self._said.add(text)
        self.window_log_message(types.LogMessageParams(type=kind, message=f"neuron-lint: {text}"))
        self.window_show_message(types.ShowMessageParams(type=kind, message=f"neuron-lint: {text}"))

    # ------------------------------------------------------------- stopping
    def shutdown(self) -> None:
        """Stop without waiting for the thread blocked reading stdin (it ends with the process)."""
        self.scheduler.close()
        if self._stop_event is not None:
            self._stop_event.set()
        if self._thread_pool is not None:
            self._thread_pool.shutdown(wait=False, cancel_futures=True)


def diagnostics_of(analysis: Analysis, engine: Engine) -> dict[str, list[types.Diagnostic]]:
    if analysis.skipped or analysis.failure:
        return {uri: [] for uri in analysis.view.documents}
    if analysis.error is not None:
        return syntax_error_diagnostics(analysis.error, analysis.view)
    return findings_to_diagnostics(analysis.findings, analysis.view, engine.catalog)


def run(verbose: bool = False) -> int:
    """Serve LSP over stdin and stdout until the client says exit (or closes the connection).

    Exit code 0 after ``shutdown`` then ``exit``, 1 for an ``exit`` (or end of input) without a
    ``shutdown`` first, as the protocol asks.
    """
    logging.basicConfig(stream=sys.stderr, level=logging.DEBUG if verbose else logging.WARNING,
                        format="neuron-lint server: %(levelname)s %(name)s: %(message)s")
    server = NeuronLintServer()
    with protocol_streams() as (stdin, stdout):
        server.start_io(stdin, stdout)
    code = 0 if server.shutdown_requested else 1
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        # The reader thread is still blocked on stdin (the client did not close it): Python would
        # wait for it at exit, so leave now, with everything already written.
        sys.stderr.flush()
        os._exit(code)
    return code
