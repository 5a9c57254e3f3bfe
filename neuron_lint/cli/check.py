"""``neuron-lint check`` and ``neuron-lint fix`` once their options are parsed: run, render, exit code.

Where output goes: what a format writes (the findings, the statistics, with ``--fix`` the list of
fixed files and the last summary) goes to standard output, or to ``--output-file``. A machine format
(json, sarif, github, junit) keeps standard output for its document alone: everything else
(fixed files, summaries, warnings, errors) goes to standard error.
"""

from __future__ import annotations

import dataclasses
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, TextIO

from ..errors import UsageError
from ..output import MACHINE_FORMATS
from ..output.safe_output import EscapingWriter, err_line

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
#: Output formats that show each fix's text edits (computed with LibCST only for them).
EDIT_FORMATS = ("json", "sarif")
#: What ``--statistics`` can be written as: its text table, or JSON.
STATISTICS_FORMATS = ("full", "concise", "json")


@dataclass
class CheckRequest:
    """The parsed command line of ``check`` (and of ``fix``, which is ``check --fix``)."""

    paths: list[str]
    statistics: bool = False
    exit_zero: bool = False
    add_noqa: bool = False
    show_source: bool = True
    quiet: bool = False
    verbose: bool = False
    jobs: int = 0
    no_cache: bool = False
    fix: bool = False
    diff: bool = False
    output_file: str | None = None
    show_settings: bool = False
    show_files: bool = False


def report_errors(result, already: set | None = None, verbose: bool = False) -> int:
    """The warnings and errors of a run, on standard error (with ``verbose``, an internal error's
    traceback after it); how many errors were new."""
    for warning in getattr(result, "warnings", ()):
        err_line(f"warning: {warning.path}: {warning.reason}")
    new = 0
    for err in result.errors:
        if already is not None and (err.where, err.reason) in already:
            continue
        new += 1
        err_line(f"error: {err.where}: {err.reason}")
        for line in err.detail.splitlines() if verbose else ():
            err_line(line)
    return new


def warn_if_nothing_checked(result, quiet: bool) -> None:
    """ruff's "No Python files found": a run that checked nothing says so (and still exits 0)."""
    if not quiet and result.files_checked == 0 and not result.errors:
        err_line("warning: No Python files found under the given paths (nothing was checked)")


@contextmanager
def output_stream(path: str | None) -> Iterator[TextIO]:
    """Standard output, or the ``--output-file`` (created or replaced, UTF-8)."""
    if path is None:
        yield sys.stdout
        sys.stdout.flush()
        return
    try:
        fh = open(path, "w", encoding="utf-8", errors="backslashreplace", newline="\n")
    except OSError as exc:
        raise UsageError(f"--output-file: cannot write {path}: {exc.strerror or exc}") from None
    with fh:
        yield fh


def run_check(resolved, request: CheckRequest) -> int:
    """Check (with ``request.fix``: fix, then check) the paths; the exit code."""
    from ..config.per_file import SettingsTree

    tree = SettingsTree(resolved)
    fmt = tree.output_format
    if request.statistics and fmt not in STATISTICS_FORMATS:
        raise UsageError(f"--statistics is written as text or JSON, not as {fmt} (use --output-format json)")
    if fmt in EDIT_FORMATS:  # they spell out each fix's text edits
        tree = tree.replace(fix_edits=True)
    paths = request.paths or ["."]
    if request.show_files or request.show_settings:
        from .show import show_files, show_settings

        return show_files(paths, tree) if request.show_files else show_settings(paths, tree)
    if request.fix or request.diff:
        warn_old_torch(resolved, request.quiet)
    if request.diff:
        from .fix import run_fix

        return run_fix(paths, tree, diff=True, quiet=request.quiet, jobs=request.jobs or None, **fix_streams(True))
    if request.add_noqa:
        return _add_noqa(paths, tree, request.quiet)
    with output_stream(request.output_file) as out:
        return _check_and_render(paths, tree, request, out)


def _check_and_render(paths: list[str], tree, request: CheckRequest, out: TextIO) -> int:
    from ..engine.runner import check_paths
    from ..output import RenderOptions, get_renderer
    from .progress import progress_bar, wanted

    fmt = tree.output_format
    # with a machine format, standard output (or the file) holds the document and nothing else
    notes = EscapingWriter(sys.stderr if fmt in MACHINE_FORMATS else out)
    outcome = None
    if request.fix:
        from .fix import apply_fixes, fixed_file_lines

        outcome = apply_fixes(paths, tree, jobs=request.jobs or None)
        report_errors(outcome, verbose=request.verbose)
        if not request.quiet:
            for line in fixed_file_lines(outcome):
                notes.write(line + "\n")
    with progress_bar(wanted(fmt, request.quiet) and not request.statistics) as progress:
        # a file the fix analysed as it now stands is not checked again
        known = {d.path: d.checked for d in outcome.done if d.checked is not None} if outcome is not None else None
        result = check_paths(paths, tree, jobs=request.jobs or None, cache=open_cache(tree, request.no_cache),
                             progress=progress, known=known)
    already = {(e.where, e.reason) for e in outcome.errors} if outcome is not None else None
    errors = report_errors(result, already, request.verbose) + (len(outcome.errors) if outcome is not None else 0)
    warn_if_nothing_checked(result, request.quiet)
    if request.statistics:
        from ..output.statistics import render_statistics

        render_statistics(result, out, as_json=fmt == "json", unsafe_fixes=tree.unsafe_fixes,
                          quiet=request.quiet or outcome is not None)
    else:
        options = RenderOptions(show_source=request.show_source, quiet=request.quiet or outcome is not None,
                                unsafe_fixes=tree.unsafe_fixes)
        get_renderer(fmt)(result, out, options)
    if outcome is not None and not request.quiet:
        from .fix import after_fix_summary

        for line in after_fix_summary(outcome, result, tree.unsafe_fixes, errors):
            notes.write(line + "\n")
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if result.findings and not request.exit_zero else EXIT_OK


def fix_streams(diff: bool) -> dict:
    """Where ``run_fix`` writes: its messages name files, so control characters are made visible;
    a diff goes out as it is (``patch`` and ``git apply`` read it)."""
    return {"out": sys.stdout if diff else EscapingWriter(sys.stdout), "err": EscapingWriter(sys.stderr)}


def warn_old_torch(resolved, quiet: bool) -> None:
    """The project supports a torch older than the fixes can target: say so before fixing."""
    if resolved.torch_below_floor and not quiet:
        err_line(
            f"neuron-lint: warning: the project declares torch {resolved.torch_below_floor} ({resolved.min_torch_from}), "
            f"but the fixes write torch.accelerator, which needs PyTorch {resolved.settings.min_torch}; "
            "raise the project's torch requirement, or pass --min-torch to confirm"
        )


def _add_noqa(paths: list[str], settings, quiet: bool) -> int:
    """``check --add-noqa``: suppress every current finding and say how many."""
    from ..suppress.add_noqa import add_noqa

    done = add_noqa(paths, settings)
    report_errors(done)
    if not quiet:
        files = f" in {len(done.files)} file{'s' if len(done.files) != 1 else ''}" if done.files else ""
        err_line(f"Added {done.added} noqa directive{'s' if done.added != 1 else ''}{files}.")
    return EXIT_ERROR if done.errors else EXIT_OK


def open_cache(settings, no_cache: bool):
    """The project's result cache, or None with --no-cache (or NEURON_LINT_NO_CACHE=1)."""
    import os

    if no_cache or os.environ.get("NEURON_LINT_NO_CACHE", "") not in ("", "0"):
        return None
    from ..config.per_file import base_of
    from ..engine.cache import Cache, default_cache_dir

    return Cache(default_cache_dir(), base_of(settings))


# ---------------------------------------------------------------------------- standard input
def read_stdin_or_say(settings, name: str):
    """Standard input's bytes, or None after saying why it could not be read."""
    from ..io.source import SourceError
    from .stdin import read_stdin

    try:
        return read_stdin(settings)
    except (OSError, SourceError) as exc:
        err_line(f"error: {name}: {getattr(exc, 'strerror', None) or exc}")
        return None


def check_stdin_command(stdin_filename, settings, request: CheckRequest) -> int:
    """``check -``: findings for standard input (with --fix or --diff: as ``fix -``)."""
    from ..output import RenderOptions, get_renderer
    from .stdin import check_stdin, name_of

    if request.add_noqa:
        raise UsageError("--add-noqa needs files; it cannot write to standard input")
    fmt = settings.output_format
    if request.statistics and fmt not in STATISTICS_FORMATS:
        raise UsageError(f"--statistics is written as text or JSON, not as {fmt} (use --output-format json)")
    if fmt in EDIT_FORMATS:
        settings = dataclasses.replace(settings, fix_edits=True)
    name = name_of(stdin_filename)
    if request.fix or request.diff:
        return fix_stdin_command(stdin_filename, settings, request.diff, request.quiet)
    data = read_stdin_or_say(settings, name)
    if data is None:
        return EXIT_ERROR
    result = check_stdin(data, name, settings)
    report_errors(result, verbose=request.verbose)
    with output_stream(request.output_file) as out:
        if request.statistics:
            from ..output.statistics import render_statistics

            render_statistics(result, out, as_json=fmt == "json", unsafe_fixes=settings.unsafe_fixes, quiet=request.quiet)
        else:
            from ..engine.pipeline import display_path

            options = RenderOptions(show_source=request.show_source, quiet=request.quiet, unsafe_fixes=settings.unsafe_fixes,
                                    texts={display_path(name): data})
            get_renderer(fmt)(result, out, options)
    if result.errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if result.findings and not request.exit_zero else EXIT_OK


def fix_stdin_command(stdin_filename, settings, diff: bool, quiet: bool) -> int:
    from ..output.safe_output import BinaryOut
    from .stdin import fix_stdin, name_of

    name = name_of(stdin_filename)
    data = read_stdin_or_say(settings, name)
    if data is None:
        return EXIT_ERROR
    return fix_stdin(data, name, settings, diff=diff, quiet=quiet, out=BinaryOut(sys.stdout), err=EscapingWriter(sys.stderr))
