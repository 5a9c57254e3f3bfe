"""``--output-format github``: GitHub Actions workflow commands, shown as annotations on pull requests.

One ``::error`` or ``::warning`` line per finding (and per file that could not be checked).
"""

from __future__ import annotations

from typing import TextIO

from ..model import CheckResult
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
        props = (
            f"file={_prop(f.path)},line={f.line},col={f.col},endLine={f.end_line},endColumn={f.end_col},"
            f"title={_prop(f'neuron-lint ({f.code} {f.name})')}"
        )
        out.write(f"::{level(f.category)} {props}::{_data(f'{f.code} {f.message}')}\n")
    for e in result.errors:
        where = f"file={_prop(e.path)}" + (f",line={e.line}" if e.line else "") + (f",col={e.col}" if e.col else "")
        out.write(f"::error {where},title=neuron-lint::{_data(e.reason)}\n")
