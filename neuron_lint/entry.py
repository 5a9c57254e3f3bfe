"""The console-script entry point, kept tiny: ``neuron-lint --version`` answers without importing
the command-line framework (typer, click, rich); everything else goes to :mod:`neuron_lint.cli`."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        from . import __version__

        sys.stdout.write(f"neuron-lint {__version__}\n")
        sys.stdout.flush()
        raise SystemExit(0)
    from .cli import main as cli_main

    cli_main()
