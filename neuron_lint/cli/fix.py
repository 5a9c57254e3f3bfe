"""``neuron-lint fix`` (and ``check --fix`` / ``--diff``): apply fixes to files and say what changed.

Exit codes: 0 nothing left to report (or, with ``--diff``, nothing to change), 1 findings remain
(with ``--diff``: there is something to change), 2 a file could not be read, parsed or written.
"""

from __future__ import annotations

import functools
import os
import sys
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, TextIO

from ..catalog.loading import load_catalog
from ..engine.pipeline import display_path
from ..engine.runner import iter_files, run_work
from ..fixes.files import FileFix, fix_file
from ..io.discovery import CHECKED_SUFFIXES, Missing, Skipped
from ..manifests import manifest_kind
from ..model import CheckResult, FileError
from ..output.summary import plural


def _codes(findings) -> str:
    counts = Counter(f.code for f in findings)
    return ", ".join(f"{code} ×{n}" if n > 1 else code for code, n in sorted(counts.items()))


def _lost(path: str) -> FileFix:
    shown = display_path(path)
    return FileFix(shown, error=FileError(shown, "the process fixing it died (out of memory, or a crash in Python itself); left alone"))


def _load_rewriter() -> None:
    """Import LibCST and the rewriter once, before the workers fork (each would import it again:
    about a third of a second of CPU per worker)."""
    from ..fixes import rewrite  # noqa: F401


def fix_paths(paths: Iterable[str], settings, write: bool = True, jobs: int | None = None) -> tuple[list[FileFix], list[FileError]]:
    """Fix every Python file under ``paths`` (the files ``check`` would check), across worker processes."""
    catalog = load_catalog()
    errors: list[FileError] = []
    items: list[tuple[int, str, int]] = []
    for order, item in enumerate(iter_files(list(paths), settings)):
        if isinstance(item, Missing):
            errors.append(FileError(item.path, item.reason))
            continue
        if isinstance(item, Skipped):
            continue  # `check` says so; a fix has nothing to do with it
        if not str(item).endswith(CHECKED_SUFFIXES) and manifest_kind(item) is not None:
            continue  # manifests are reported by `check`; nothing to rewrite there
        try:
            size = os.stat(item).st_size
        except OSError:
            size = 0
        items.append((order, str(item), size))
    results = run_work(items, settings, catalog, functools.partial(fix_file, write=write), jobs, lost=_lost,
                       before_fork=_load_rewriter)
    done = [results[order] for order in sorted(results)]
    errors += [d.error for d in done if d.error is not None]
    return done, errors


@dataclass
class FixOutcome:
    """What a fix run did: each file's :class:`FileFix`, and the files it could not fix."""

    done: list[FileFix]
    errors: list[FileError]
    diff: bool = False

    @property
    def changed(self) -> list[FileFix]:
        return [d for d in self.done if d.changed and (self.diff or d.written)]

    @property
    def applied(self) -> list:
        return [f for d in self.changed for f in d.applied]


def apply_fixes(paths: Iterable[str], settings, *, write: bool = True, jobs: int | None = None) -> FixOutcome:
    done, errors = fix_paths(paths, settings, write=write, jobs=jobs)
    return FixOutcome(done, errors, diff=not write)


def fixed_file_lines(outcome: FixOutcome) -> list[str]:
    """``Fixed 2 findings in train.py (NRN201 ×2)``, one line per file written."""
    return [f"Fixed {plural(len(d.applied), 'finding')} in {d.path} ({_codes(d.applied)})" for d in outcome.changed]


def after_fix_summary(outcome: FixOutcome, result: CheckResult, unsafe_fixes: bool, errors: int) -> list[str]:
    """The last lines of ``fix`` and ``check --fix``: what was fixed, what is left (listed above them)."""
    applied = len(outcome.applied)
    text = f"Fixed {plural(applied, 'finding')} in {plural(len(outcome.changed), 'file')}." if applied else "Nothing fixed."
    remaining = result.findings
    if remaining:
        unsafe = 0 if unsafe_fixes else sum(1 for f in remaining if f.fix and f.fix.applicability == "unsafe")
        text += f" {plural(len(remaining), 'finding')} {'remains' if len(remaining) == 1 else 'remain'}"
        text += f" ({unsafe} fixable with `--unsafe-fixes`)." if unsafe else "."
    elif applied:
        text += f" No findings left ({plural(result.files_checked, 'file')} checked)."
    else:
        text = f"No findings ({plural(result.files_checked, 'file')} checked)."
    lines = [text]
    if errors:
        lines.append(f"{plural(errors, 'file')} could not be checked or fixed (see the errors above).")
    return lines


def run_fix(paths: Iterable[str], settings, diff: bool = False, quiet: bool = False,
            out: TextIO | None = None, err: TextIO | None = None, jobs: int | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    done, errors = fix_paths(paths, settings, write=not diff, jobs=jobs)
    for e in errors:
        err.write(f"error: {e.where}: {e.reason}\n")
    changed = [d for d in done if d.changed and (diff or d.written)]
    applied = [f for d in changed for f in d.applied]
    remaining = [f for d in done for f in d.remaining]
    if diff:
        for d in changed:
            out.write(d.diff)
    elif not quiet:
        for d in changed:
            out.write(f"Fixed {plural(len(d.applied), 'finding')} in {d.path} ({_codes(d.applied)})\n")
    if not quiet:
        verb = "Would fix" if diff else "Fixed"
        summary = f"{verb} {plural(len(applied), 'finding')} in {plural(len(changed), 'file')}."
        if remaining:
            unsafe = sum(1 for f in remaining if f.fix and f.fix.applicability == "unsafe" and not settings.unsafe_fixes)
            left = f" {plural(len(remaining), 'finding')} {'remains' if len(remaining) == 1 else 'remain'}"
            if unsafe:
                left += f" ({unsafe} fixable with `--unsafe-fixes`)"
            summary += left + "; `neuron-lint check` lists them."
        (err if diff else out).write(summary + "\n")
    if errors:
        return 2
    if diff:
        return 1 if changed else 0
    return 1 if remaining else 0
