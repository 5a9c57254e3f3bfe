"""``--output-format github``: GitHub Actions workflow commands, shown as annotations on pull requests.

One ``::error`` or ``::warning`` line per finding (and per file that could not be checked).
"""

from __future__ import annotations

from typing import TextIO

from ..model import CheckResult, position_text
from . import RenderOptions
from .safe_output import escape

#: Categories whose findings break a run on Trainium are errors; the rest are warnings.
ERROR_CATEGORIES = frozenset({"unsupported", "cuda-only-package"})


def level(category: str) -> str:
    return "error" if category in ERROR_CATEGORIES else "warning"


def _data(text: str) -> str:
    """A workflow command's message: % and line breaks percent-encoded (the runner decodes them),
    every other control character made visible (the log viewer would act on an escape sequence)."""
    return escape(text, keep="\r\n").replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def render(result: CheckResult, out: TextIO, options: RenderOptions) -> None:
    for f in result.findings:
        title = f"title={_prop(f'neuron-lint ({f.code} {f.name})')}"
        if f.cell:  # a notebook: GitHub would point at a line of its JSON; the cell goes in the message
            props, cell = f"file={_prop(f.path)},{title}", f"{position_text(f.line, f.col, f.cell)}: "
        else:
            props = f"file={_prop(f.path)},line={f.line},col={f.col},endLine={f.end_line},endColumn={f.end_col},{title}"
            cell = ""
        out.write(f"::{level(f.category)} {props}::{_data(f'{cell}{f.code} {f.message}')}\n")
    for e in result.errors:
        where = f"file={_prop(e.path)}"
        if not e.cell:
            where += (f",line={e.line}" if e.line else "") + (f",col={e.col}" if e.col else "")
        reason = f"{position_text(e.line or 1, e.col or 1, e.cell)}: {e.reason}" if e.cell else e.reason
        out.write(f"::error {where},title=neuron-lint::{_data(reason)}\n")
