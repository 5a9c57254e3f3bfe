"""The registry of matchers written in Python, for the few rules whose matching the catalog's data cannot express.

A rule names one with ``[[match]] matcher = "<name>"`` plus its ``trigger``: what a file's text
must hold for its findings (``catalog.index.trigger_need``). A matcher is a function ``(model, node) -> iterable of (node_to_report, subject)`` with a
``node_types`` attribute listing the ast node types it wants to see; ``model`` is the module's
:class:`neuron_lint.engine.semantic.SemanticModel` (its public API only). The matchers live in
:mod:`neuron_lint.checks`, one module per rule, and register here when imported.

This module imports nothing of neuron_lint: the catalog (which validates matcher names) and the
checks both depend on it, never the other way round.
"""

from __future__ import annotations

from typing import Callable

MATCHERS: dict[str, Callable] = {}

#: Matcher names a rule may use whose findings are made outside the tree walk: ``unused_noqa``
#: (NRN901) is computed from comments by :func:`neuron_lint.suppress.noqa.filter_findings`.
BUILTIN_MATCHERS = frozenset({"unused_noqa"})


def matcher(*node_types: type) -> Callable[[Callable], Callable]:
    def register(fn: Callable) -> Callable:
        fn.node_types = node_types  # type: ignore[attr-defined]
        MATCHERS[fn.__name__] = fn
        return fn

    return register


def is_known(name: str) -> bool:
    """Is ``name`` a registered matcher (once :mod:`neuron_lint.checks` is imported) or a built-in one?"""
    return name in MATCHERS or name in BUILTIN_MATCHERS
