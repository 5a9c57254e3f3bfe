"""Apply fixes to a module's text, to a fixed point.

Each pass checks the text (ast), takes every applicable fix (safe ones, plus unsafe ones with
``unsafe_fixes``) and carries them out in one LibCST transformation
(:func:`neuron_lint.fixes.rewrite.rewrite`); plain text edits (``# noqa`` comments) are applied
around it. The result must still parse; then the text is checked again. A fix that could not be
applied in a pass (two fixes on one node) is retried on the next. It stops when nothing changes
(at most ``MAX_PASSES`` passes). Files (encodings, notebooks, the atomic write) are
:mod:`neuron_lint.fixes.files`'s.
"""

from __future__ import annotations

import difflib
import io
import tokenize
from dataclasses import dataclass, field, replace

from ..catalog.loading import Catalog, load_catalog
from ..config.settings import Settings
from ..engine.pipeline import analyze_source, parse
from ..errors import ParseError
from ..io.positions import LineIndex, split_lines
from ..model import Finding
from .edits import apply_edits
from .line_length import DEFAULT_LINE_LENGTH

MAX_PASSES = 10


@dataclass
class TextFix:
    text: str
    applied: list[Finding] = field(default_factory=list)  # findings whose fix was applied
    remaining: list[Finding] = field(default_factory=list)  # findings in the final text
    passes: int = 0
    rejected: list[Finding] = field(default_factory=list)  # fixes dropped: the result did not parse, or
    too_long: list[Finding] = field(default_factory=list)  # ... it made a line longer than the project allows


def applicable(finding: Finding, settings: Settings) -> bool:
    fix = finding.fix
    return fix is not None and (fix.applicability == "safe" or settings.unsafe_fixes)


def _parses(text: str, path: str) -> bool:
    try:
        parse(text, path)
    except ParseError:
        return False
    return True


def _apply(text: str, wanted: list[Finding], settings: Settings, newline: str) -> tuple[str, list[Finding]]:
    """One pass: the LibCST rewrites, then the plain text edits that do not touch them."""
    from .rewrite import rewrite

    planned = [f for f in wanted if f.fix.fixer]
    plain = [f for f in wanted if not f.fix.fixer and f.fix.edits]
    used: list[Finding] = []
    if planned:
        done = rewrite(text, planned, settings)
        text, used = done.text, list(done.applied)
    if plain and not used:
        text, more = apply_edits(text, plain, newline)
        used += more
    return text, used


def _long_lines(text: str, limit: int) -> int:
    return sum(1 for line in split_lines(text) if len(line) > limit)


def _pass(current: str, wanted: list[Finding], settings: Settings, newline: str, path: str, limit: int,
          result: "TextFix") -> tuple[str, list[Finding]]:
    """One pass: apply ``wanted``; drop the fixes that break the code or make lines too long."""
    keeps_length = not _long_code_lines(current, limit)

    def apply(fixes):
        text, kept = _apply(current, fixes, settings, newline)
        if kept and keeps_length:
            text = _wrapped(current, text, limit, path)
        return text, kept

    new, used = apply(wanted)
    if new == current:
        return new, used
    if not _parses(new, path):
        # Find the culprit(s): add one fix at a time, keeping those that leave valid code.
        new, used = current, []
        for f in wanted:
            candidate, kept = apply(used + [f])
            if f in kept and _parses(candidate, path):
                new, used = candidate, kept
            else:
                result.rejected.append(f)
    before = _long_lines(current, limit)
    if used and _long_lines(new, limit) > before and keeps_length:
        # A file whose code keeps within the project's line length (its long lines, if any, are
        # comments and strings no formatter can break) stays so: no fix adds a line past it (ruff
        # E501; `ruff format` would break it up). The fixes on lines grown too long are dropped and
        # left to a person. (A file with long code lines is not held to a length it does not keep.)
        def fits(text: str) -> bool:
            return _long_lines(text, limit) <= before and _parses(text, path)

        culprits = _on_long_lines(current, new, used, limit)
        kept = [f for f in used if f not in culprits]
        candidate, applied = apply(kept) if kept else (current, [])
        if not (fits(candidate) and len(applied) == len(kept)):  # rare: fall back to one fix at a time
            from .rewrite import rewrite_greedily

            done = rewrite_greedily(current, used, settings, fits)
            candidate, applied = done.text, list(done.applied)
        too_long = [f for f in used if f not in applied]
        result.rejected.extend(too_long)
        result.too_long.extend(too_long)
        new, used = candidate, list(applied)
    return new, used


def _wrapped(current: str, new: str, limit: int, path: str) -> str:
    """``new`` with the statements whose lines a fix pushed past ``limit`` broken as a formatter
    would (see :mod:`neuron_lint.fixes.wrap`); ``new`` itself when there are none or it fails."""
    old_long = {line for line in split_lines(current) if len(line) > limit}
    grown = {n for n, line in enumerate(split_lines(new), 1) if len(line) > limit and line not in old_long}
    if not grown:
        return new
    from .wrap import wrap_lines

    wrapped = wrap_lines(new, grown, limit)
    return wrapped if wrapped != new and _parses(wrapped, path) else new


def _long_code_lines(text: str, limit: int) -> int:
    """Lines past ``limit`` that are long because of their code, not of a comment or a string."""
    lines = split_lines(text)
    long = {n for n, line in enumerate(lines, 1) if len(line) > limit}
    if not long:
        return 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            (row, col), (end_row, end_col) = tok.start, tok.end
            if tok.type == tokenize.COMMENT and col <= limit:
                long.discard(row)
            elif tok.type == tokenize.STRING and (end_row > row or end_col - col >= 20):
                long.difference_update(range(row, end_row + 1))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return len(long)


def _on_long_lines(current: str, new: str, fixes: list[Finding], limit: int) -> list[Finding]:
    """The fixes whose target lies on lines that became longer than ``limit``."""
    a, b = split_lines(current), split_lines(new)
    grown: set[int] = set()  # 1-based lines of ``current``
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "replace" and i2 - i1 == j2 - j1:  # line for line
            grown.update(i + 1 for i, j in zip(range(i1, i2), range(j1, j2)) if len(b[j]) > limit)
        elif tag != "equal" and any(len(b[j]) > limit for j in range(j1, j2)):
            grown.update(range(i1 + 1, max(i2, i1 + 1) + 1))
    return [f for f in fixes if any(line in grown for line in range(f.fix.target[0], f.fix.target[2] + 1))]


def _identity(f: Finding, lines: LineIndex) -> tuple:
    """A fix as it stays from pass to pass: its rule, fixer, message and the text it rewrites."""
    target = f.fix.target
    if len(target) >= 4:
        covered = lines.text[lines.offset(target[0], target[1]):lines.offset(target[2], target[3])]
    else:
        covered = f"{f.line}:{f.col}"
    return (f.code, f.fix.fixer, f.fix.message, covered)


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
    result = TextFix(text)
    current = text
    findings = analyze_source(current, path, settings, catalog)[0]
    refused: set[tuple] = set()  # fixes rejected in an earlier pass, by what they rewrite (positions move)
    while result.passes < MAX_PASSES:
        lines = LineIndex(current)
        wanted = [f for f in findings if applicable(f, settings) and _identity(f, lines) not in refused]
        if not wanted:
            break
        before = len(result.rejected)
        new, used = _pass(current, wanted, settings, newline, path, line_length, result)
        refused.update(_identity(f, lines) for f in result.rejected[before:])
        result.passes += 1
        if new == current:
            break
        result.applied.extend(used)
        current = new
        findings = analyze_source(current, path, settings, catalog)[0]
    result.text = current
    if result.passes:
        from .rewrite import forget

        forget()
    long = {(f.code, f.message) for f in result.too_long}
    result.remaining = [replace(f, fix_note=f"not rewritten: the line would grow past {line_length} characters "
                                            "(the project's line length); rewrite it by hand")
                        if (f.code, f.message) in long and f.fix is not None else f for f in findings]
    return result
