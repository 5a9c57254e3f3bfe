"""What the names of one module refer to, as far as the tree walk has seen it.

Name resolution is a light pass of our own, made by the walker (:mod:`neuron_lint.engine.analyzer`) during
its one walk: imports bind local names to qualified names (``import torch as th`` binds ``th`` to
``torch``; ``from torch.cuda.amp import autocast`` binds ``autocast`` to ``torch.cuda.amp.autocast``).
A local definition (``def vmap``, a parameter) hides an import of the same name.

Matchers (:mod:`neuron_lint.checks`) get a :class:`SemanticModel` and use only its public API:

- :meth:`SemanticModel.qualname` — the qualified name an expression refers to;
- :meth:`SemanticModel.binding` — what a bare name is bound to (``None`` when not to a known name);
- :meth:`SemanticModel.binds_package` — does a module-level name refer into a package;
- :attr:`SemanticModel.guarded` — is the walk inside an import guard (``try/except ImportError``,
  ``if is_x_available():``);
- :meth:`SemanticModel.is_inert` — is an expression's value only inspected (see
  :mod:`neuron_lint.checks.float64`);
- :meth:`SemanticModel.named_by_other_rule` — does a catalog rule other than NRN212 name a
  ``torch.cuda`` member;
- :attr:`SemanticModel.tree`, :attr:`SemanticModel.path`, and :attr:`SemanticModel.notes` (a dict
  matchers may keep per-module results in).

The other methods (``bind``, ``bind_alias``, the scope helpers) are the walker's, which builds the model.
"""

from __future__ import annotations

import ast
from typing import Callable

#: Marks a name bound by assignment (`F = torch.func`). Such a name resolves only as the base of an
#: attribute chain (`F.grad`); used bare it is a value already reported where it was assigned.
ALIAS = "\x01"

Scope = dict  # name -> qualified name (ALIAS-marked for an assignment), or None for a local definition


def is_alias(qual: str) -> bool:
    """Is a raw binding (from :meth:`SemanticModel.lookup`) an assignment alias?"""
    return qual[0] == ALIAS


class SemanticModel:
    def __init__(self, path: str | None = None, other_rule_names: Callable[[str], bool] | None = None) -> None:
        self.path = path
        self.tree: ast.Module | None = None
        #: Per-module scratch space for matchers (results computed once per module).
        self.notes: dict = {}
        #: ids of nodes whose value is only inspected: filled by :mod:`neuron_lint.checks.float64`.
        self.inert: set[int] = set()
        #: How many import guards the walk is inside (the walker counts them).
        self.guard_depth = 0
        self._scopes: list[Scope] = [{}]
        self._other_rule_names = other_rule_names

    # ------------------------------------------------------------------ the matchers' API
    def qualname(self, node: ast.AST) -> str | None:
        """The qualified name an expression refers to, through the file's imports."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = self.lookup(node.id)
        if base is None:
            return None
        if base[0] == ALIAS:
            if not parts:
                return None  # `dtype = torch.float64; f(dtype)`: the assignment was the finding
            base = base[1:]
        if parts:
            parts.reverse()
            return base + "." + ".".join(parts)
        return base

    def binding(self, name: str) -> str | None:
        """The qualified name a bare name is bound to (an import, or an alias such as ``F = torch.nn``);
        ``None`` when it is unbound or bound to something local (a ``def``, a parameter)."""
        qual = self.lookup(name)
        if qual is not None and qual[0] == ALIAS:
            return qual[1:]
        return qual

    def binds_package(self, top: str) -> bool:
        """Does a module-level name refer to ``top`` or something inside it (``import transformers``)?"""
        for qual in self._scopes[0].values():
            if qual and qual.lstrip(ALIAS).split(".", 1)[0] == top:
                return True
        return False

    @property
    def guarded(self) -> bool:
        """Is the walk inside an import guard (the package may be missing there)?"""
        return self.guard_depth > 0

    def is_inert(self, node: ast.AST) -> bool:
        """Is this expression's value only inspected (compared, a dict key, a host copy)?"""
        return id(node) in self.inert

    def named_by_other_rule(self, qual: str) -> bool:
        """Does a catalog rule other than the general ``torch.cuda`` one name this ``torch.cuda`` member?"""
        return self._other_rule_names is not None and self._other_rule_names(qual)

    # ------------------------------------------------------------------ the walker's
    def lookup(self, name: str) -> str | None:
        """The raw binding of a name: ALIAS-marked for an assignment alias (see :func:`is_alias`)."""
        for scope in reversed(self._scopes):
            if name in scope:
                return scope[name]
        return None

    def bind(self, name: str, qual: str | None) -> None:
        self._scopes[-1][name] = qual

    def bind_alias(self, name: str, qual: str) -> None:
        self._scopes[-1][name] = ALIAS + qual

    def import_bindings(self) -> dict[str, str]:
        """Module-level names bound by imports -> their qualified names."""
        return {k: v for k, v in self._scopes[0].items() if v and v[0] != ALIAS}

    def function_scopes(self) -> list[Scope]:
        """The scopes a function defined here sees (class scopes are not visible from a method)."""
        return [s for s in self._scopes if not s.get("<class>", False)]

    def push_class_scope(self) -> None:
        self._scopes.append({"<class>": True})

    def pop_scope(self) -> None:
        self._scopes.pop()

    def swap_scopes(self, scopes: list[Scope]) -> list[Scope]:
        """Walk a deferred function body in ``scopes``; returns the scopes to restore afterwards."""
        saved, self._scopes = self._scopes, scopes
        return saved

    @staticmethod
    def parameters(node: ast.AST) -> Scope:
        """A function's (or lambda's) parameters, as a scope of local names."""
        a = node.args  # type: ignore[attr-defined]
        names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
        if a.vararg:
            names.append(a.vararg.arg)
        if a.kwarg:
            names.append(a.kwarg.arg)
        return dict.fromkeys(names)
