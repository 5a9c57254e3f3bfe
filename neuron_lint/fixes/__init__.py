"""Fixes: turn a rule's hits into text edits (see ``neuron_lint.model.Fix``).

A rule's ``[fix]`` table names a fixer registered here. Each fixer receives the
:class:`FixContext` of the file and one hit, and returns a :class:`~neuron_lint.model.Fix`
or ``None`` when it cannot rewrite that occurrence safely (it may then leave a note saying
why in ``ctx.notes``; the finding shows it).

Fixers only produce edits; applying them (conflicts, iteration, writing files) is
``neuron_lint.fixing``'s job.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Callable

from ..model import Edit, Fix
from ..positions import LineIndex
from ..settings import Settings

FIXERS: dict[str, Callable] = {}


def fixer(name: str) -> Callable[[Callable], Callable]:
    def register(fn: Callable) -> Callable:
        FIXERS[name] = fn
        return fn

    return register


def version_tuple(text: str) -> tuple[int, ...]:
    """``"2.6"`` -> ``(2, 6)``; raises ValueError on anything else."""
    parts = tuple(int(p) for p in str(text).strip().split("."))
    if not 1 <= len(parts) <= 3:
        raise ValueError(text)
    return parts


@dataclass
class FixContext:
    text: str
    tree: ast.Module
    lines: LineIndex
    settings: Settings
    import_bindings: dict[str, str]  # module-level name -> qualified name
    notes: dict[int, str] = field(default_factory=dict)
    _parents: dict[int, ast.AST] | None = field(default=None, repr=False)
    _device: object = field(default=None, repr=False)

    # ------------------------------------------------------------------ positions
    def span(self, node) -> tuple[int, int, int, int]:
        return self.lines.node_span(node)

    def segment(self, node) -> str:
        return self.lines.segment(node)

    def offset(self, line: int, col: int) -> int:
        return self.lines.offset(line, col)

    def replace(self, node, content: str) -> Edit:
        line, col, end_line, end_col = self.span(node)
        return Edit(line, col, end_line, end_col, content)

    def insert_before(self, node, content: str) -> Edit:
        line, col, _, _ = self.span(node)
        return Edit(line, col, line, col, content)

    def edit_at(self, start: int, end: int, content: str) -> Edit:
        """An edit between two character offsets of the text."""
        line, col = self.lines.position(start)
        end_line, end_col = self.lines.position(end)
        return Edit(line, col, end_line, end_col, content)

    def after_open_paren(self, call: ast.Call) -> int:
        """Offset just after the ``(`` of a call (skips whitespace and comments after the callee)."""
        _, _, end_line, end_col = self.span(call.func)
        pos = self.offset(end_line, end_col)
        text = self.text
        while pos < len(text) and text[pos] != "(":
            if text[pos] == "#":
                while pos < len(text) and text[pos] not in "\r\n":
                    pos += 1
            else:
                pos += 1
        return pos + 1

    # ------------------------------------------------------------------ tree
    def parent(self, node: ast.AST) -> ast.AST | None:
        if self._parents is None:
            parents: dict[int, ast.AST] = {}
            for p in ast.walk(self.tree):
                for child in ast.iter_child_nodes(p):
                    parents[id(child)] = p
            self._parents = parents
        return self._parents.get(id(node))

    def enclosing_call(self, node: ast.AST) -> ast.Call | None:
        """The call whose callee is ``node`` (``node(...)``), if any."""
        parent = self.parent(node)
        if isinstance(parent, ast.Call) and parent.func is node:
            return parent
        return None

    def at_module_level(self, node: ast.AST) -> bool:
        p = self.parent(node)
        while p is not None:
            if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                return False
            p = self.parent(p)
        return True

    # ------------------------------------------------------------------ names
    def alias(self, qualified: str) -> str | None:
        """A module-level name the file binds to ``qualified`` (``th`` for ``import torch as th``)."""
        names = [n for n, q in self.import_bindings.items() if q == qualified]
        if not names:
            return None
        last = qualified.rsplit(".", 1)[-1]
        return last if last in names else sorted(names, key=len)[0]

    def with_alias(self, dotted: str) -> str:
        """``torch.accelerator.x`` written with the file's own torch alias."""
        if dotted == "torch" or dotted.startswith("torch."):
            return self.device.torch_name + dotted[len("torch"):]
        return dotted

    @property
    def device(self):
        """How this module writes the current device (see :mod:`neuron_lint.fixes.device`)."""
        if self._device is None:
            from .device import DeviceWriter

            self._device = DeviceWriter(self)
        return self._device

    # ------------------------------------------------------------------ settings
    def allows(self, since: str) -> bool:
        """Whether ``--min-torch`` permits emitting an API first released in ``since``."""
        try:
            return version_tuple(self.settings.min_torch) >= version_tuple(since)
        except ValueError:
            return False

    def note(self, hit, text: str) -> None:
        self.notes[id(hit)] = text

    def make_fix(self, hit, edits, message: str = "", applicability: str | None = None) -> Fix | None:
        """A fix from the hit's rule safety, plus the edits the device idiom needs (deduplicated)."""
        if not edits:
            return None
        unique: list[Edit] = []
        for e in edits:
            if e not in unique:
                unique.append(e)
        unique.sort(key=lambda e: (e.line, e.col, e.end_line, e.end_col))  # stable: insertions keep their order
        return Fix(applicability or hit.rule.fix.safety, tuple(unique), message)


def fix_for(ctx: FixContext, hit) -> Fix | None:
    spec = hit.rule.fix
    if spec is None:
        return None
    fn = FIXERS.get(spec.fixer)
    if fn is None:
        return None
    return fn(ctx, hit)


# Register the fixers (each module adds itself to FIXERS).
from . import amp, cuda_api, cuda_call, device_string, distributed, numerics, statements, tensor_attrs  # noqa: E402,F401
