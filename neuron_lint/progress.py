"""A progress bar on stderr for long scans, only where a person is watching.

Shown when stderr is a terminal, the scan has more than :data:`MIN_FILES` files, the output
format is for people (never json, sarif, github or junit) and ``--quiet`` is off. It is
transient: it disappears when the scan ends, leaving only the report.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Callable, Iterator, TextIO

#: Scans of fewer files finish before a bar would be worth reading.
MIN_FILES = 300

Advance = Callable[[int], None]


def wanted(output_format: str, quiet: bool, stream: TextIO | None = None) -> bool:
    from .render import MACHINE_FORMATS

    stream = stream if stream is not None else sys.stderr
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return tty and not quiet and output_format not in MACHINE_FORMATS


def _noop(n: int) -> None:
    return None


@contextmanager
def progress_bar(enabled: bool, stream: TextIO | None = None) -> Iterator[Callable[[int], Advance] | None]:
    """Yields ``start(total) -> advance(n)`` for :func:`neuron_lint.api.check_paths`, or None when off."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    console = Console(file=stream if stream is not None else sys.stderr)
    bar = Progress(
        TextColumn("checking"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        console=console, transient=True,
    )

    def start(total: int) -> Advance:
        if total <= MIN_FILES:
            return _noop
        task = bar.add_task("checking", total=total)
        bar.start()
        return lambda n: bar.advance(task, n)

    try:
        yield start
    finally:
        bar.stop()
