"""``# noqa`` suppressions: find them, drop the findings they cover, report the unused ones.

Forms (the same habits as ruff and flake8):

* ``x = y.cuda()  # noqa: NRN201`` (several codes: ``# noqa: NRN201, NRN101``) silences those
  codes on that line; a bare ``# noqa`` silences every code on the line. Text after a code list
  is a reason (``# noqa: NRN201 see ticket 12``); ``noqa:`` followed by text that is not a code
  (``# noqa: see-ticket-12``) is not a directive and silences nothing (as in ruff).
* ``# neuron-lint: noqa`` anywhere in a file silences the whole file;
  ``# neuron-lint: noqa: NRN301`` only those codes.

Only real comments count (a small lexer skips strings), so ``"# noqa"`` inside a string does not.
A finding inside a multi-line string or a backslash-continued line is matched by a directive at
the end of that string or line, as well as by one on its first line. Codes of other tools
(``E501``) are left alone. With NRN901 selected, NRN codes in a directive that silence nothing
(and a file-level directive that silences nothing) are reported, with a fix that removes them.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from ..catalog.loading import Catalog
from ..model import Edit, Finding, Fix

UNUSED_CODE = "NRN901"
OWN_PREFIX = "NRN"

_CODE_LIST = r"[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*"
_LINE_RE = re.compile(rf"#\s*noqa(?![\w-])(?:\s*:\s*(?P<codes>{_CODE_LIST}))?", re.I)
_FILE_RE = re.compile(rf"#\s*neuron-lint\s*:\s*noqa(?![\w-])(?:\s*:\s*(?P<codes>{_CODE_LIST}))?", re.I)
_ONE_CODE = re.compile(r"[A-Z]+[0-9]+", re.I)


@dataclass
class Directive:
    """One ``# noqa`` in a comment. Columns are 0-based character offsets in the line."""

    line: int
    start: int  # the '#' that begins the directive
    end: int  # just after the directive (after its last code)
    codes: tuple[str, ...] | None  # None: bare, silences every code
    code_spans: tuple[tuple[int, int], ...]  # where each code is, same order as codes
    comment_start: int
    comment_end: int
    file_level: bool = False
    used: set[str] = field(default_factory=set)

    def covers(self, code: str) -> bool:
        return self.codes is None or code in self.codes


@dataclass
class Directives:
    lines: dict[int, Directive]  # line -> the first noqa directive in that line's comment
    files: list[Directive]  # file-level directives
    continuation: dict[int, int]  # line -> the line a suppression for it goes on

    def target_line(self, line: int) -> int:
        return self.continuation.get(line, line)


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def physical_lines(text: str) -> list[str]:
    """The lines as Python counts them (only \\n, \\r\\n and \\r end a line), without their ends."""
    return _LINE_BREAK.split(text)


def _directive(m: re.Match, comment: str, line: int, col: int, file_level: bool) -> Directive | None:
    """The directive a regex match found, or None when it is not one.

    ``# noqa:`` followed by text that is not a code list (``# noqa: see-ticket-12``) is not a
    directive and silences nothing, as in ruff: a typo in a code list must not silence every
    rule on the line. A later ``# noqa`` in the same comment still counts.
    """
    if m.group("codes") is None and comment[m.end():].lstrip().startswith(":"):
        return None
    codes = spans = None
    if m.group("codes") is not None:
        base = m.start("codes")
        items = list(_ONE_CODE.finditer(m.group("codes")))
        codes = tuple(c.group(0).upper() for c in items)
        spans = tuple((col + base + c.start(), col + base + c.end()) for c in items)
    return Directive(
        line=line, start=col + m.start(), end=col + m.end(), codes=codes, code_spans=spans or (),
        comment_start=col, comment_end=col + len(comment), file_level=file_level,
    )


def _parse_comment(comment: str, line: int, col: int) -> tuple[Directive | None, Directive | None]:
    """(line directive, file directive) found in one comment token starting at ``col``.

    A comment may hold several (``# noqa: see-ticket-12  # noqa: X``, ``# neuron-lint: noqa: Y
    # noqa: X``): the first valid one of each kind counts.
    """
    on_file = on_line = None
    taken: list[tuple[int, int]] = []
    for m in _FILE_RE.finditer(comment):
        taken.append(m.span())
        on_file = _directive(m, comment, line, col, True)
        if on_file is not None:
            break
    for m in _LINE_RE.finditer(comment):
        if any(m.start() < b and m.end() > a for a, b in taken):
            continue  # part of a file-level directive
        on_line = _directive(m, comment, line, col, False)
        if on_line is not None:
            break
    return on_line, on_file


def _merge_ranges(ranges: list[tuple[int, int]]) -> dict[int, int]:
    mapping: dict[int, int] = {}
    merged: list[list[int]] = []
    for a, b in sorted(ranges):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    for a, b in merged:
        for n in range(a, b):
            mapping[n] = b
    return mapping


#: Strings, comments and backslash continuations, in one pass at C speed (unrolled loops, no
#: backtracking). The text has already been parsed, so every string is terminated.
_LEXER = re.compile(
    r"(?P<comment>#[^\r\n]*)"
    r"|(?P<string>'''[^'\\]*(?:(?:\\[\s\S]|'(?!''))[^'\\]*)*'''"
    r'|"""[^"\\]*(?:(?:\\[\s\S]|"(?!""))[^"\\]*)*"""'
    r"|'[^'\\\r\n]*(?:\\[\s\S][^'\\\r\n]*)*'"
    r'|"[^"\\\r\n]*(?:\\[\s\S][^"\\\r\n]*)*")'
    r"|(?P<continuation>\\(?:\r\n|\r|\n))"
)


def _lex(text: str) -> tuple[list[tuple[int, int, str]], dict[int, int]]:
    """Comments that mention noqa as (line, column, text), and the lines a suppression moves to.

    A ``#`` inside a string is skipped with the string. Lines inside a multi-line string, or
    joined by a backslash, map to the last line of that string or logical line.
    """
    if "\r" in text:  # \r or \r\n line ends: a table of line starts
        starts = [0]
        starts.extend(m.end() for m in _LINE_BREAK.finditer(text))

        def line_of(offset: int) -> int:
            return bisect.bisect_right(starts, offset)

        def line_start(line: int) -> int:
            return starts[line - 1]
    else:  # \n only (the usual case): count newlines as the scan moves forward
        cursor = [0, 1]  # offset, its line

        def line_of(offset: int) -> int:
            cursor[1] += text.count("\n", cursor[0], offset)
            cursor[0] = offset
            return cursor[1]

        def line_start(line: int) -> int:
            return text.rfind("\n", 0, cursor[0]) + 1

    comments: list[tuple[int, int, str]] = []
    ranges: list[tuple[int, int]] = []
    for m in _LEXER.finditer(text):
        kind = m.lastgroup
        if kind == "comment":
            if "noqa" in m.group().lower():
                line = line_of(m.start())
                comments.append((line, m.start() - line_start(line), m.group()))
        elif kind == "string":
            a, b = m.span()
            if text.find("\n", a, b) >= 0 or text.find("\r", a, b) >= 0:  # most strings are on one line
                ranges.append((line_of(a), line_of(b - 1)))
        else:  # a backslash continuation joins this line to the next
            line = line_of(m.start())
            ranges.append((line, line + 1))
    return comments, _merge_ranges(ranges)


def scan(text: str) -> Directives:
    """Every noqa directive in a module's text."""
    if "noqa" not in text.lower():  # twice as fast as a case-insensitive search
        return Directives({}, [], {})
    comments, continuation = _lex(text)
    lines: dict[int, Directive] = {}
    files: list[Directive] = []
    for line, col, comment in comments:  # each mentions noqa
        on_line, on_file = _parse_comment(comment, line, col)
        if on_file is not None:
            files.append(on_file)
        if on_line is not None and line not in lines:
            lines[line] = on_line
    return Directives(lines, files, continuation)


def may_exempt_file(text: str) -> bool:
    """Cheap test: False when the text has no ``# neuron-lint: noqa`` anywhere (no tokenizing)."""
    return _FILE_RE.search(text) is not None


def file_exempt(directives: Directives) -> bool:
    """True when a bare ``# neuron-lint: noqa`` silences the whole file."""
    return any(d.codes is None for d in directives.files)


def _suppressor(f: Finding, directives: Directives) -> Directive | None:
    for d in directives.files:
        if d.covers(f.code):
            return d
    for line in (f.line, directives.target_line(f.line)):
        d = directives.lines.get(line)
        if d is not None and d.covers(f.code):
            return d
    return None


def filter_findings(
    findings: list[Finding], text: str, path: str, enabled: frozenset[str], catalog: Catalog,
    directives: Directives | None = None,
) -> list[Finding]:
    """The findings no directive silences, plus NRN901 findings when that rule is enabled."""
    directives = directives if directives is not None else scan(text)
    if not directives.lines and not directives.files:
        return findings
    kept = []
    for f in findings:
        d = _suppressor(f, directives)
        if d is None:
            kept.append(f)
        else:
            d.used.add(f.code)
    if UNUSED_CODE in enabled:
        kept.extend(unused_findings(directives, text, path, enabled, catalog))
        kept.sort(key=lambda f: f.sort_key)
    return kept


def _judged(code: str, enabled: frozenset[str], catalog: Catalog) -> bool:
    """Whether an unused code in a directive is reported: our codes, when they can be judged."""
    if not code.startswith(OWN_PREFIX) or code == UNUSED_CODE:
        return False  # another tool's code, or a directive about this very check
    return catalog.get(code) is None or code in enabled


def unused_findings(directives: Directives, text: str, path: str, enabled: frozenset[str], catalog: Catalog) -> list[Finding]:
    rule = catalog.get(UNUSED_CODE)
    if rule is None:
        return []
    lines = physical_lines(text)
    out = []
    for d in [*directives.files, *directives.lines.values()]:
        if d.codes is None:
            if not d.file_level or d.used:
                continue  # a bare line noqa may be meant for another tool: never reported
            unused: tuple[str, ...] = ()
            message = "`# neuron-lint: noqa` silences nothing in this file"
        else:
            unused = tuple(c for c in dict.fromkeys(d.codes) if c not in d.used and _judged(c, enabled, catalog))
            if not unused:
                continue
            unknown = [c for c in unused if catalog.get(c) is None]
            what = "file-level `noqa`" if d.file_level else "`noqa`"
            message = f"unused {what} code{'s' if len(unused) > 1 else ''}: {', '.join(unused)}"
            if unknown:
                message += f" ({', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not a neuron-lint rule)"
        line_text = lines[d.line - 1] if d.line <= len(lines) else ""
        out.append(Finding(
            path=path, line=d.line, col=d.start + 1, end_line=d.line, end_col=d.end + 1,
            code=rule.code, name=rule.name, category=rule.category, message=message,
            suggestion=rule.suggestion, url=rule.url,
            fix=Fix("safe", removal_edits(d, unused, line_text), "Remove the unused suppression"),
        ))
    return out


def removal_edits(d: Directive, unused: tuple[str, ...], line: str) -> tuple[Edit, ...]:
    """Edits that drop ``unused`` codes from a directive (the whole directive when none remain)."""
    n = d.line
    keep = [c for c in (d.codes or ()) if c not in unused]
    if keep:
        first, last = d.code_spans[0][0], d.code_spans[-1][1]
        return (Edit(n, first + 1, n, last + 1, ", ".join(dict.fromkeys(keep))),)
    before = line[d.comment_start:d.start].strip()
    after = line[d.end:d.comment_end].strip()
    if not before and not after:  # the comment is only the directive: drop it and the gap before it
        start = len(line[:d.comment_start].rstrip())
        return (Edit(n, start + 1, n, d.comment_end + 1, ""),)
    if not after:  # "# reason  # noqa: X" -> "# reason"
        start = len(line[:d.start].rstrip())
        return (Edit(n, start + 1, n, d.end + 1, ""),)
    # "# noqa: X reason" -> "# reason"; "# a # noqa: X b" -> "# a b"
    end = d.end + (len(line[d.end:]) - len(line[d.end:].lstrip(" \t")))
    return (Edit(n, d.start + 1, n, end + 1, "# " if not before else ""),)


def line_directive(text: str, line: int = 1) -> Directive | None:
    """The ``# noqa`` directive in one line of a file Python's lexer does not read, or None.

    For dependency manifests (requirements, TOML, YAML, cfg), where a comment is found by each
    format's own rules: the whole line is searched, with the same code-list rules as a comment
    of a Python file. Columns are 0-based offsets in ``text``.
    """
    return _parse_comment(text, line, 0)[0] if "noqa" in text.lower() else None
