"""The command-line options that several commands share, each declared once with its help text.

Every option that takes a value names it (``--select CODES``, ``--output-format FORMAT``), and an
on/off flag shows no type at all: ``--help`` never shows typer's ``<bool>`` or ``<list[str]>``.
"""

from __future__ import annotations

import typer

from ..output import FORMATS

#: Shown for each option that takes an output format.
FORMAT_CHOICES = ", ".join(FORMATS)


def flag(*decls: str, help: str, default: bool = False):
    """An on/off option; the empty metavar keeps typer from printing ``<bool>``."""
    return typer.Option(default, *decls, help=help, metavar="")


def tristate(decls: str, help: str):
    """``--x/--no-x`` that is None when not given (the configuration decides)."""
    return typer.Option(None, decls, help=help, metavar="")


OUTPUT_FORMAT = typer.Option(None, "--output-format", metavar="FORMAT",
                             help=f"One of: {FORMAT_CHOICES} (default: full, or the configuration's).")
OUTPUT_FILE = typer.Option(None, "--output-file", "-o", metavar="PATH",
                           help="Write the output to this file instead of standard output (messages stay on standard error).")
SELECT = typer.Option(None, "--select", metavar="CODES", help="Only these rule codes or prefixes (comma-separated; repeatable).")
EXTEND_SELECT = typer.Option(None, "--extend-select", metavar="CODES", help="Add these codes or prefixes to the selection.")
IGNORE = typer.Option(None, "--ignore", metavar="CODES", help="Skip these codes or prefixes.")
PER_FILE_IGNORES = typer.Option(None, "--per-file-ignores", metavar="GLOB:CODES",
                                help='Skip codes in matching files, such as "tests/*:NRN201" (repeatable; adds to the configuration\'s).')
EXCLUDE = typer.Option(None, "--exclude", metavar="GLOB", help="Skip files and folders matching this glob (replaces the configuration's list; repeatable).")
EXTEND_EXCLUDE = typer.Option(None, "--extend-exclude", metavar="GLOB", help="Skip these globs too (repeatable).")
RESPECT_GITIGNORE = tristate("--respect-gitignore/--no-respect-gitignore", "Skip files .gitignore ignores (default: yes).")
FORCE_EXCLUDE = tristate("--force-exclude/--no-force-exclude", "Apply excludes to files named on the command line too (for pre-commit).")
CONFIG = typer.Option(None, "--config", metavar="FILE", help="Read settings from this file for every path instead of each file's nearest configuration.")
ISOLATED = flag("--isolated", help="Ignore every configuration file.")
QUIET = flag("--quiet", "-q", help="Print findings only: no summary, no list of fixed files.")
VERBOSE = flag("--verbose", "-v", help="Show tracebacks for internal errors.")
JOBS = typer.Option(0, "--jobs", "-j", min=0, metavar="N", help="Worker processes (0, the default: one per CPU; small runs use one).")
NO_CACHE = flag("--no-cache", help="Check every file afresh; do not read or write .neuron_lint_cache/.")
STATISTICS = flag("--statistics", help="Print a count per rule instead of the findings (text, or JSON with --output-format json).")
EXIT_ZERO = flag("--exit-zero", help="Exit 0 even when there are findings (errors still exit 2).")
SHOW_SOURCE = typer.Option(True, "--show-source/--no-show-source", metavar="", help="Show the source line of each finding (default: yes).")
UNSAFE_FIXES = tristate("--unsafe-fixes/--no-unsafe-fixes", "Also apply (or count as fixable) unsafe fixes; review the diff.")
DEVICE = typer.Option(None, "--device", metavar="accelerator|neuron",
                      help="How fixes write the device: accelerator (default, torch.accelerator, still runs on GPUs) or neuron (plain \"neuron\").")
MIN_TORCH = typer.Option(None, "--min-torch", metavar="VERSION",
                         help="Oldest PyTorch the fixed code must run on (default: the oldest torch the project declares, at least 2.6; "
                              "2.13, TorchNeuron's, if it declares none); newer APIs stay suggestions.")
STDIN_FILENAME = typer.Option(None, "--stdin-filename", metavar="PATH",
                              help="The file name that standard input (`-`) stands for: in messages, for the configuration, "
                                   "per-file ignores and notebook detection.")
DIFF = flag("--diff", help="Print the fixes as a unified diff and write nothing (exit 1 if there is something to change).")


def _plain_help_types() -> None:
    """Recent typer prints each parameter's Python type in ``--help`` (``<bool>``, ``<list[str]>``).
    A flag takes no value and an argument is named by its metavar: neither shows a type here."""
    try:
        from typer.core import TyperArgument, TyperOption
    except ImportError:  # pragma: no cover - an older typer draws help with click's own metavars
        return
    for cls, keep in ((TyperOption, lambda p: not getattr(p, "is_flag", False)), (TyperArgument, lambda p: p.metavar is None)):
        original = getattr(cls, "display_type_rich", None)
        if original is None or getattr(original, "_neuron_lint", False):
            continue

        def display_type_rich(self, ctx, _original=original, _keep=keep):
            return _original(self, ctx) if _keep(self) else None

        display_type_rich._neuron_lint = True
        cls.display_type_rich = display_type_rich


_plain_help_types()
