"""Fixes: plan a rewrite on the ``ast`` while checking, carry it out with LibCST when fixing.

A rule's ``[fix]`` table names a fixer. Each fixer lives in its own module of
:mod:`neuron_lint.fixes.fixers`, named after it, and exposes ``FIXER``, an object with

- ``plan(ctx, hit) -> Fix | None`` -- runs during every ``check``, on the ``ast`` only (cheap):
  decides whether this occurrence can be rewritten, how safely, and with which decisions
  (``ctx.propose(...)``); when it cannot, it says why with ``ctx.note(hit, ...)``;
- ``rewrite(rx, original, updated, data) -> cst node`` -- runs only when a file is fixed (or an
  output needs the exact edits): receives the LibCST node the plan targeted and returns the
  replacement node, built with LibCST, never by splicing strings into the source.

Modules here, in the order a fix flows: :mod:`.plan` (the ast-side context), :mod:`.apply` (fix a
module's text to a fixed point), :mod:`.rewrite` (one LibCST parse and transformation per pass),
:mod:`.scope` (the device a rewritten site refers to, and the module-level definitions it needs),
:mod:`.edits` (minimal text edits), :mod:`.decline` (what a ``rewrite`` raises to leave a site
alone). Helpers the fixers share: :mod:`.nodes` (LibCST node builders), :mod:`.keyword_args`,
:mod:`.guards`, :mod:`.wrap`, and the device-string ones: :mod:`.device_literal` (plan and rewrite
one CUDA device string), :mod:`.device_forms`, :mod:`.device_choice`, :mod:`.device_idiom`,
:mod:`.device_lists`, :mod:`.device_defaults`.
"""

from __future__ import annotations

import importlib
import importlib.util
from functools import lru_cache

FIXERS_PACKAGE = __name__ + ".fixers"
#: Fixes that edit comments, not code: :mod:`neuron_lint.suppress.noqa` writes their edits itself.
TEXT_FIXERS = frozenset({"unused_noqa"})


class UnknownFixer(LookupError):
    pass


def fixer_exists(name: str) -> bool:
    """Is there a module ``fixes/fixers/<name>.py``? (Checked when the catalog loads, without importing it.)"""
    if not name.isidentifier():
        return False
    try:
        return importlib.util.find_spec(f"{FIXERS_PACKAGE}.{name}") is not None
    except (ImportError, ValueError):
        return False


@lru_cache(maxsize=None)
def load_fixer(name: str):
    """The ``FIXER`` of ``fixes/fixers/<name>.py``; raises UnknownFixer."""
    if not fixer_exists(name):
        raise UnknownFixer(name)
    module = importlib.import_module(f"{FIXERS_PACKAGE}.{name}")
    fixer = getattr(module, "FIXER", None)
    if fixer is None or getattr(fixer, "name", None) != name:
        raise UnknownFixer(f"{name}: the module defines no FIXER named {name!r}")
    return fixer


def plan_fix(ctx, hit):
    """The planned fix of one hit (a :class:`~neuron_lint.model.Fix` without edits), or None."""
    spec = hit.rule.fix
    if spec is None:
        return None
    return load_fixer(spec.fixer).plan(ctx, hit)
