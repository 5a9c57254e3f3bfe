"""The ``neuron-lint`` command line: parse arguments, call the library, render, set the exit code.

Exit codes: 0 no findings, 1 findings, 2 usage or configuration error, or a file that could not
be read or parsed (the other files are still checked and reported).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from contextlib import contextmanager
from typing import Iterator, List, Optional

import typer

from . import __version__
from .render.safe_output import EscapingWriter, err_line, out_line

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
#: Output formats that show each fix's text edits (computed with LibCST only for them).
EDIT_FORMATS = ("json", "sarif")

app = typer.Typer(
    name="neuron-lint",
    help="Find and rewrite CUDA-specific PyTorch code for AWS Trainium (TorchNeuron).",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        out_line(f"neuron-lint {__version__}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _main(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """Find and rewrite CUDA-specific PyTorch code for AWS Trainium (TorchNeuron)."""


def fail(message: str, code: int = EXIT_ERROR) -> "typer.Exit":
    err_line(f"neuron-lint: error: {message}")
    return typer.Exit(code)


@contextmanager
def user_facing_errors(verbose: bool) -> Iterator[None]:
    """Turn anything unexpected into one line on stderr and exit 2; a traceback only with --verbose."""
    try:
        yield
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        raise fail("interrupted", 130) from None
    except Exception as exc:
        if verbose:
            raise
        raise fail(f"internal error: {type(exc).__name__}: {exc} (run with --verbose for the traceback)") from None


def report_errors(result, verbose: bool = False) -> None:
    for err in result.errors:
        where = err.path if err.line is None else f"{err.path}:{err.line}:{err.col or 1}"
        err_line(f"error: {where}: {err.reason}")


@app.command()
def check(
    paths: Optional[List[str]] = typer.Argument(None, help="Files or directories to check (default: the current directory)."),
    output_format: Optional[str] = typer.Option(None, "--output-format", help="full (default), concise, json, sarif, github or junit."),
    select: Optional[List[str]] = typer.Option(None, "--select", help="Only these rule codes or prefixes (comma-separated)."),
    extend_select: Optional[List[str]] = typer.Option(None, "--extend-select", help="Add these codes or prefixes to the selection."),
    ignore: Optional[List[str]] = typer.Option(None, "--ignore", help="Skip these codes or prefixes."),
    per_file_ignores: Optional[List[str]] = typer.Option(None, "--per-file-ignores", help='Skip codes in matching files: "GLOB:CODES" (repeatable).'),
    exclude: Optional[List[str]] = typer.Option(None, "--exclude", help="Skip files and folders matching this glob (replaces the config's list; repeatable)."),
    extend_exclude: Optional[List[str]] = typer.Option(None, "--extend-exclude", help="Skip these globs too (repeatable)."),
    respect_gitignore: Optional[bool] = typer.Option(None, "--respect-gitignore/--no-respect-gitignore", help="Skip files .gitignore ignores (default: yes)."),
    force_exclude: Optional[bool] = typer.Option(None, "--force-exclude/--no-force-exclude", help="Apply excludes to files named on the command line too (for pre-commit)."),
    config: Optional[str] = typer.Option(None, "--config", help="Read settings from this file instead of searching for one."),
    isolated: bool = typer.Option(False, "--isolated", help="Ignore every configuration file."),
    statistics: bool = typer.Option(False, "--statistics", help="Print a count per rule instead of the findings."),
    exit_zero: bool = typer.Option(False, "--exit-zero", help="Exit 0 even when there are findings (errors still exit 2)."),
    add_noqa: bool = typer.Option(False, "--add-noqa", help="Write a `# noqa` comment for every current finding."),
    show_source: bool = typer.Option(True, "--show-source/--no-show-source", help="Show the source line of each finding."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print findings only, no summary."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show tracebacks for internal errors."),
    jobs: int = typer.Option(0, "--jobs", "-j", min=0, help="Worker processes (0: one per CPU; small runs use one)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Check every file afresh; do not read or write .neuron_lint_cache/."),
    fix: bool = typer.Option(False, "--fix", help="Apply the safe fixes first (like `neuron-lint fix`), then report what is left."),
    diff: bool = typer.Option(False, "--diff", help="Print the fixes as a unified diff and write nothing (exit 1 if there is something to change)."),
    unsafe_fixes: Optional[bool] = typer.Option(None, "--unsafe-fixes/--no-unsafe-fixes", help="Also apply (or count as fixable) unsafe fixes."),
    device: Optional[str] = typer.Option(None, "--device", help="How fixes write the device: accelerator (default, torch.accelerator) or neuron."),
    min_torch: Optional[str] = typer.Option(None, "--min-torch", help="Oldest PyTorch the fixed code must run on (default: the oldest torch the project declares, at least 2.6; 2.13, TorchNeuron's, if it declares none); newer APIs stay suggestions."),
) -> None:
    """Check Python files for code that breaks or behaves differently on Trainium."""
    with user_facing_errors(verbose):
        from .api import check_paths
        from .config import ConfigError, from_command_line
        from .render import RenderOptions, get_renderer

        try:
            resolved = from_command_line(
                paths or ["."], config=config, isolated=isolated, select=select, extend_select=extend_select,
                ignore=ignore, per_file_ignores=per_file_ignores, output_format=output_format, exclude=exclude,
                extend_exclude=extend_exclude, respect_gitignore=respect_gitignore, force_exclude=force_exclude,
                device=device, min_torch=min_torch, unsafe_fixes=unsafe_fixes,
            )
        except ConfigError as exc:
            raise fail(str(exc))
        settings = resolved.settings
        renderer = get_renderer(settings.output_format)
        if settings.output_format in EDIT_FORMATS:  # they spell out each fix's text edits
            settings = dataclasses.replace(settings, fix_edits=True)
        fixed_code = 0
        if fix or diff:
            from .fix_command import run_fix

            warn_old_torch(resolved, quiet)

            fixed_code = run_fix(paths or ["."], settings, diff=diff, quiet=quiet, jobs=jobs or None, **fix_streams(diff))
            if diff:
                raise typer.Exit(fixed_code)
        if add_noqa:
            _add_noqa(paths or ["."], settings, quiet, verbose)
        from .progress import progress_bar, wanted

        with progress_bar(wanted(settings.output_format, quiet) and not statistics) as progress:
            result = check_paths(paths or ["."], settings, jobs=jobs or None, cache=open_cache(settings, no_cache), progress=progress)
        report_errors(result, verbose)
        if statistics:
            from .render.statistics import render_statistics

            render_statistics(result, sys.stdout, as_json=settings.output_format == "json")
        else:
            renderer(result, sys.stdout, RenderOptions(show_source=show_source, quiet=quiet, unsafe_fixes=settings.unsafe_fixes))
        sys.stdout.flush()
    if result.errors or fixed_code == EXIT_ERROR:
        raise typer.Exit(EXIT_ERROR)
    raise typer.Exit(EXIT_FINDINGS if result.findings and not exit_zero else EXIT_OK)


@app.command("fix")
def fix_cmd(
    paths: Optional[List[str]] = typer.Argument(None, help="Files or directories to fix (default: the current directory)."),
    diff: bool = typer.Option(False, "--diff", help="Print a unified diff and write nothing (exit 1 if there is something to change, else 0)."),
    unsafe_fixes: Optional[bool] = typer.Option(None, "--unsafe-fixes/--no-unsafe-fixes", help="Also apply unsafe fixes (they can change behaviour; review the diff)."),
    device: Optional[str] = typer.Option(None, "--device", help="accelerator (default): vendor-neutral torch.accelerator code that still runs on GPUs; neuron: plain \"neuron\"."),
    min_torch: Optional[str] = typer.Option(None, "--min-torch", help="Oldest PyTorch the fixed code must run on (default: the oldest torch the project declares, at least 2.6; 2.13, TorchNeuron's, if it declares none); APIs newer than that stay suggestions."),
    select: Optional[List[str]] = typer.Option(None, "--select", help="Only fix these rule codes or prefixes (comma-separated)."),
    extend_select: Optional[List[str]] = typer.Option(None, "--extend-select", help="Add these codes or prefixes to the selection."),
    ignore: Optional[List[str]] = typer.Option(None, "--ignore", help="Do not fix these codes or prefixes."),
    config: Optional[str] = typer.Option(None, "--config", help="Read settings from this file instead of searching for one."),
    isolated: bool = typer.Option(False, "--isolated", help="Ignore every configuration file."),
    per_file_ignores: Optional[List[str]] = typer.Option(None, "--per-file-ignores", help="GLOB:CODES pairs added to the configured ones."),
    exclude: Optional[List[str]] = typer.Option(None, "--exclude", help="Globs to skip (replaces the configured list)."),
    extend_exclude: Optional[List[str]] = typer.Option(None, "--extend-exclude", help="More globs to skip."),
    respect_gitignore: Optional[bool] = typer.Option(None, "--respect-gitignore/--no-respect-gitignore", help="Skip files .gitignore ignores (default: yes)."),
    force_exclude: Optional[bool] = typer.Option(None, "--force-exclude/--no-force-exclude", help="Apply excludes to files named on the command line too (for pre-commit)."),
    jobs: int = typer.Option(0, "--jobs", "-j", min=0, help="Worker processes (0: one per CPU; small runs use one)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Accepted for symmetry with `check`: fixing never reads the result cache."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing but errors (and the diff)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show tracebacks for internal errors."),
) -> None:
    """Rewrite CUDA-specific code into device-agnostic PyTorch; report what changed and what is left.

    Exit codes: 0 nothing left to report (with --diff: nothing to change), 1 findings remain (with
    --diff: there is something to change), 2 usage error or a file that could not be read, parsed or
    written (the other files are still fixed).
    """
    with user_facing_errors(verbose):
        from .config import ConfigError, from_command_line
        from .fix_command import run_fix

        try:
            resolved = from_command_line(
                paths or ["."], config=config, isolated=isolated, select=select, extend_select=extend_select,
                ignore=ignore, device=device, min_torch=min_torch, unsafe_fixes=unsafe_fixes,
                per_file_ignores=per_file_ignores, exclude=exclude, extend_exclude=extend_exclude,
                respect_gitignore=respect_gitignore, force_exclude=force_exclude,
            )
        except ConfigError as exc:
            raise fail(str(exc))
        settings = resolved.settings
        warn_old_torch(resolved, quiet)
        code = run_fix(paths or ["."], settings, diff=diff, quiet=quiet, jobs=jobs or None, **fix_streams(diff))
        sys.stdout.flush()
    raise typer.Exit(code)


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


def _add_noqa(paths: list[str], settings, quiet: bool, verbose: bool) -> None:
    """``check --add-noqa``: suppress every current finding, say how many, and exit."""
    from .add_noqa import add_noqa

    done = add_noqa(paths, settings)
    report_errors(done, verbose)
    if not quiet:
        files = f" in {len(done.files)} file{'s' if len(done.files) != 1 else ''}" if done.files else ""
        err_line(f"Added {done.added} noqa directive{'s' if done.added != 1 else ''}{files}.")
    raise typer.Exit(EXIT_ERROR if done.errors else EXIT_OK)


def open_cache(settings, no_cache: bool):
    """The project's result cache, or None with --no-cache (or NEURON_LINT_NO_CACHE=1)."""
    if no_cache or os.environ.get("NEURON_LINT_NO_CACHE", "") not in ("", "0"):
        return None
    from .cache import Cache, default_cache_dir

    return Cache(default_cache_dir(), settings)


@app.command("clean")
def clean_cmd() -> None:
    """Remove the result cache (.neuron_lint_cache/ at the project root)."""
    from .cache import clean, default_cache_dir

    directory = default_cache_dir()
    try:
        removed = clean(directory)
    except (OSError, ValueError) as exc:
        raise fail(f"cannot remove {directory}: {exc}")
    out_line(f"Removed {directory}" if removed else f"No cache at {directory}")


@app.command("report")
def report_cmd(
    paths: Optional[List[str]] = typer.Argument(None, help="Files or directories to assess (default: the current directory)."),
    report_format: str = typer.Option("terminal", "--format", "-f", help="terminal (default), markdown, html or json."),
    output: Optional[str] = typer.Option(None, "--output", "-o", help="Write the report to this file instead of standard output."),
    select: Optional[List[str]] = typer.Option(None, "--select", help="Only these rule codes or prefixes (comma-separated)."),
    extend_select: Optional[List[str]] = typer.Option(None, "--extend-select", help="Add these codes or prefixes to the selection."),
    ignore: Optional[List[str]] = typer.Option(None, "--ignore", help="Skip these codes or prefixes."),
    config: Optional[str] = typer.Option(None, "--config", help="Read settings from this file instead of searching for one."),
    isolated: bool = typer.Option(False, "--isolated", help="Ignore every configuration file."),
    top: int = typer.Option(10, "--top", min=1, help="How many of the files that need most work to list."),
    jobs: int = typer.Option(0, "--jobs", "-j", min=0, help="Worker processes (0: one per CPU; small runs use one)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Check every file afresh; do not read or write .neuron_lint_cache/."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show tracebacks for internal errors."),
) -> None:
    """How far the code is from Trainium: verdict, counts per family, fixable share, effort, blockers.

    Exit codes: 0 the report was written (whatever it found), 2 usage error or a file that could not
    be read or parsed (the report is still written and lists it).
    """
    with user_facing_errors(verbose):
        from .api import check_paths, iter_files
        from .config import ConfigError, from_command_line
        from .discovery import Missing
        from .report import build_report, get_report_renderer

        try:
            renderer = get_report_renderer(report_format)
            settings = from_command_line(paths or ["."], config=config, isolated=isolated, select=select,
                                         extend_select=extend_select, ignore=ignore).settings
        except (ValueError, ConfigError) as exc:
            raise fail(str(exc))
        roots = paths or ["."]
        result = check_paths(roots, settings, jobs=jobs or None, cache=open_cache(settings, no_cache))
        report_errors(result, verbose)
        files = [str(f) for f in iter_files(roots, settings) if not isinstance(f, Missing)]
        data = build_report(result, roots, files=files, top_files=top)
        if output:
            try:
                with open(output, "w", encoding="utf-8", errors="backslashreplace", newline="\n") as fh:
                    renderer(data, fh)
            except OSError as exc:
                raise fail(f"cannot write {output}: {exc.strerror or exc}")
            err_line(f"Wrote the {report_format} report to {output} ({data['verdict']}).")
        else:  # the output layer (render.safe_output) deals with a closed pipe or a full disk
            renderer(data, sys.stdout)
            sys.stdout.flush()
    raise typer.Exit(EXIT_ERROR if result.errors else EXIT_OK)


@app.command("rules")
def rules_cmd(
    output_format: str = typer.Option("table", "--output-format", help="table or json."),
) -> None:
    """List every rule: code, name, category, confidence and whether it has a fix."""
    from .catalog import CatalogError, load_catalog

    try:
        catalog = load_catalog()
    except CatalogError as exc:
        raise fail(f"rule catalog: {exc}")
    if output_format == "json":
        import json

        sys.stdout.write(json.dumps([
            {"code": r.code, "name": r.name, "category": r.category, "confidence": r.confidence,
             "effort": r.effort, "fix": r.fix.safety if r.fix else None, "message": r.message, "url": r.url}
            for r in catalog.rules
        ], indent=2) + "\n")
        return
    if output_format != "table":
        raise fail(f"unknown output format {output_format!r} (choose table or json)")
    from .render.rules import print_rules_table

    print_rules_table(catalog)


@app.command("rule")
def rule_cmd(code: str = typer.Argument(..., help="A rule code such as NRN101, or its name.")) -> None:
    """Explain one rule: what it flags, why it matters on Trainium, and what to write instead."""
    from .catalog import load_catalog
    from .render.rules import print_rule

    catalog = load_catalog()
    rule = catalog.get(code) or next((r for r in catalog.rules if r.name == code.lower()), None)
    if rule is None:
        raise fail(f"unknown rule {code!r} (see `neuron-lint rules`)")
    print_rule(rule)


def main() -> None:
    """Console-script entry point. Everything written goes through :mod:`.render.safe_output`:
    a closed pipe ends the output quietly with the run's exit code; a full disk is exit code 2."""
    from .render.safe_output import finish, install

    install()
    code: object = 0
    try:
        if os.environ.get("NO_COLOR") == "":
            os.environ.pop("NO_COLOR")  # an empty NO_COLOR does not disable colour (no-color.org)
        if sys.argv[1:2] == ["check"]:  # `check FILE...` as pre-commit runs it: skip the parser's set-up
            from .fastpath import run_simple

            run_simple(check, sys.argv[2:])
        app()
    except SystemExit as exc:
        code = exc.code
    raise SystemExit(finish(code))
