"""Output formats. Each renderer writes a :class:`~neuron_lint.model.CheckResult` to a stream.

A renderer is a function ``render(result, out, options)``; ``out`` is a text stream and
``options`` a :class:`RenderOptions`. Register new formats in ``FORMATS``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable, TextIO

from ..model import CheckResult

#: format name -> "module:function" (imported only when used, to keep start-up fast)
FORMATS: dict[str, str] = {
    "full": "neuron_lint.output.full:render",
    "concise": "neuron_lint.output.concise:render",
    "json": "neuron_lint.output.json:render",
    "sarif": "neuron_lint.output.sarif:render",
    "github": "neuron_lint.output.github:render",
    "junit": "neuron_lint.output.junit:render",
}

#: Formats read by programs: nothing else (summary, statistics text, progress bar) is mixed in.
MACHINE_FORMATS = frozenset({"json", "sarif", "github", "junit"})


@dataclass
class RenderOptions:
    show_source: bool = True
    color: bool | None = None  # None: decide from the stream (a terminal, and NO_COLOR unset)
    show_fixes: bool = True
    unsafe_fixes: bool = False
    quiet: bool = False
    statistics: bool = False
    #: file contents already in memory (standard input), by shown path: source lines come from here
    texts: dict | None = None


def lazy_lookup(table: dict[str, str], name: str, what: str) -> Callable:
    """The function a ``{name: "module:function"}`` table names, imported only now."""
    try:
        target = table[name]
    except KeyError:
        raise ValueError(f"unknown {what} {name!r} (choose from {', '.join(table)})") from None
    module, _, func = target.partition(":")
    return getattr(importlib.import_module(module), func)


def get_renderer(name: str) -> Callable[[CheckResult, TextIO, RenderOptions], None]:
    return lazy_lookup(FORMATS, name, "output format")
