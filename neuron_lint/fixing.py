"""Apply fixes: to text (to a fixed point), and to files (atomically, or as a diff).

Each pass checks the text, takes every applicable fix (safe ones, plus unsafe ones with
``unsafe_fixes``), applies those whose edits do not collide with an earlier fix (identical edits,
such as the one device-variable definition several fixes ask for, are applied once), verifies that
the result still parses, and checks again. Fixes that collided are retried on the next pass
against the new text. It stops when nothing changes (at most ``MAX_PASSES`` passes).

Writing a file keeps its encoding, BOM, line endings and mode, goes through a temporary file in
the same directory and ``os.replace``, and is refused when the file changed on disk after it was
read.
"""

from __future__ import annotations

import bisect
import contextlib
import difflib
import os
import signal
import stat
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from .api import analyze_source, display_path, parse
from .catalog import Catalog, load_catalog
from .errors import ParseError
from .model import Edit, FileError, Finding
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
    rejected: list[Finding] = field(default_factory=list)  # fixes dropped because the result did not parse


def applicable(finding: Finding, settings: Settings) -> bool:
    fix = finding.fix
    return fix is not None and (fix.applicability == "safe" or settings.unsafe_fixes)


def _ranges(lines: LineIndex, fix) -> list[tuple[int, int, str]]:
    return [(lines.offset(e.line, e.col), lines.offset(e.end_line, e.end_col), e.content) for e in fix.edits]


def _collide(a: tuple[int, int, str], b: tuple[int, int, str]) -> bool:
    if a == b:
        return False  # the same edit asked for twice is applied once
    (s1, t1, _), (s2, t2, _) = a, b
    if s1 < t2 and s2 < t1:
        return True
    if s1 == s2:
        return True  # two insertions (or an insertion and a replacement) at one point: order unclear
    return (s1 == t1 and s2 < s1 < t2) or (s2 == t2 and s1 < s2 < t1)


def _collides_with_chosen(e: tuple[int, int, str], chosen: list[tuple[int, int, int, str]]) -> bool:
    """Does ``e`` collide with an edit in ``chosen`` (sorted by start)? Only its neighbours can."""
    i = bisect.bisect_left(chosen, (e[0],))
    if i and _collide(e, _plain(chosen[i - 1])):
        return True
    while i < len(chosen) and chosen[i][0] <= e[1]:
        if _collide(e, _plain(chosen[i])):
            return True
        i += 1
    return False


def _plain(c: tuple[int, int, int, str]) -> tuple[int, int, str]:
    return c[0], c[1], c[3]


def apply_edits(text: str, findings: list[Finding], newline: str = "\n") -> tuple[str, list[Finding]]:
    """Apply the fixes of ``findings`` that do not collide with an earlier one. Returns (text, applied).

    O(n log n) in the number of edits and linear in the text: a generated file with thousands of
    fixes must not take minutes.
    """
    lines = LineIndex(text)
    # (start, end, order asked, content), sorted: edits at one point go in the order the fix listed them.
    chosen: list[tuple[int, int, int, str]] = []
    seen: set[tuple[int, int, str]] = set()
    applied: list[Finding] = []
    for f in sorted(findings, key=lambda f: min((e.line, e.col) for e in f.fix.edits)):
        edits = _ranges(lines, f.fix)
        if any(e not in seen and _collides_with_chosen(e, chosen) for e in edits):
            continue
        for e in edits:
            if e not in seen:  # the same edit asked for twice is applied once
                seen.add(e)
                bisect.insort(chosen, (e[0], e[1], len(seen), e[2]))
        applied.append(f)
    pieces: list[str] = []
    pos = 0
    for start, end, _, content in chosen:
        if newline != "\n":
            content = content.replace("\n", newline)
        pieces.append(text[pos:start])
        pieces.append(content)
        pos = end
    pieces.append(text[pos:])
    return "".join(pieces), applied


def _parses(text: str, path: str) -> bool:
    try:
        parse(text, path)
    except ParseError:
        return False
    return True


def fix_text(
    text: str,
    path: str = "<string>",
    settings: Settings | None = None,
    catalog: Catalog | None = None,
    newline: str = "\n",
) -> TextFix:
    """Apply fixes to a module's text until nothing changes. Raises ParseError if ``text`` is invalid."""
    settings = settings or Settings()
    catalog = catalog or load_catalog()
    result = TextFix(text)
    current = text
    findings = analyze_source(current, path, settings, catalog)[0]
    while result.passes < MAX_PASSES:
        wanted = [f for f in findings if applicable(f, settings) and f not in result.rejected]
        if not wanted:
            break
        new, used = apply_edits(current, wanted, newline)
        if new != current and not _parses(new, path):
            # Find the culprit(s): add one fix at a time to the set applied to this pass's text
            # (every fix's positions refer to it), keeping those that leave valid code.
            new, used = current, []
            for f in wanted:
                candidate, kept = apply_edits(current, used + [f], newline)
                if f in kept and _parses(candidate, path):
                    new, used = candidate, kept
                else:
                    result.rejected.append(f)
        result.passes += 1
        if new == current:
            break
        result.applied.extend(used)
        current = new
        findings = analyze_source(current, path, settings, catalog)[0]
    result.text = current
    result.remaining = findings
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
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise ReadOnly(path)  # the rename would bypass the protection: respect it
    directory, name = os.path.split(target)
    with signals_deferred():  # SIGINT/SIGTERM land after the swap or the clean-up, never between
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".neuron-lint.tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
            _keep_owner(tmp, st)
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
    """The file has no write permission bit; a fix leaves it alone."""


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
    try:
        source = decode(original)
        result = fix_text(source.text, shown, settings, catalog, newline=source.newline)
    except SourceError as exc:
        out.error = FileError(shown, str(exc))
        return out
    except ParseError as exc:
        out.error = FileError(shown, str(exc), exc.line, exc.col)
        return out
    except Exception as exc:  # a bug of ours: this file is left as it is, the others are fixed
        out.error = FileError(shown, f"internal error: {type(exc).__name__}: {exc}; left alone (please report this file)")
        return out
    out.applied, out.remaining = result.applied, result.remaining
    if result.text == source.text:
        return out
    out.changed = True
    out.diff = unified_diff(shown, source.text, result.text)
    if write:
        try:
            atomic_write(str(path), encode(source, result.text), original, st)
            out.written = True
        except FileChanged:
            out.error = FileError(shown, "changed on disk while it was being fixed; left alone (run the fix again)")
        except ReadOnly:
            out.error = FileError(shown, "is read-only; left alone")
        except UnicodeEncodeError:
            out.error = FileError(shown, f"the fixed text cannot be written as {source.encoding}; left alone")
        except OSError as exc:
            out.error = FileError(shown, f"cannot be written: {exc.strerror or exc}")
    return out
