"""Apply fixes to a module's text, to a fixed point.

Each pass checks the text (ast), takes every applicable fix (safe ones, plus unsafe ones with
``unsafe_fixes``) and carries them out in one LibCST transformation
(:func:`neuron_lint.fixes.rewrite.rewrite`); plain text edits (``# noqa`` comments) are applied
around it. The result must still parse (:mod:`neuron_lint.fixes.passes`); then the text is checked again. A fix that could not be
applied in a pass (two fixes on one node) is retried on the next. It stops when nothing changes
(at most ``MAX_PASSES`` passes). Files (encodings, notebooks, the atomic write) are
:mod:`neuron_lint.fixes.files`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..catalog.loading import Catalog, load_catalog
from ..config.settings import Settings
from ..engine.pipeline import analyze_source
from ..io.positions import LineIndex, split_lines
from ..model import Finding
from .first_party import current_file
from .line_length import DEFAULT_LINE_LENGTH, current_line_length
from .passes import applicable, one_pass, too_long_note

MAX_PASSES = 10


@dataclass
class TextFix:
    text: str
    applied: list[Finding] = field(default_factory=list)  # findings whose fix was applied
    remaining: list[Finding] = field(default_factory=list)  # findings in the final text
    passes: int = 0
    walked: bool = True  # whether the final text was walked (False: no rule can fire in it)
    rejected: list[Finding] = field(default_factory=list)  # fixes dropped: the result did not parse, or
    too_long: list[Finding] = field(default_factory=list)  # ... it made a line longer than the project allows
    tied: dict[int, tuple] = field(default_factory=dict)  # ... or another placement of its function did


def _identity(f: Finding, lines: LineIndex) -> tuple:
    """A fix as it stays from pass to pass: its rule, fixer, message and the text it rewrites."""
    target = f.fix.target
    if len(target) >= 4:
        covered = lines.text[lines.offset(target[0], target[1]):lines.offset(target[2], target[3])]
    else:
        covered = f"{f.line}:{f.col}"
    return (f.code, f.fix.fixer, f.fix.message, covered)


def _whole_lines(f: Finding, lines: LineIndex) -> str:
    """The lines a fix's target is on: a fix refused because its line grew too long may fit once
    another fix has split that line, so it is retried when they change (a second run would)."""
    target = f.fix.target
    if len(target) < 4:
        return ""
    end = lines.text.find("\n", lines.offset(target[2], target[3]))
    return lines.text[lines.offset(target[0], 0):None if end < 0 else end]


def fix_text(
    text: str,
    path: str = "<string>",
    settings: Settings | None = None,
    catalog: Catalog | None = None,
    newline: str = "\n",
    line_length: int = DEFAULT_LINE_LENGTH,
) -> TextFix:
    """Apply fixes to a module's text until nothing changes. Raises ParseError if ``text`` is invalid.

    ``line_length``: the project's limit (ruff's or black's ``line-length``); no fix makes a line
    longer than it that was not already.
    """
    settings = settings or Settings()
    catalog = catalog or load_catalog()
    with current_line_length(line_length), current_file(path):
        return _fix_text(text, path, settings, catalog, newline, line_length)


def _fix_text(text, path, settings, catalog, newline, line_length) -> TextFix:
    result = TextFix(text)
    current = text
    findings, result.walked = analyze_source(current, path, settings, catalog)
    refused: set[tuple] = set()  # fixes rejected in an earlier pass, by what they rewrite (positions move)
    too_long: dict[tuple, set[str]] = {}  # ... for the line length: the lines they were refused on

    def retried(f: Finding, lines: LineIndex) -> bool:
        key = _identity(f, lines)
        return key not in refused and (key not in too_long or _whole_lines(f, lines) not in too_long[key])

    while result.passes < MAX_PASSES:
        lines = LineIndex(current)
        wanted = [f for f in findings if applicable(f, settings) and retried(f, lines)]
        if not wanted:
            break
        before, long_before = len(result.rejected), len(result.too_long)
        new, used = one_pass(current, wanted, settings, newline, path, line_length, result, findings)
        long = {id(f) for f in result.too_long[long_before:]}
        for f in result.rejected[before:]:
            if id(f) in long:
                too_long.setdefault(_identity(f, lines), set()).add(_whole_lines(f, lines))
            else:
                refused.add(_identity(f, lines))
        result.passes += 1
        if new == current:
            break
        result.applied.extend(used)
        current = new
        findings, result.walked = analyze_source(current, path, settings, catalog)
    result.text = current
    if result.passes:
        from .rewrite import forget

        forget()
    final = split_lines(current)

    def said(f: Finding) -> tuple:
        return f.code, f.message, final[f.line - 1].strip() if 0 < f.line <= len(final) else ""

    tied = {(f.code, f.message, result.tied[id(f)][0]): result.tied[id(f)][1]
            for f in result.too_long if id(f) in result.tied}
    long = {(f.code, f.message) for f in result.too_long if id(f) not in result.tied}
    # A fix refused for the line length is no fix any more: shown without `[*]`, with the note saying why
    result.remaining = [f if f.fix is None else
                        replace(f, fix=None, fix_note=too_long_note(line_length, tied[said(f)]))
                        if said(f) in tied else
                        replace(f, fix=None, fix_note=too_long_note(line_length))
                        if (f.code, f.message) in long else f for f in findings]
    return result
