"""Source text from standard input: ``neuron-lint check -`` and ``fix -`` (editors, pipelines).

``--stdin-filename PATH`` names the text: messages and output formats use it, the configuration is
found from its folder, per-file ignores (and, with ``--force-exclude``, excludes) match it, and its
name says whether the text is a notebook or a manifest. Nothing is read from or written to PATH.
``fix -`` writes the fixed text, and nothing else, to standard output (the text as it came when a
fix is impossible, so a pipeline never loses the buffer); messages go to standard error.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import BinaryIO, TextIO

from ..config.settings import Settings
from ..io.source import SourceError
from ..model import CheckResult
from ..output.summary import plural

STDIN = "-"


def uses_stdin(paths: list[str] | None, stdin_filename: str | None) -> bool:
    """``-`` as the only path, or ``--stdin-filename`` with no path. Raises ValueError for ``-``
    among other paths."""
    paths = paths or []
    if STDIN in paths and len(paths) > 1:
        raise ValueError("`-` (standard input) cannot be combined with other paths")
    return paths == [STDIN] or (not paths and stdin_filename is not None)


def config_paths(stdin_filename: str | None) -> list[str]:
    """Where the configuration is looked for: from the named file's folder, else the current one."""
    return [stdin_filename] if stdin_filename else ["."]


def name_of(stdin_filename: str | None) -> str:
    return stdin_filename or STDIN


def read_stdin(settings: Settings, stream: BinaryIO | None = None) -> bytes:
    """All of standard input, up to the size limit for one file (SourceError past it)."""
    stream = stream or sys.stdin.buffer
    limit = settings.max_file_bytes
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise SourceError(f"skipped: standard input is over the {limit / (1024 * 1024):g} MB size limit for one file")
    return data


def force_excluded(name: str, settings: Settings) -> bool:
    """With ``--force-exclude``, a ``--stdin-filename`` that the excludes match is not checked (as ruff)."""
    if name == STDIN or not settings.force_exclude:
        return False
    from ..io.discovery import _force_excluded

    return _force_excluded(Path(name), settings.exclude_globs())


def check_stdin(data: bytes, name: str, settings: Settings, catalog=None) -> CheckResult:
    """Check ``data`` as the file ``name`` would be checked (it is never opened)."""
    from ..engine.pipeline import check_file

    if force_excluded(name, settings):
        return CheckResult()
    return check_file(name, settings, catalog, data=data)


def fix_stdin(data: bytes, name: str, settings: Settings, *, diff: bool, quiet: bool,
              out: BinaryIO, err: TextIO) -> int:
    """``fix -``: the fixed text (or, with ``diff``, the diff) on ``out``; the exit code of ``fix``."""
    from ..engine.pipeline import display_path
    from ..fixes.files import FileFix, fix_bytes
    from ..fixes.line_length import line_length_of

    shown = display_path(name)
    if force_excluded(name, settings):
        if not diff:
            out.write(data)
        return 0
    result = FileFix(shown)
    folder = os.path.dirname(os.path.abspath(name)) if name != STDIN else os.getcwd()
    fixed = fix_bytes(data, result, settings, None, line_length_of(folder))
    if result.error is not None:
        err.write(f"error: {result.error.where}: {result.error.reason}\n")
        if not diff:
            out.write(data)  # unchanged: whatever reads the output keeps its text
        return 2
    if diff:
        out.write(result.diff.encode("utf-8", "surrogateescape"))
    else:
        out.write(fixed if fixed is not None else data)
    if not quiet:
        verb = "Would fix" if diff else "Fixed"
        line = f"{verb} {plural(len(result.applied), 'finding')}"
        if result.remaining:
            line += f"; {plural(len(result.remaining), 'finding')} left (`neuron-lint check` lists them)"
        err.write(line + ".\n")
    if diff:
        return 1 if fixed is not None else 0
    return 1 if result.remaining else 0

