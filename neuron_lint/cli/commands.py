"""The console script's ``main`` and the ``neuron-lint`` app with every command registered on it.

:mod:`.typer_app` declares the app and the ``check``/``fix``/``clean``/``server`` commands; :mod:`.rules`
and :mod:`.report` add theirs to the same app. Importing them here, after the app exists, keeps the
imports one-way: those modules import :mod:`.typer_app`, and nothing imports this module but the package.
"""

from __future__ import annotations

import gc
import os
import sys

from . import report, rules  # noqa: F401  (they register `rules`, `rule` and `report`)
from .typer_app import app, check

__all__ = ["app", "main"]

#: The cyclic garbage collector's thresholds for a run of the command line (inherited by forked
#: workers). A parse allocates hundreds of thousands of tree nodes, which CPython's default (a
#: collection every 700 allocations, each full one walking every live node) keeps scanning, while
#: the trees hold almost no cycles and are freed by reference counting. On torchtitan (476 files,
#: `--jobs 1`, 2026-12-03): `fix --diff` 7.2 s -> 6.0 s, `check --no-cache` 2.5 s -> 2.3 s, peak
#: memory within 3% (bench/run.py keeps the figures). The library leaves the process's settings alone.
GC_THRESHOLDS = (10_000, 20, 50)


def main() -> None:
    """Console-script entry point. Everything written goes through :mod:`..output.safe_output`:
    a closed pipe ends the output quietly with the run's exit code; a full disk is exit code 2."""
    from ..output.safe_output import finish, install

    install()
    gc.set_threshold(*GC_THRESHOLDS)
    sys.unraisablehook = _interrupt_again
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


def _interrupt_again(unraisable, _default=sys.unraisablehook) -> None:
    """A Ctrl-C that lands in a callback Python cannot raise from (a weak reference's, during a
    garbage collection) would be printed with its traceback and then lost, and the run would go on:
    deliver it again, to be raised where the run can stop on it (exit 130). Anything else as Python
    reports it."""
    if unraisable.exc_type is KeyboardInterrupt:
        import _thread
        import threading

        # from another thread, a moment later: raised here, in the hook, it would be lost the same way
        threading.Timer(0.01, _thread.interrupt_main).start()
        return
    _default(unraisable)
