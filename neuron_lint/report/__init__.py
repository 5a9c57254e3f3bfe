"""``neuron-lint report``: how far a repository is from running on Trainium, at a glance.

:func:`build_report` turns a :class:`~neuron_lint.model.CheckResult` into plain data; a renderer
writes it as a terminal summary (rich), markdown, one self-contained HTML page, or JSON.
"""

from __future__ import annotations

from typing import Callable, TextIO

from .figures import EFFORT_POINTS, build_report

#: format name -> "module:function"; each function is ``render(report: dict, out: TextIO)``.
REPORT_FORMATS: dict[str, str] = {
    "terminal": "neuron_lint.report.terminal:render",
    "markdown": "neuron_lint.report.markdown:render",
    "html": "neuron_lint.report.html:render",
    "json": "neuron_lint.report.json_data:render",
}

__all__ = ["REPORT_FORMATS", "EFFORT_POINTS", "build_report", "get_report_renderer"]


def get_report_renderer(name: str) -> Callable[[dict, TextIO], None]:
    from ..output import lazy_lookup

    return lazy_lookup(REPORT_FORMATS, name, "report format")
