"""The default, human format: findings grouped by file, each with its source line and the fix."""

from __future__ import annotations

from itertools import groupby
from typing import TextIO

from rich.console import Console
from rich.text import Text

from ..io.excerpts import source_lines
from ..model import CheckResult, Finding, position_text
from . import RenderOptions
from .safe_output import console_width, escape
from .summary import summary_lines

_CATEGORY_STYLE = {
    "unsupported": "bold red",
    "cuda-specific": "bold yellow",
    "numerics": "bold magenta",
    "compile": "bold cyan",
    "cpu-fallback": "bold blue",
    "cuda-only-package": "bold red",
    "meta": "bold",
}


def _console(out: TextIO, options: RenderOptions) -> Console:
    kwargs = {"file": out, "highlight": False, "soft_wrap": True, "emoji": False, "width": console_width(out)}
    if options.color is False:
        kwargs["no_color"] = True
        kwargs["force_terminal"] = False
    elif options.color is True:
        kwargs["force_terminal"] = True
    return Console(**kwargs)


def _snippet(f: Finding, lines: list[str]) -> Text | None:
    if not (1 <= f.line <= len(lines)):
        return None
    raw = lines[f.line - 1].expandtabs(1)
    width = len(str(f.line))
    start = max(f.col - 1, 0)
    end = f.end_col - 1 if f.end_line == f.line else len(raw)
    # control characters in the line are shown escaped; the caret follows their escaped width
    text = escape(raw)
    if text != raw:
        start, end = (len(escape(raw[:i])) + max(i - len(raw), 0) for i in (start, end))
    end = max(end, start + 1)
    out = Text()
    out.append(f"{' ' * width} |\n", style="blue")
    out.append(f"{f.line} | ", style="blue")
    out.append(text + "\n")
    out.append(f"{' ' * width} | ", style="blue")
    out.append(" " * start + "^" * (end - start), style="bold red")
    return out


class _PlainConsole:
    """What ``render`` asks of a rich Console, for output that gets no styling (a pipe, a file): each text's characters and a newline, as rich writes them there, without
    rich's rendering pipeline (a tenth of a cold run's time on a project with a few hundred findings)."""

    def __init__(self, out: TextIO) -> None:
        self._write = out.write

    def print(self, text: Text | None = None) -> None:
        self._write(text.plain + "\n" if text is not None else "\n")


def render(result: CheckResult, out: TextIO, options: RenderOptions) -> None:
    console = _console(out, options)
    if not console.is_terminal:
        console = _PlainConsole(out)  # type: ignore[assignment]
    cache: dict = {}
    for path, group in groupby(result.findings, key=lambda f: f.path):
        for f in group:
            head = Text()
            head.append(f"{escape(f.path)}:{position_text(f.line, f.col, f.cell)}: ", style="bold")
            head.append(f.code, style=_CATEGORY_STYLE.get(f.category, "bold"))
            if f.fix and (f.fix.applicability == "safe" or options.unsafe_fixes):
                head.append(" [*]", style="cyan")
            head.append(" " + escape(f.message))
            console.print(head)
            if options.show_source:
                lines = source_lines(path, f.cell, cache, options.texts)
                snippet = _snippet(f, lines) if lines else None
                if snippet is not None:
                    console.print(snippet)
            help_line = Text("  = help: ", style="cyan")
            help_line.append(escape(f.suggestion), style="")
            console.print(help_line)
            if f.fix_note:
                console.print(Text(f"  = note: {escape(f.fix_note)}", style="dim"))
            console.print()
    if not options.quiet:
        for line in summary_lines(result, options.unsafe_fixes):
            console.print(Text(line, style="bold" if result.findings else "green"))
