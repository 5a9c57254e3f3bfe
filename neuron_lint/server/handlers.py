"""The LSP methods the server answers, each a thin handler over :class:`.app.NeuronLintServer`."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lsprotocol import types

from . import actions
from .document_settings import SECTIONS, WATCHED_GLOBS, editor_options
from .documents import uri_to_path
from .protocol import capability

if TYPE_CHECKING:
    from .app import NeuronLintServer

logger = logging.getLogger(__name__)


def register(server: NeuronLintServer) -> None:
    """Register every handler on ``server`` (pygls advertises capabilities from what is registered)."""
    feature = server.feature
    store, scheduler = server.store, server.scheduler

    @feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        server.initialize(params)

    @feature(types.INITIALIZED)
    async def initialized(params: types.InitializedParams) -> None:
        await watch_config_files(server)
        if await pull_editor_settings(server):
            server.recheck_all()

    @feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        item = params.text_document
        doc = store.open(item.uri, item.language_id, item.version, item.text)
        if doc.is_python:
            scheduler.check_now(item.uri)

    @feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        doc = store.change(params.text_document.uri, params.text_document.version, params.content_changes)
        if doc is None:
            return
        key = store.unit_key_for(doc.uri)
        if key is not None and store.unit(key) is not None:
            scheduler.check_soon(key)

    @feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if server.note_saved_or_changed_file(uri_to_path(uri)):
            return  # every document is being checked again
        key = store.unit_key_for(uri)
        if key is not None and store.unit(key) is not None:
            scheduler.check_now(key)

    @feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        doc = store.close(params.text_document.uri)
        if doc is not None and doc.notebook is None:
            server.forget(doc.uri)

    register_notebook_sync(server)

    @feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(params: types.DidChangeWatchedFilesParams) -> None:
        for change in params.changes:
            if server.note_saved_or_changed_file(uri_to_path(change.uri)):
                return

    @feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        pushed = editor_options(params.settings, server.settings_cache.editor)
        if pushed != server.settings_cache.editor:
            server.settings_cache.editor = pushed
            server.recheck_all()
        if await pull_editor_settings(server):
            server.recheck_all()

    @feature(types.TEXT_DOCUMENT_CODE_ACTION,
             types.CodeActionOptions(code_action_kinds=actions.ADVERTISED_KINDS, resolve_provider=True))
    async def code_action(params: types.CodeActionParams):
        return await server.code_actions.answer(params)

    @feature(types.CODE_ACTION_RESOLVE)
    async def code_action_resolve(params: types.CodeAction) -> types.CodeAction:
        return await server.code_actions.resolve(params)

    @feature(types.SHUTDOWN)
    def shutdown(params) -> None:
        server.shutdown_requested = True
        server.scheduler.close()


def register_notebook_sync(server: NeuronLintServer) -> None:
    feature = server.feature
    store, scheduler = server.store, server.scheduler

    @feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_did_open(params: types.DidOpenNotebookDocumentParams) -> None:
        notebook = store.open_notebook(params)
        scheduler.check_now(notebook.uri)

    @feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_did_change(params: types.DidChangeNotebookDocumentParams) -> None:
        notebook, closed = store.change_notebook(params)
        if notebook is None:
            return
        for uri in closed:
            server.clear_diagnostics(uri)
        scheduler.check_soon(notebook.uri)

    @feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_did_close(params: types.DidCloseNotebookDocumentParams) -> None:
        notebook = store.close_notebook(params.notebook_document.uri)
        if notebook is not None:
            server.forget(notebook.uri)
            for uri in notebook.cells:
                server.clear_diagnostics(uri)


async def watch_config_files(server: NeuronLintServer) -> None:
    """Ask the client to report changes to configuration files and manifests, if it can."""
    if not capability(server.client_capabilities, "workspace.did_change_watched_files.dynamic_registration", False):
        return
    options = types.DidChangeWatchedFilesRegistrationOptions(
        watchers=[types.FileSystemWatcher(glob_pattern=glob) for glob in WATCHED_GLOBS])
    registration = types.Registration(id="neuron-lint-config-files", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                                      register_options=options)
    try:
        await server.client_register_capability_async(types.RegistrationParams(registrations=[registration]))
    except Exception as exc:  # noqa: BLE001 - the client refused: saves of open config files still count
        logger.info("the client did not register file watchers: %s", exc)


async def pull_editor_settings(server: NeuronLintServer) -> bool:
    """Ask for the editor's ``neuron-lint`` settings, if the client answers such questions; whether
    they changed."""
    if not capability(server.client_capabilities, "workspace.configuration", False):
        return False
    items = [types.ConfigurationItem(section=SECTIONS[0])]
    try:
        answers = await server.workspace_configuration_async(types.ConfigurationParams(items=items))
    except Exception as exc:  # noqa: BLE001
        logger.info("the client did not answer workspace/configuration: %s", exc)
        return False
    before = server.settings_cache.editor
    for answer in answers or ():
        server.settings_cache.editor = editor_options(answer, server.settings_cache.editor)
    return server.settings_cache.editor != before
