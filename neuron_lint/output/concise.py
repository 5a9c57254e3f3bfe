"""``path:line:col: CODE message``, one line per finding; summary on the last lines."""

from __future__ import annotations

from typing import TextIO

from ..model import CheckResult, position_text
from . import RenderOptions
from .safe_output import escape
from .summary import summary_lines


def render(result: CheckResult, out: TextIO, options: RenderOptions) -> None:
    for f in result.findings:
        marker = " [*]" if f.fix and (f.fix.applicability == "safe" or options.unsafe_fixes) else ""
        out.write(f"{escape(f.path)}:{position_text(f.line, f.col, f.cell)}: {f.code}{marker} {escape(f.message)}\n")
    if not options.quiet:
        for line in summary_lines(result, options.unsafe_fixes):
            out.write(line + "\n")
