"""``neuron-lint report``: the migration readiness report (see :mod:`neuron_lint.report`)."""

from __future__ import annotations

import sys
from typing import List, Optional

import typer

from ..output.safe_output import err_line
from . import options as opt
from .typer_app import EXIT_ERROR, EXIT_OK, app, fail, user_facing_errors

REPORT_FORMATS_HELP = "terminal (default), markdown, html or json."


@app.command("report")
def report_cmd(
    paths: Optional[List[str]] = typer.Argument(None, metavar="PATH", help="Files or directories to assess (default: the current directory).", show_default=False),
    report_format: str = typer.Option("terminal", "--format", "-f", metavar="FORMAT", help=REPORT_FORMATS_HELP, show_default=False),
    output: Optional[str] = typer.Option(None, "--output", "--output-file", "-o", metavar="PATH", help="Write the report to this file instead of standard output."),
    select: Optional[List[str]] = opt.SELECT,
    extend_select: Optional[List[str]] = opt.EXTEND_SELECT,
    ignore: Optional[List[str]] = opt.IGNORE,
    per_file_ignores: Optional[List[str]] = opt.PER_FILE_IGNORES,
    exclude: Optional[List[str]] = opt.EXCLUDE,
    extend_exclude: Optional[List[str]] = opt.EXTEND_EXCLUDE,
    respect_gitignore: Optional[bool] = opt.RESPECT_GITIGNORE,
    config: Optional[str] = opt.CONFIG,
    isolated: bool = opt.ISOLATED,
    top: int = typer.Option(10, "--top", min=1, metavar="N", help="How many of the files that need most work to list (default: 10)."),
    jobs: int = opt.JOBS,
    no_cache: bool = opt.NO_CACHE,
    verbose: bool = opt.VERBOSE,
) -> None:
    """How far the code is from Trainium: verdict, counts per family, fixable share, effort, blockers.

    Exit codes: 0 the report was written (whatever it found), 2 usage error or a file that could not
    be read or parsed (the report is still written and lists it).
    """
    with user_facing_errors(verbose):
        from ..config.files import ConfigError, from_command_line
        from ..config.per_file import SettingsTree
        from ..engine.runner import check_paths, iter_files
        from ..io.discovery import Missing, Skipped
        from ..report import build_report, get_report_renderer
        from .check import open_cache, report_errors, warn_if_nothing_checked

        roots = paths or ["."]
        try:
            renderer = get_report_renderer(report_format)
            tree = SettingsTree(from_command_line(
                roots, config=config, isolated=isolated, select=select, extend_select=extend_select, ignore=ignore,
                per_file_ignores=per_file_ignores, exclude=exclude, extend_exclude=extend_exclude,
                respect_gitignore=respect_gitignore))
            result = check_paths(roots, tree, jobs=jobs or None, cache=open_cache(tree, no_cache))
            files = [str(f) for f in iter_files(roots, tree) if not isinstance(f, (Missing, Skipped))]
        except (ValueError, ConfigError) as exc:
            raise fail(str(exc))
        report_errors(result)
        warn_if_nothing_checked(result, quiet=False)
        data = build_report(result, roots, files=files, top_files=top)
        if output:
            try:
                with open(output, "w", encoding="utf-8", errors="backslashreplace", newline="\n") as fh:
                    renderer(data, fh)
            except OSError as exc:
                raise fail(f"cannot write {output}: {exc.strerror or exc}")
            err_line(f"Wrote the {report_format} report to {output} ({data['verdict']}).")
        else:  # the output layer (output.safe_output) deals with a closed pipe or a full disk
            renderer(data, sys.stdout)
            sys.stdout.flush()
    raise typer.Exit(EXIT_ERROR if result.errors else EXIT_OK)
