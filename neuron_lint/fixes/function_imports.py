"""What the imports of a module's functions bind, for :meth:`PlanContext.qualname`.

Detection resolves a function's own imports during its walk (:mod:`neuron_lint.engine.semantic`);
fixers plan after it, on the module's tree, and ask again: vissl's ``main`` does ``import faiss``
before ``faiss.Kmeans(..., gpu=use_gpu)``, and only with that import resolved is the call known
to be another library's (which picks its own device). A name a function imports is that import
everywhere in the function (Python makes it local there), and in the functions nested in it.
"""

from __future__ import annotations

import ast
import re
from functools import cached_property

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_INDENTED_IMPORT = re.compile(r"^[ \t]+(?:import|from)[ \t]", re.MULTILINE)


class FunctionImports:
    def __init__(self, ctx) -> None:
        self._ctx = ctx
        self._known: dict[int, str | None] = {}  # the fixers ask about the same nodes again and again

    def qualname(self, node) -> str | None:
        """The qualified name ``node`` (a name or an attribute chain on one) refers to, or None."""
        key = id(node)
        if key not in self._known:
            self._known[key] = self._qualname(node)
        return self._known[key]

    def _qualname(self, node) -> str | None:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = self._ctx.import_bindings.get(node.id)
        if node.id in self.names:
            base = self.binding(node) or base
        if base is None:
            return None
        return ".".join([base, *reversed(parts)])

    @cached_property
    def names(self) -> frozenset[str]:
        """The names some function of the module binds by an import of its own."""
        return frozenset(name for _, bound in self._importing for name in bound)

    @cached_property
    def _importing(self) -> list[tuple[ast.AST, dict[str, str]]]:
        """Each function with imports of its own, with what they bind (those of the classes and
        blocks in it included, not those of the functions nested in it)."""
        if not _INDENTED_IMPORT.search(self._ctx.text):
            return []  # every import at the left margin: none is a function's
        found = []
        todo: list[tuple[ast.AST, dict | None]] = [(stmt, None) for stmt in self._ctx.tree.body]
        while todo:  # statements only: an import is one, so no expression is ever walked
            node, bound = todo.pop()
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                if bound is not None:
                    _bind(node, bound)
                continue
            if isinstance(node, _FUNCTIONS):
                bound = {}
                found.append((node, bound))
            for name in ("body", "orelse", "finalbody", "handlers", "cases"):
                block = getattr(node, name, None)
                if isinstance(block, list):
                    todo += [(child, bound) for child in block]
        return [(fn, bound) for fn, bound in found if bound]

    def binding(self, name: ast.Name) -> str | None:
        """The qualified name the import of the innermost function around ``name`` that imports it
        binds it to, or None (found by position: no parent is looked up)."""
        at = (name.lineno, name.col_offset)
        best, found = None, None
        for fn, bound in self._importing:
            if name.id in bound and (fn.lineno, fn.col_offset) <= at <= (fn.end_lineno, fn.end_col_offset) \
                    and (best is None or (fn.lineno, fn.col_offset) > best):
                best, found = (fn.lineno, fn.col_offset), bound[name.id]
        return found


def _bind(node: ast.Import | ast.ImportFrom, bound: dict[str, str]) -> None:
    """Add what one import statement binds to ``bound``: ``import a.b`` binds ``a``, ``import a.b
    as c`` binds ``c`` to ``a.b``, ``from a import b`` binds ``b`` to ``a.b`` (relative ones: nothing)."""
    if isinstance(node, ast.Import):
        for a in node.names:
            bound[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
    elif node.module and not node.level:
        for a in node.names:
            bound[a.asname or a.name] = f"{node.module}.{a.name}"


def torch_only_in_functions(tree: ast.Module, function_names: frozenset[str]) -> bool:
    """Does the module import torch only in its functions (``function_names``: what they import),
    with no import of or from torch at its top, under ``if``/``try`` included? Then torch is an
    optional dependency of the module (deepface's detectors, set 60), not one a fix may import
    at its top."""
    if "torch" not in function_names:
        return False
    todo = list(tree.body)
    while todo:
        stmt = todo.pop()
        if isinstance(stmt, ast.Import) and any(a.name.split(".")[0] == "torch" for a in stmt.names):
            return False
        if isinstance(stmt, ast.ImportFrom) and not stmt.level and (stmt.module or "").split(".")[0] == "torch":
            return False
        if isinstance(stmt, (ast.If, ast.Try)):
            todo += [*stmt.body, *stmt.orelse, *getattr(stmt, "finalbody", []),
                     *(s for h in getattr(stmt, "handlers", []) for s in h.body)]
    return True
