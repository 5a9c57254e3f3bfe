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
        self._by_function: dict[int, dict[str, str]] = {}
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
        ctx = self._ctx
        if not _INDENTED_IMPORT.search(ctx.text):
            return frozenset()  # every import at the left margin: none is a function's
        return frozenset(a.asname or a.name.split(".")[0] for n in ctx.walk(ctx.tree)
                         if isinstance(n, (ast.Import, ast.ImportFrom)) and ctx.enclosing_function(n) is not None
                         for a in n.names)

    def binding(self, name: ast.Name) -> str | None:
        """The qualified name the import of the innermost function around ``name`` that imports it
        binds it to, or None."""
        for fn in self._ctx.ancestors(name):
            if isinstance(fn, _FUNCTIONS):
                found = self._of(fn).get(name.id)
                if found:
                    return found
        return None

    def _of(self, fn) -> dict[str, str]:
        found = self._by_function.get(id(fn))
        if found is None:
            found = self._by_function[id(fn)] = {}
            for n in self._ctx.walk(fn):
                if isinstance(n, ast.Import) and self._ctx.enclosing_function(n) is fn:
                    for a in n.names:  # `import a.b` binds `a`; `import a.b as c` binds `c` to `a.b`
                        found[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
                elif (isinstance(n, ast.ImportFrom) and n.module and not n.level
                      and self._ctx.enclosing_function(n) is fn):
                    for a in n.names:
                        found[a.asname or a.name] = f"{n.module}.{a.name}"
        return found


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
