"""Fixes: turn a rule's hits into text edits (see ``neuron_lint.model.Fix``).

A rule's ``[fix]`` table names a fixer registered here. Each fixer receives the
:class:`FixContext` of the file and one hit, and returns a :class:`~neuron_lint.model.Fix`
or ``None`` when it cannot rewrite that occurrence safely.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Callable

from ..model import Fix
from ..positions import LineIndex
from ..settings import Settings

FIXERS: dict[str, Callable] = {}


def fixer(name: str) -> Callable[[Callable], Callable]:
    def register(fn: Callable) -> Callable:
        FIXERS[name] = fn
        return fn

    return register


@dataclass
class FixContext:
    text: str
    tree: ast.Module
    lines: LineIndex
    settings: Settings
    import_bindings: dict[str, str]  # module-level name -> qualified name
    notes: dict[int, str] = field(default_factory=dict)


def fix_for(ctx: FixContext, hit) -> Fix | None:
    spec = hit.rule.fix
    if spec is None:
        return None
    fn = FIXERS.get(spec.fixer)
    if fn is None:
        return None
    return fn(ctx, hit)
