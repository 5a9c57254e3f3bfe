"""Findings as LSP diagnostics.

Severity: the rule catalog has no severity field, so it is derived from what it does have, the
same way the other machine-read outputs do it, then lowered one step for a rule whose confidence
is ``likely`` (its fact about TorchNeuron is secondary or inferred, and its text says "may"):

=====================================================  =============  ==============
category                                               ``confirmed``  ``likely``
=====================================================  =============  ==============
``unsupported``, ``cuda-only-package`` (breaks a run)  Error          Warning
every other category                                   Warning        Information
=====================================================  =============  ==============

(Error for those two categories is what GitHub annotations and SARIF already say, see
:mod:`neuron_lint.output.github`.) An unused ``# noqa`` (NRN901) is also tagged *unnecessary*, so
editors grey it out. A file that does not parse gets one Error diagnostic at the syntax error.
"""

from __future__ import annotations

from lsprotocol import types

from ..catalog.loading import Catalog
from ..errors import ParseError
from ..model import Finding
from ..output.github import ERROR_CATEGORIES
from .views import DocumentView, NotebookView

SOURCE = "neuron-lint"
UNNECESSARY_CODES = frozenset({"NRN901"})
_LOWER = {
    types.DiagnosticSeverity.Error: types.DiagnosticSeverity.Warning,
    types.DiagnosticSeverity.Warning: types.DiagnosticSeverity.Information,
}


def severity(finding: Finding, catalog: Catalog) -> types.DiagnosticSeverity:
    base = types.DiagnosticSeverity.Error if finding.category in ERROR_CATEGORIES else types.DiagnosticSeverity.Warning
    rule = catalog.get(finding.code)
    if rule is not None and rule.confidence != "confirmed":
        return _LOWER[base]
    return base


def message(finding: Finding) -> str:
    """The finding's message, then what to do (the suggestion) and why no fix is offered, if so."""
    parts = [finding.message]
    if finding.suggestion:
        parts.append(finding.suggestion)
    if finding.fix_note:
        parts.append(f"({finding.fix_note})")
    return "\n".join(parts)


def to_diagnostic(finding: Finding, rng: types.Range, catalog: Catalog) -> types.Diagnostic:
    return types.Diagnostic(
        range=rng,
        message=message(finding),
        severity=severity(finding, catalog),
        code=finding.code,
        code_description=types.CodeDescription(href=finding.url) if finding.url else None,
        source=SOURCE,
        tags=[types.DiagnosticTag.Unnecessary] if finding.code in UNNECESSARY_CODES else None,
    )


def findings_to_diagnostics(findings: list[Finding], view: DocumentView | NotebookView,
                            catalog: Catalog) -> dict[str, list[types.Diagnostic]]:
    """Diagnostics for each document of the view (every document appears, if only with none)."""
    out: dict[str, list[types.Diagnostic]] = {uri: [] for uri in view.documents}
    for finding in findings:
        uri, rng = view.locate(finding.line, finding.col, finding.end_line, finding.end_col)
        if uri in out:
            out[uri].append(to_diagnostic(finding, rng, catalog))
    return out


def syntax_error_diagnostics(error: ParseError, view: DocumentView | NotebookView) -> dict[str, list[types.Diagnostic]]:
    """One Error where the module stops parsing (its first line when the parser gave no position)."""
    out: dict[str, list[types.Diagnostic]] = {uri: [] for uri in view.documents}
    if not view.documents:
        return out
    line = error.line if error.line and error.line > 0 else 1
    col = error.col if error.col and error.col > 0 else 1
    uri, rng = view.locate(line, col, line, col + 1)
    if uri in out:
        out[uri].append(types.Diagnostic(range=rng, message=str(error), severity=types.DiagnosticSeverity.Error,
                                         source=SOURCE))
    return out
