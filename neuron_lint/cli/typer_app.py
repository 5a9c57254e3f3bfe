"""The ``neuron-lint`` command line: parse arguments, call the library, render, set the exit code.

Exit codes: 0 no findings, 1 findings, 2 usage or configuration error, or a file that could not
be read or parsed (the other files are still checked and reported).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, List, Optional

import typer

from .. import __version__
from ..output.safe_output import err_line, out_line
from . import options as opt

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

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


def _settings_from_command_line(paths, stdin_filename, **values):
    """The run's configuration (or exit 2 naming the file and key), and whether it reads standard input."""
    from ..config.files import ConfigError, from_command_line
    from .stdin import config_paths, uses_stdin

    try:
        stdin = uses_stdin(paths, stdin_filename)
        return from_command_line(config_paths(stdin_filename) if stdin else paths or ["."], **values), stdin
    except (ConfigError, ValueError) as exc:
        raise fail(str(exc))


def _run(paths, stdin_filename, values: dict, request) -> int:
    """Resolve the configuration, then check (or fix) files or standard input; the exit code."""
    from ..errors import UsageError
    from .check import check_stdin_command, run_check, warn_old_torch

    resolved, stdin = _settings_from_command_line(paths, stdin_filename, **values)
    try:
        if stdin:
            if request.show_files or request.show_settings or request.output_file and (request.fix or request.diff):
                raise UsageError("--show-files, --show-settings and --output-file with --fix need files, not standard input")
            if request.fix or request.diff:
                warn_old_torch(resolved, request.quiet)
            return check_stdin_command(stdin_filename, resolved.settings, request)
        return run_check(resolved, request)
    except UsageError as exc:  # a configuration error found on the way (a nested file), or a bad combination
        raise fail(str(exc))


@app.command()
def check(
    paths: Optional[List[str]] = typer.Argument(None, metavar="PATH", help="Files or directories to check (default: the current directory); `-` reads standard input.", show_default=False),
    output_format: Optional[str] = opt.OUTPUT_FORMAT,
    output_file: Optional[str] = opt.OUTPUT_FILE,
    select: Optional[List[str]] = opt.SELECT,
    extend_select: Optional[List[str]] = opt.EXTEND_SELECT,
    ignore: Optional[List[str]] = opt.IGNORE,
    per_file_ignores: Optional[List[str]] = opt.PER_FILE_IGNORES,
    exclude: Optional[List[str]] = opt.EXCLUDE,
    extend_exclude: Optional[List[str]] = opt.EXTEND_EXCLUDE,
    respect_gitignore: Optional[bool] = opt.RESPECT_GITIGNORE,
    force_exclude: Optional[bool] = opt.FORCE_EXCLUDE,
    config: Optional[str] = opt.CONFIG,
    isolated: bool = opt.ISOLATED,
    statistics: bool = opt.STATISTICS,
    exit_zero: bool = opt.EXIT_ZERO,
    add_noqa: bool = opt.flag("--add-noqa", help="Write a `# noqa` comment for every current finding."),
    show_source: bool = opt.SHOW_SOURCE,
    show_files: bool = opt.flag("--show-files", help="List the files that would be checked, and check none."),
    show_settings: bool = opt.flag("--show-settings", help="Show the configuration the first of those files is checked with, and check none."),
    quiet: bool = opt.QUIET,
    verbose: bool = opt.VERBOSE,
    jobs: int = opt.JOBS,
    no_cache: bool = opt.NO_CACHE,
    fix: bool = opt.flag("--fix", help="Apply the safe fixes first (like `neuron-lint fix`), then report what is left."),
    diff: bool = opt.DIFF,
    unsafe_fixes: Optional[bool] = opt.UNSAFE_FIXES,
    device: Optional[str] = opt.DEVICE,
    min_torch: Optional[str] = opt.MIN_TORCH,
    stdin_filename: Optional[str] = opt.STDIN_FILENAME,
) -> None:
    """Check Python files, notebooks and dependency manifests for code that breaks or behaves
    differently on Trainium.

    Exit codes: 0 no findings, 1 findings, 2 usage or configuration error, or a file that could not
    be read or parsed (the other files are still checked and reported).
    """
    from .check import CheckRequest

    request = CheckRequest(paths or [], statistics=statistics, exit_zero=exit_zero, add_noqa=add_noqa,
                           show_source=show_source, quiet=quiet, verbose=verbose, jobs=jobs, no_cache=no_cache,
                           fix=fix, diff=diff, output_file=output_file, show_settings=show_settings, show_files=show_files)
    values = dict(config=config, isolated=isolated, select=select, extend_select=extend_select, ignore=ignore,
                  per_file_ignores=per_file_ignores, output_format=output_format, exclude=exclude,
                  extend_exclude=extend_exclude, respect_gitignore=respect_gitignore, force_exclude=force_exclude,
                  device=device, min_torch=min_torch, unsafe_fixes=unsafe_fixes)
    with user_facing_errors(verbose):
        code = _run(paths, stdin_filename, values, request)
    raise typer.Exit(code)


@app.command("fix")
def fix_cmd(
    paths: Optional[List[str]] = typer.Argument(None, metavar="PATH", help="Files or directories to fix (default: the current directory); `-` reads standard input.", show_default=False),
    diff: bool = opt.flag("--diff", help="Print a unified diff and write nothing (exit 1 if there is something to change, else 0)."),
    unsafe_fixes: Optional[bool] = opt.UNSAFE_FIXES,
    device: Optional[str] = opt.DEVICE,
    min_torch: Optional[str] = opt.MIN_TORCH,
    output_format: Optional[str] = opt.OUTPUT_FORMAT,
    output_file: Optional[str] = opt.OUTPUT_FILE,
    select: Optional[List[str]] = opt.SELECT,
    extend_select: Optional[List[str]] = opt.EXTEND_SELECT,
    ignore: Optional[List[str]] = opt.IGNORE,
    config: Optional[str] = opt.CONFIG,
    isolated: bool = opt.ISOLATED,
    per_file_ignores: Optional[List[str]] = opt.PER_FILE_IGNORES,
    exclude: Optional[List[str]] = opt.EXCLUDE,
    extend_exclude: Optional[List[str]] = opt.EXTEND_EXCLUDE,
    respect_gitignore: Optional[bool] = opt.RESPECT_GITIGNORE,
    force_exclude: Optional[bool] = opt.FORCE_EXCLUDE,
    statistics: bool = opt.STATISTICS,
    exit_zero: bool = opt.EXIT_ZERO,
    show_source: bool = opt.SHOW_SOURCE,
    jobs: int = opt.JOBS,
    no_cache: bool = opt.NO_CACHE,
    quiet: bool = opt.QUIET,
    verbose: bool = opt.VERBOSE,
    stdin_filename: Optional[str] = opt.STDIN_FILENAME,
) -> None:
    """Rewrite CUDA-specific code into device-agnostic PyTorch, then list what is left as `check` does.

    `-` as the path reads the source from standard input and writes the fixed source, and nothing
    else, to standard output (name it with --stdin-filename).

    Exit codes: 0 nothing left to report (with --diff: nothing to change), 1 findings remain (with
    --diff: there is something to change), 2 usage error or a file that could not be read, parsed or
    written (the other files are still fixed).
    """
    from .check import CheckRequest

    request = CheckRequest(paths or [], statistics=statistics, exit_zero=exit_zero, show_source=show_source,
                           quiet=quiet, verbose=verbose, jobs=jobs, no_cache=no_cache, fix=not diff, diff=diff,
                           output_file=output_file)
    values = dict(config=config, isolated=isolated, select=select, extend_select=extend_select, ignore=ignore,
                  device=device, min_torch=min_torch, unsafe_fixes=unsafe_fixes, output_format=output_format,
                  per_file_ignores=per_file_ignores, exclude=exclude, extend_exclude=extend_exclude,
                  respect_gitignore=respect_gitignore, force_exclude=force_exclude)
    with user_facing_errors(verbose):
        code = _run(paths, stdin_filename, values, request)
    raise typer.Exit(code)


@app.command("clean")
def clean_cmd() -> None:
    """Remove the result cache (.neuron_lint_cache/ at the project root)."""
    from ..engine.cache import clean, default_cache_dir

    directory = default_cache_dir()
    try:
        removed = clean(directory)
    except (OSError, ValueError) as exc:
        raise fail(f"cannot remove {directory}: {exc}")
    out_line(f"Removed {directory}" if removed else f"No cache at {directory}")


@app.command("server")
def server_cmd(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log the protocol traffic to standard error."),
) -> None:
    """Run the language server (LSP over standard input and output) for editors."""
    from ..server import serve

    raise typer.Exit(serve(verbose=verbose))
