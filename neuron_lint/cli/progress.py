"""A progress bar on stderr for long scans, only where a person is watching.

Shown when stderr is a terminal, the scan has more than :data:`MIN_FILES` files, the output
format is for people (never json, sarif, github or junit) and ``--quiet`` is off. It is
transient: it disappears when the scan ends, leaving only the report.

The time left is estimated from the bytes checked so far, not the files: workers take the largest
files first, so counting files would promise minutes early in a run of seconds. Until a tenth of
the bytes and three seconds have gone by, the bar shows the time elapsed instead.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Callable, Iterator, TextIO

#: Scans of fewer files finish before a bar would be worth reading.
MIN_FILES = 300
#: No estimate before this share of the bytes is checked, nor before this many seconds.
ESTIMATE_AFTER_SHARE, ESTIMATE_AFTER_SECONDS = 0.1, 3.0

Advance = Callable[..., None]  # advance(files, nbytes=0)


def estimate(elapsed: float, done_bytes: int, total_bytes: int) -> float | None:
    """Seconds left, from the rate in bytes so far; None while that rate says too little."""
    if total_bytes <= 0 or elapsed < ESTIMATE_AFTER_SECONDS or done_bytes < ESTIMATE_AFTER_SHARE * total_bytes:
        return None
    return elapsed * (total_bytes - done_bytes) / done_bytes


def wanted(output_format: str, quiet: bool, stream: TextIO | None = None) -> bool:
    from ..output import MACHINE_FORMATS

    stream = stream if stream is not None else sys.stderr
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return tty and not quiet and output_format not in MACHINE_FORMATS


def _noop(n: int, nbytes: int = 0) -> None:
    return None


@contextmanager
def progress_bar(enabled: bool, stream: TextIO | None = None) -> Iterator[Callable[[int], Advance] | None]:
    """Yields ``start(total, total_bytes) -> advance(n, nbytes)`` for :func:`neuron_lint.engine.runner.check_paths`,
    or None when off."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        TextColumn,
    )
    from rich.text import Text

    class TimeColumn(ProgressColumn):
        """``0:12 left`` once the bytes checked say so, ``0:02 elapsed`` until then."""

        def render(self, task) -> Text:
            elapsed = task.elapsed or 0.0
            left = estimate(elapsed, task.fields.get("done_bytes", 0), task.fields.get("total_bytes", 0))
            seconds, word = (left, "left") if left is not None else (elapsed, "elapsed")
            minutes, secs = divmod(int(seconds + 0.5), 60)
            return Text(f"{minutes}:{secs:02d} {word}", style="progress.remaining")

    console = Console(file=stream if stream is not None else sys.stderr)
    bar = Progress(TextColumn("checking"), BarColumn(), MofNCompleteColumn(), TimeColumn(), console=console, transient=True)

    def start(total: int, total_bytes: int = 0) -> Advance:
        if total <= MIN_FILES:
            return _noop
        task = bar.add_task("checking", total=total, done_bytes=0, total_bytes=total_bytes)
        bar.start()

        done = [0]

        def advance(n: int, nbytes: int = 0) -> None:
            done[0] += nbytes
            bar.update(task, advance=n, done_bytes=done[0])

        return advance

    try:
        yield start
    finally:
        bar.stop()
