"""Apply fixes to files: atomically, or as a diff.

The text is fixed by :func:`neuron_lint.fixes.apply.fix_text` (to a fixed point); a notebook has
only the ``source`` of its changed code cells rewritten. Writing a file keeps its encoding, BOM,
line endings and mode, goes through a temporary file in the same directory and ``os.replace``,
and is refused when the file changed on disk after it was read.
"""

from __future__ import annotations

import difflib
import os
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from ..catalog.loading import Catalog
from ..config.settings import Settings
from ..engine.pipeline import display_path
from ..errors import ParseError
from ..io.atomic_write import FileChanged, ReadOnly, atomic_write
from ..io.notebook import (
    NotebookError,
    changed_cells,
    findings_in_cells,
    is_notebook,
    join_cells,
    parse_notebook,
    write_cells,
)
from ..io.positions import split_lines
from ..io.source import SourceError, decode, encode, read_source_bytes
from ..manifests import manifest_kind
from ..model import CheckResult, FileError, Finding
from .apply import fix_text
from .line_length import line_length_of


@dataclass
class FileFix:
    path: str
    applied: list[Finding] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)
    diff: str = ""
    changed: bool = False
    written: bool = False
    error: FileError | None = None
    #: what ``check`` reports for the file as it now is, found by the fix's last analysis (a Python
    #: module fixed without error); None: ``check`` must look at it again (``check --fix``)
    checked: CheckResult | None = None


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
    if out.error is not None or (out.changed and not out.written):
        out.checked = None  # what is on disk is not what the analysis saw
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
        out.error = FileError(shown, f"internal error: {type(exc).__name__}: {exc}; left alone (please report this file)",
                              detail=traceback.format_exc())
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
    if manifest_kind(shown) is None:  # setup.py is a manifest too: `check` reads it as one
        out.checked = CheckResult(findings=list(result.remaining), files_checked=1, files_skipped=int(not result.walked))
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
