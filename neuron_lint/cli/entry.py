"""The console-script entry point, kept tiny: ``neuron-lint --version`` answers without importing
the command-line framework (typer, click, rich); everything else goes to :mod:`neuron_lint.cli.commands`."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        from .. import __version__
        from ..output.safe_output import finish, install

        install()
        sys.stdout.write(f"neuron-lint {__version__}\n")
        raise SystemExit(finish(0))
    from .commands import main as cli_main

    cli_main()
