"""Code actions: a quick fix per fixable finding, and "fix all" for the whole document.

A quick fix carries out one finding's fix with the minimal edits of that fix alone (the engine's
``Fix.edits``). Unsafe fixes are offered only when the settings allow them (``unsafe-fixes`` in the
configuration file, or ``unsafeFixes`` from the editor), and say "(unsafe)" in their title.

"Fix all" runs the project's fix pipeline to a fixed point (:func:`neuron_lint.fixes.apply.fix_text`,
what ``neuron-lint fix`` writes) and is offered twice: as ``source.fixAll.neuron-lint`` (for
"fix on save" and the source action menu) and as a quick fix next to the single ones.

Edits are computed with LibCST, which takes seconds on a long file, while the editor asks for code
actions at every cursor move: so when the client can resolve an action's edit later
(``codeAction/resolve``), actions are listed without their edit (the fixes' titles only need the
planned fixes) and the edit is computed for the one the user picks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from ..model import Finding
from .analysis import MAX_QUICK_FIXES, Analysis
from .diagnostics import to_diagnostic
from .text import ranges_touch

if TYPE_CHECKING:
    from .app import NeuronLintServer

QUICK_FIX = types.CodeActionKind.QuickFix.value
FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.neuron-lint"
ADVERTISED_KINDS = [types.CodeActionKind.QuickFix, FIX_ALL]


def kind_wanted(kind: str, only) -> bool:
    """Whether a client that asked for ``only`` kinds wants ``kind`` (``source.fixAll`` covers
    ``source.fixAll.neuron-lint``)."""
    if not only:
        return True
    for wanted in only:
        wanted = getattr(wanted, "value", wanted)
        if kind == wanted or kind.startswith(f"{wanted}."):
            return True
    return False


def quick_fix_title(finding: Finding) -> str:
    fix = finding.fix
    what = fix.message or finding.name
    return f"Fix {finding.code}: {what} ({fix.applicability})"


def fix_all_title(unsafe_allowed: bool) -> str:
    if unsafe_allowed:
        return "Fix all neuron-lint findings (safe and unsafe fixes)"
    return "Fix all safe neuron-lint findings"


def workspace_edit(edits: dict[str, list[types.TextEdit]], versions: dict[str, int | None],
                   document_changes: bool) -> types.WorkspaceEdit:
    """A workspace edit: versioned document edits when the client takes them (so that it refuses
    an edit made for older text), else plain per-URI changes."""
    if document_changes:
        return types.WorkspaceEdit(document_changes=[
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=versions.get(uri)),
                edits=list(text_edits),
            )
            for uri, text_edits in edits.items()
        ])
    return types.WorkspaceEdit(changes={uri: list(text_edits) for uri, text_edits in edits.items()})


def quick_fix(finding: Finding, diagnostic: types.Diagnostic, edit: types.WorkspaceEdit | None,
              data: dict | None = None) -> types.CodeAction:
    """A quick fix, with its edit, or with the ``data`` to compute it when resolved."""
    return types.CodeAction(
        title=quick_fix_title(finding),
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic],
        is_preferred=finding.fix.applicability == "safe",
        edit=edit,
        data=data,
    )


def fix_all(kind: str, unsafe_allowed: bool, edit: types.WorkspaceEdit | None, data: dict | None) -> types.CodeAction:
    """A "fix all" action, with its edit, or with the ``data`` to compute it when resolved."""
    return types.CodeAction(title=fix_all_title(unsafe_allowed), kind=kind, edit=edit, data=data)


FIX_ALL_DATA, QUICK_FIX_DATA = "fixAll", "quickFix"


def resolve_data(what: str, key: str, revision: int, finding: Finding | None = None) -> dict:
    """What a resolve needs: the action, the unit (document or notebook) and, for a quick fix,
    which finding (code and span)."""
    data = {"neuronLint": what, "unit": key, "revision": revision}
    if finding is not None:
        data["finding"] = [finding.code, finding.line, finding.col, finding.end_line, finding.end_col]
    return data


def data_kind(data) -> str | None:
    """``fixAll`` or ``quickFix`` for an action this server made; None for anything else."""
    if not isinstance(data, dict) or not isinstance(data.get("unit"), str):
        return None
    what = data.get("neuronLint")
    if what == QUICK_FIX_DATA and not (isinstance(data.get("finding"), list) and len(data["finding"]) == 5):
        return None
    return what if what in (FIX_ALL_DATA, QUICK_FIX_DATA) else None


def finding_matches(finding: Finding, data: dict) -> bool:
    return [finding.code, finding.line, finding.col, finding.end_line, finding.end_col] == data["finding"]


class CodeActions:
    """Answers ``textDocument/codeAction`` and ``codeAction/resolve`` for the server."""

    def __init__(self, server: NeuronLintServer) -> None:
        self.server = server
        self._fix_all: dict[tuple, types.WorkspaceEdit | None] = {}  # (unit, revision, settings) -> edit
        self._quick: dict[str, tuple[tuple, list[types.CodeAction]]] = {}  # unit -> (what was asked, answer)

    def forget(self, key: str | None = None) -> None:
        """Drop the kept answers of one unit (closed), or of all (the settings changed)."""
        if key is None:
            self._fix_all.clear()
            self._quick.clear()
            return
        self._quick.pop(key, None)
        self._fix_all = {k: v for k, v in self._fix_all.items() if k[0] != key}

    async def answer(self, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        server = self.server
        uri = params.text_document.uri
        key = server.store.unit_key_for(uri)
        if key is None:
            return None
        analysis = await server.scheduler.analysis(key, with_fixes=True)
        if analysis is None or analysis.error is not None or analysis.skipped:
            return None
        only = params.context.only
        here = [f for f in analysis.fixable if _located_in(analysis, f, uri, params.range)][:MAX_QUICK_FIXES]
        out: list[types.CodeAction] = []
        if here and kind_wanted(QUICK_FIX, only):
            out += await self.quick_fixes(analysis, here)
        if analysis.fixable:
            for kind in [FIX_ALL] + ([QUICK_FIX] if here else []):
                if kind_wanted(kind, only):
                    action = await self.fix_all_action(analysis, kind)
                    if action is not None:
                        out.append(action)
        return out or None

    async def quick_fixes(self, analysis: Analysis, findings: list[Finding]) -> list[types.CodeAction]:
        """One action per finding: without edits when the client resolves them (see the module's doc);
        else with them, computed once per text (the editor asks again at every cursor move)."""
        if self.server.resolves_edits:
            return [quick_fix(f, self._diagnostic(analysis, f), None,
                              resolve_data(QUICK_FIX_DATA, analysis.unit.key, analysis.unit.revision, f))
                    for f in findings]
        asked = (analysis.unit.revision, analysis.settings.settings, tuple(f.sort_key for f in findings))
        kept = self._quick.get(analysis.unit.key)
        if kept is not None and kept[0] == asked:
            return kept[1]
        out = []
        for finding, edit in await self._edits(analysis, findings):
            out.append(quick_fix(finding, self._diagnostic(analysis, finding), edit))
        self._quick[analysis.unit.key] = (asked, out)
        return out

    async def _edits(self, analysis: Analysis, findings: list[Finding]) -> list[tuple[Finding, types.WorkspaceEdit]]:
        server = self.server
        fixed = await server.scheduler.in_engine(server.engine.with_fix_edits, analysis, findings)
        out = []
        for finding in fixed:
            edits = analysis.view.edits_for_fix(finding.fix.edits)
            if edits:
                out.append((finding, workspace_edit(edits, _versions(analysis), server.takes_document_changes)))
        return out

    def _diagnostic(self, analysis: Analysis, finding: Finding) -> types.Diagnostic:
        _, rng = analysis.view.locate(finding.line, finding.col, finding.end_line, finding.end_col)
        return to_diagnostic(finding, rng, self.server.engine.catalog)

    async def fix_all_action(self, analysis: Analysis, kind: str) -> types.CodeAction | None:
        unsafe = analysis.settings.settings.unsafe_fixes
        if self.server.resolves_edits:
            return fix_all(kind, unsafe, None, resolve_data(FIX_ALL_DATA, analysis.unit.key, analysis.unit.revision))
        edit = await self.fix_all_edit(analysis)
        return fix_all(kind, unsafe, edit, None) if edit is not None else None

    async def fix_all_edit(self, analysis: Analysis) -> types.WorkspaceEdit | None:
        """The edit of "fix all" for a result (computed once per text and settings)."""
        key = (analysis.unit.key, analysis.unit.revision, analysis.settings.settings)
        if key not in self._fix_all:
            server = self.server
            fixed = await server.scheduler.in_engine(server.engine.fix_all, analysis)
            edits = analysis.view.edits_for_text(fixed) if fixed is not None else None
            edit = workspace_edit(edits, _versions(analysis), server.takes_document_changes) if edits else None
            self._fix_all = {k: v for k, v in self._fix_all.items() if k[0] != key[0]}  # older texts
            self._fix_all[key] = edit
        return self._fix_all[key]

    async def resolve(self, action: types.CodeAction) -> types.CodeAction:
        """Fill in the edit of an action listed without one (for the unit's text as it is now)."""
        what = data_kind(action.data)
        if what is None:
            return action
        analysis = await self.server.scheduler.analysis(action.data["unit"], with_fixes=True)
        edit = None
        if analysis is not None and analysis.error is None and not analysis.skipped:
            if what == FIX_ALL_DATA:
                edit = await self.fix_all_edit(analysis)
            else:
                wanted = [f for f in analysis.fixable if finding_matches(f, action.data)]
                done = await self._edits(analysis, wanted[:1]) if wanted else []
                edit = done[0][1] if done else None
        if edit is None:
            self.server.tell_once(f"{action.title}: the fix cannot be made on this text (it may have changed)",
                                  types.MessageType.Info)
        action.edit = edit or types.WorkspaceEdit(changes={})
        return action


def _versions(analysis: Analysis) -> dict[str, int | None]:
    return {uri: doc.version for uri, doc in analysis.view.documents.items()}


def _located_in(analysis: Analysis, finding: Finding, uri: str, rng: types.Range) -> bool:
    target, where = analysis.view.locate(finding.line, finding.col, finding.end_line, finding.end_col)
    return target == uri and ranges_touch(where, rng)
