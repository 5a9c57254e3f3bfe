"""Apply fixes: to text (to a fixed point), and to files (atomically, or as a diff).

Each pass checks the text (ast), takes every applicable fix (safe ones, plus unsafe ones with
``unsafe_fixes``) and carries them out in one LibCST transformation
(:func:`neuron_lint.fixes.rewrite.rewrite`); plain text edits (``# noqa`` comments) are applied
around it. The result must still parse; then the text is checked again. A fix that could not be
applied in a pass (two fixes on one node) is retried on the next. It stops when nothing changes
(at most ``MAX_PASSES`` passes).

Writing a file keeps its encoding, BOM, line endings and mode, goes through a temporary file in
the same directory and ``os.replace``, and is refused when the file changed on disk after it was
read.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import os
import signal
import stat
import tempfile
import threading
import tokenize
from dataclasses import dataclass, field, replace
from pathlib import Path

from .api import analyze_source, display_path, parse
from .catalog import Catalog, load_catalog
from .errors import ParseError
from .model import FileError, Finding
from .notebook import (NotebookError, changed_cells, findings_in_cells, is_notebook, join_cells, parse_notebook,
                       write_cells)
from .fixes.edits import apply_edits
from .project_style import DEFAULT_LINE_LENGTH, line_length_of
from .positions import LineIndex, split_lines
from .settings import Settings
from .source import SourceError, decode, encode, read_source_bytes

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
    from .fixes.rewrite import rewrite

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
            from .fixes.rewrite import rewrite_greedily

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
    from .fixes.wrap import wrap_lines

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
        from .fixes.rewrite import forget

        forget()
    long = {(f.code, f.message) for f in result.too_long}
    result.remaining = [replace(f, fix_note=f"not rewritten: the line would grow past {line_length} characters "
                                            "(the project's line length); rewrite it by hand")
                        if (f.code, f.message) in long and f.fix is not None else f for f in findings]
    return result


# ---------------------------------------------------------------------- files
class FileChanged(Exception):
    """The file on disk is not the one that was read."""


@dataclass
class FileFix:
    path: str
    applied: list[Finding] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)
    diff: str = ""
    changed: bool = False
    written: bool = False
    error: FileError | None = None


def unified_diff(path: str, before: str, after: str) -> str:
    a = split_lines(before, keepends=True)
    b = split_lines(after, keepends=True)
    absolute = os.path.isabs(path)
    lines = difflib.unified_diff(a, b, fromfile=path if absolute else f"a/{path}", tofile=path if absolute else f"b/{path}")
    out = []
    for line in lines:
        body = line.rstrip("\r\n")
        out.append(body + "\n")
        if line == body:  # the last line had no newline
            out.append("\\ No newline at end of file\n")
    return "".join(out)


def _same_file(path: str, data: bytes, st: os.stat_result) -> bool:
    try:
        now = os.stat(path)
        with open(path, "rb") as fh:
            current = fh.read()
    except OSError:
        return False
    return current == data and now.st_size == st.st_size and now.st_mtime_ns == st.st_mtime_ns


def atomic_write(path: str, data: bytes, original: bytes, st: os.stat_result) -> None:
    """Replace ``path`` with ``data`` unless it no longer holds ``original``; keeps the file mode."""
    target = os.path.realpath(path)
    if not _same_file(target, original, st):
        raise FileChanged(path)
    # The rename below needs only a writable folder; the file's own protection is what counts:
    # no write bit at all (respected even by root), or a file this user may not write.
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not _may_write(target):
        raise ReadOnly(path)
    directory, name = os.path.split(target)
    with signals_deferred():  # SIGINT/SIGTERM land after the swap or the clean-up, never between
        # a short name whatever the file's (a 255-byte name leaves no room for a long suffix)
        fd, tmp = tempfile.mkstemp(prefix=f".{name[:TEMP_NAME_CHARS]}.", suffix=".nl-tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            _keep_owner(tmp, st)  # before chmod: changing the owner clears setuid and setgid
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
            if not _same_file(target, original, st):  # last look, right before the swap
                raise FileChanged(path)
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise


class ReadOnly(Exception):
    """The file has no write permission bit, or this user may not write it; a fix leaves it alone."""


#: Characters of the file's name kept in the temporary file's name.
TEMP_NAME_CHARS = 32


def _may_write(path: str) -> bool:
    """May the effective user write ``path`` itself (not only replace it in its folder)?"""
    try:
        if os.access in os.supports_effective_ids:
            return os.access(path, os.W_OK, effective_ids=True)
        return os.access(path, os.W_OK)
    except OSError:
        return False


def _keep_owner(tmp: str, st: os.stat_result) -> None:
    """Give the new file the old one's owner and group where we may (as root, or a group we are in)."""
    if not hasattr(os, "chown"):
        return
    try:
        os.chown(tmp, st.st_uid, st.st_gid)
    except OSError:
        try:
            os.chown(tmp, -1, st.st_gid)
        except OSError:
            pass


@contextlib.contextmanager
def signals_deferred():
    """Hold SIGINT and SIGTERM until the block is done, then deliver them as they would have been.

    Only the main thread can handle signals; elsewhere the block runs unprotected.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    wanted = [s for s in (getattr(signal, "SIGINT", None), getattr(signal, "SIGTERM", None)) if s is not None]
    previous = {}
    for sig in wanted:
        try:
            previous[sig] = signal.signal(sig, lambda signum, frame: caught.append(signum))
        except (ValueError, OSError):  # not allowed here
            pass
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        for sig in caught[:1]:
            signal.raise_signal(sig)


def _round_trips(source, original: bytes) -> bool:
    """Does writing the unchanged text back give the file's bytes? (Not for ``unicode_escape``...)"""
    try:
        return encode(source, source.text) == original
    except (UnicodeError, LookupError):
        return False


def fix_file(path: Path | str, settings: Settings | None = None, catalog: Catalog | None = None, write: bool = True) -> FileFix:
    """Fix one file: write it (``write``) or only compute the diff. Never raises for a bad file."""
    settings = settings or Settings()
    shown = display_path(path)
    out = FileFix(shown)
    try:
        st = os.stat(path)
        original = read_source_bytes(path, settings.max_file_bytes)  # never a pipe, device or huge file
    except SourceError as exc:
        out.error = FileError(shown, str(exc))
        return out
    except OSError as exc:
        out.error = FileError(shown, f"cannot be read: {exc.strerror or exc}")
        return out
    data = fix_bytes(original, out, settings, catalog, line_length_of(os.path.dirname(os.path.abspath(path))))
    if data is None:
        return out
    if write:
        try:
            atomic_write(str(path), data, original, st)
            out.written = True
        except FileChanged:
            out.error = FileError(shown, "changed on disk while it was being fixed; left alone (run the fix again)")
        except ReadOnly:
            out.error = FileError(shown, "is read-only, or not writable by this user; left alone")
        except OSError as exc:
            out.error = FileError(shown, f"cannot be written: {exc.strerror or exc}")
    return out


def fix_bytes(original: bytes, out: FileFix, settings: Settings, catalog: Catalog | None, limit: int) -> bytes | None:
    """The fixed bytes of a file named ``out.path`` (a notebook by its name), or None when nothing
    changes; ``out`` gets the fixes applied and left, the diff, or the error. Never raises."""
    shown = out.path
    try:
        if is_notebook(shown):
            data = _fixed_notebook(original, shown, settings, catalog, limit, out)
        else:
            data = _fixed_module(original, shown, settings, catalog, limit, out)
    except (SourceError, NotebookError) as exc:
        out.error = FileError(shown, str(exc))
        return None
    except ParseError as exc:
        out.error = FileError(shown, str(exc), exc.line, exc.col)
        return None
    except Exception as exc:  # a bug of ours: this file is left as it is, the others are fixed
        out.error = FileError(shown, f"internal error: {type(exc).__name__}: {exc}; left alone (please report this file)")
        return None
    out.changed = data is not None
    return data


def _fixed_module(original: bytes, shown: str, settings, catalog, limit: int, out: FileFix) -> bytes | None:
    """The fixed bytes of a Python file (None: nothing to change, or ``out.error`` says why not)."""
    source = decode(original)
    if not _round_trips(source, original):
        out.error = FileError(shown, f"is written in {source.encoding}, which does not give back the bytes it "
                                     "read; left alone (rewriting it would change lines no fix touched)")
        return None
    result = fix_text(source.text, shown, settings, catalog, newline=source.newline, line_length=limit)
    out.applied, out.remaining = result.applied, result.remaining
    if result.text == source.text:
        return None
    try:
        data = encode(source, result.text)
    except UnicodeEncodeError:
        out.error = FileError(shown, f"the fixed text cannot be written as {source.encoding}; left alone")
        return None
    out.diff = unified_diff(shown, source.text, result.text)
    return data


def _fixed_notebook(original: bytes, shown: str, settings, catalog, limit: int, out: FileFix) -> bytes | None:
    """The fixed bytes of a notebook: only the ``source`` of changed code cells is rewritten."""
    nb = parse_notebook(original)
    if not nb.is_python:
        return None
    cells = nb.code_cells
    joined = join_cells([c.source for c in cells])
    try:
        result = fix_text(joined.text, shown, settings, catalog, line_length=limit)
    except ParseError as exc:
        if exc.line is None or not cells:
            raise
        i, line = joined.locate(exc.line)
        out.error = FileError(shown, str(exc), line, exc.col, cell=cells[i].number)
        return None
    out.applied = result.applied
    sources = joined.split(result.text)
    # the findings left, located in the cells of the fixed notebook (its cells have as many lines
    # as the fixed module's pieces)
    after = join_cells(sources) if sources is not None else joined
    out.remaining = findings_in_cells(result.remaining, after, [c.number for c in cells])
    if result.text == joined.text:
        return None
    if sources is None:
        out.error = FileError(shown, "a fix would move code across cells or magics; left alone")
        return None
    changed = changed_cells(nb, sources)
    if not changed:
        return None
    data = write_cells(nb, changed, original)  # NotebookError: fix_bytes reports it
    out.diff = "".join(unified_diff(f"{shown}:cell {number}", old, new) for number, (old, new) in changed.items())
    return data
