"""One walk over a module's syntax tree, asking the rule index at each interesting node.

:class:`Analyzer` is the walker (:class:`neuron_lint.engine.walker.Walker`) plus the rule index's
expression tables: names, attributes, methods, calls, assignments, environment variables, and the
Python matchers (:mod:`neuron_lint.checks`), which subscribe to node types and are given the
module's :class:`neuron_lint.engine.semantic.SemanticModel`.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Callable

from ..catalog.facts import specific_cuda_rule
from ..catalog.index import RuleIndex
from ..catalog.loading import Match, Rule
from ..catalog.registry import BUILTIN_MATCHERS
from ..checks.float64 import (
    DTYPE_METHODS,
    is_cpu_copy,
    mark_call_args,
    mark_compare,
    mark_dict,
    mark_ifexp,
)
from .hits import Hit, Span
from .parameters import parameter_defaults
from .semantic import ALIAS, SemanticModel
from .values import argument, match_value
from .walker import ALL_FIELDS, CHILD_FIELDS, LEAF_TYPES, Walker

if TYPE_CHECKING:
    from ..catalog.prefilter import Active

__all__ = ["Analyzer", "Hit", "Span"]

_ENV_CALLS = {
    "os.environ.get", "os.environ.setdefault", "os.environ.pop", "os.getenv", "os.putenv", "os.unsetenv",
}
#: Match kind -> the index table it lives in.
_KIND_TABLES = {"names": "names", "imports": "imports", "methods": "methods", "attributes": "attributes",
                "calls": "calls", "assign": "assigns", "env": "env"}
#: Every expression node type (a walk for imports alone never enters one).
_EXPR_TYPES = frozenset(c for c in vars(ast).values() if isinstance(c, type) and issubclass(c, ast.expr) and c is not ast.expr)


def _ignore(node: ast.AST) -> None:
    return None


class Analyzer(Walker):
    def __init__(
        self, index: RuleIndex, matchers: dict[str, Callable] | None = None, path: str | None = None,
        active: Active | None = None,
    ) -> None:
        """``active`` (from :func:`neuron_lint.catalog.prefilter.active`) says which match kinds and matchers can
        fire in this module at all: the walk leaves out the work of the others (same hits)."""
        super().__init__(index, SemanticModel(path, other_rule_names=specific_cuda_rule))
        kinds = active.kinds if active is not None else None
        on = {k: bool(getattr(index, attr)) and (kinds is None or k in kinds) for k, attr in _KIND_TABLES.items()}
        self._names, self._imports, self._methods = on["names"], on["imports"], on["methods"]
        self._attributes, self._calls, self._assigns, self._env = on["attributes"], on["calls"], on["assign"], on["env"]
        self.matchers = matchers or {}
        subs = self._subscriptions(index, active)
        self._plan(self._dispatch_table(subs), subs)

    def _subscriptions(self, index: RuleIndex, active: Active | None) -> dict[type, list]:
        """Python matchers subscribe to node types: node type -> (rule, match, matcher) to run there."""
        subs: dict[type, list[tuple[Rule, Match, Callable]]] = {}
        for rule, m in index.matchers:
            if active is not None and id(m) not in active.matchers:
                continue
            for name in m.patterns:
                fn = self.matchers.get(name)
                if fn is None:
                    if name in BUILTIN_MATCHERS:
                        continue  # found outside the tree walk (NRN901, from comments)
                    raise KeyError(f"{rule.file}: no matcher {name!r} is registered (neuron_lint.checks)")
                for node_type in fn.node_types:
                    subs.setdefault(node_type, []).append((rule, m, fn))
        return subs

    def _dispatch_table(self, subs: dict[type, list]) -> dict[type, Callable]:
        dispatch = {
            ast.Import: self._visit_import,
            ast.ImportFrom: self._visit_import_from,
            ast.Attribute: self._visit_attribute,
            ast.Name: self._visit_name,
            ast.Call: self._visit_call,
            ast.Compare: self._visit_compare,
            ast.Dict: self._visit_dict,
            ast.IfExp: self._visit_ifexp,
            ast.Subscript: self._visit_subscript,
            ast.Assign: self._visit_assign,
            ast.AnnAssign: self._visit_assign,
            ast.Try: self._visit_try,
            ast.If: self._visit_if,
            ast.FunctionDef: self._visit_function,
            ast.AsyncFunctionDef: self._visit_function,
            ast.Lambda: self._visit_function,
            ast.ClassDef: self._visit_class,
        }
        if hasattr(ast, "TryStar"):
            dispatch[ast.TryStar] = self._visit_try
        # Handlers whose only work is for a kind of match that cannot fire here: the plain walk does
        # the same (an attribute chain still jumps to its base, as matchers expect).
        if not self._names:  # `inert` only silences names
            for node_type in (ast.Dict, ast.IfExp):
                del dispatch[node_type]
            if not self._env:
                del dispatch[ast.Compare]
            if not (self._calls or self._methods or self._env):
                del dispatch[ast.Call]
            del dispatch[ast.Name]
            if not self._attributes and ast.Name not in subs:
                dispatch[ast.Attribute] = self._visit_attribute_base
        if not self._env:
            del dispatch[ast.Subscript]
        return dispatch

    def _plan(self, dispatch: dict[type, Callable], subs: dict[type, list]) -> None:
        """One dictionary lookup per node: node type -> what to do with it (hot path)."""
        # With only imports to find and no matcher, expressions hold nothing: they are not visited.
        statements_only = not subs and not (
            self._names or self._methods or self._attributes or self._calls or self._assigns or self._env)
        handlers: dict[type, Callable] = dict(dispatch)
        for node_type, node_subs in subs.items():
            handlers[node_type] = self._with_matchers(node_subs, dispatch.get(node_type))
        # Operators and load/store contexts are leaves nothing looks at: not visited unless asked for.
        watched_leaf = any(issubclass(t, LEAF_TYPES) for t in handlers)
        self._fields = ALL_FIELDS if watched_leaf else CHILD_FIELDS
        skip = frozenset() if watched_leaf or ast.Constant in handlers else frozenset({ast.Constant})
        if ast.Name not in handlers and not watched_leaf:
            skip |= {ast.Name}  # a bare name is a leaf: nothing to do there
        if statements_only:
            skip |= _EXPR_TYPES
            for node_type in _EXPR_TYPES:
                handlers[node_type] = _ignore
        self._handlers, self._skip = handlers, skip

    # ------------------------------------------------------------------ references
    def _visit_name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load) or not self._names:
            return
        qual = self.lookup(node.id)
        if qual is not None and qual[0] != ALIAS:
            self._check_names(qual, node)

    def _visit_attribute(self, node: ast.Attribute) -> None:
        # `node` is the outermost attribute of a chain (a.b.c); inner links are handled here.
        qual = self.qualname(node)
        if qual is not None:
            if self._names:
                self._check_names(qual, node)
            return  # the chain is made of names only: nothing else to visit
        if self._attributes:
            link = node
            while isinstance(link, ast.Attribute):
                if self.qualname(link.value) is None:
                    for rule, m in self.index.attributes.lookup(link.attr):
                        self._hit(rule, m, Span.name_to_end(link, link), f".{link.attr}")
                link = link.value
        base: ast.AST = node
        while isinstance(base, ast.Attribute):
            base = base.value
        self.visit(base)

    def _visit_attribute_base(self, node: ast.Attribute) -> None:
        """`_visit_attribute` where no name or attribute match can fire: only the chain's base is visited."""
        base: ast.AST = node.value
        while base.__class__ is ast.Attribute:
            base = base.value  # type: ignore[attr-defined]
        if base.__class__ is not ast.Name:
            self.visit(base)

    def _check_names(self, qual: str, node: ast.AST) -> None:
        if id(node) in self._inert:
            # `x.dtype == torch.float64` inspects a value, `{torch.float64: 8}` is a lookup table,
            # `dtype=torch.float64, device="cpu"` stays on the host: none of them puts it on the device
            return
        for rule, m in self.index.names.lookup(qual):
            self._hit(rule, m, node, qual)

    def _visit_compare(self, node: ast.Compare) -> None:
        mark_compare(self._inert, node)
        if self._env and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            left = node.left
            right = node.comparators[0]
            if isinstance(left, ast.Constant) and isinstance(left.value, str) and self.qualname(right) == "os.environ":
                self._check_env(left)
        self._visit_body(node)

    def _visit_dict(self, node: ast.Dict) -> None:
        mark_dict(self._inert, node, self.qualname)
        self._visit_body(node)

    def _visit_ifexp(self, node: ast.IfExp) -> None:
        mark_ifexp(self._inert, node)
        self._visit_body(node)

    # ------------------------------------------------------------------ calls
    def _visit_call(self, node: ast.Call) -> None:
        func = node.func
        index = self.index
        if self._names:  # `inert` only silences name matches
            mark_call_args(self._inert, node, func)
        if self._calls or self._methods or self._env:
            qual = self.qualname(func) if isinstance(func, (ast.Name, ast.Attribute)) else None
            is_method = qual is None and isinstance(func, ast.Attribute)
            if self._methods and is_method:
                hits = index.methods.lookup(func.attr)  # type: ignore[union-attr]
                if hits and func.attr in DTYPE_METHODS and is_cpu_copy(func.value):  # type: ignore[union-attr]
                    hits = []  # `x.cpu().double()`: the float64 copy lives on the host
                if hits:
                    span = Span.name_to_end(func, node)  # `cuda(...)` in `x.cuda(...)`
                    for rule, m in hits:
                        self._hit(rule, m, span, f".{func.attr}()", node)  # type: ignore[union-attr]
            if self._calls:
                # A call is known by its qualified name and, for `x.f(...)`, by ".f" whatever `x` is.
                keys = [qual] if qual is not None else []
                if isinstance(func, ast.Attribute):
                    keys.append("." + func.attr)
                elif qual is None:  # a call of something we cannot name: only "*" patterns apply
                    keys.append("?" + (func.id if isinstance(func, ast.Name) else ""))
                done: set[int] = set()
                for key in keys:
                    for rule, m in index.calls.lookup(key):
                        if id(m) not in done:
                            done.add(id(m))
                            self._check_call(rule, m, node, key.lstrip(".?") or "call")
            if self._env and qual in _ENV_CALLS and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    self._check_env(arg)
        self._visit_body(node)

    def _check_call(self, rule: Rule, m: Match, call: ast.Call, callee: str) -> None:
        if m.arg is None:
            self._hit(rule, m, call.func, callee.lstrip("."), call)
            return
        value = argument(call, m.arg.position, m.arg.keyword)
        if value is None:
            return
        if not (m.values or m.value_names):
            self._hit(rule, m, value, m.arg.keyword or callee.lstrip("."), call)
            return
        found = match_value(self.qualname, value, m)
        if found is not None:
            node, subject = found
            self._hit(rule, m, node, subject, call)

    # ------------------------------------------------------------------ environment
    def _visit_subscript(self, node: ast.Subscript) -> None:
        if self._env:
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and self.qualname(node.value) == "os.environ":
                self._check_env(key)
        self._visit_body(node)

    def _check_env(self, key: ast.Constant) -> None:
        for rule, m in self.index.env.lookup(key.value):
            self._hit(rule, m, key, key.value)

    # ------------------------------------------------------------------ assignments
    def _visit_assign(self, node: ast.AST) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
        value = node.value  # type: ignore[attr-defined]
        if value is not None:
            if self._assigns:
                for target in targets:
                    name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", None)
                    if name:
                        self._check_assign(name, value)
            # `F = torch.nn.functional`: follow simple aliases of known names.
            if isinstance(value, (ast.Name, ast.Attribute)) and len(targets) == 1 and isinstance(targets[0], ast.Name):
                qual = self.qualname(value)
                if qual is not None:
                    self.model.bind_alias(targets[0].id, qual)
        self._visit_body(node)
        if value is not None and len(targets) == 1 and isinstance(targets[0], ast.Name) and _built_from(value, targets[0].id):
            # `crnn = crnn.CRNN(...)` (crnn.pytorch, set 80): the imported module's name now holds what it built
            self.model.bind(targets[0].id, None)

    def _check_assign(self, name: str, value: ast.AST) -> None:
        for rule, m in self.index.assigns.lookup(name):
            found = match_value(self.qualname, value, m)
            if found is not None:
                self._hit(rule, m, found[0], found[1])

    def _function_defined(self, args: ast.arguments) -> None:
        if self._assigns:
            for param, default in parameter_defaults(args):
                self._check_assign(param.arg, default)


def _built_from(value: ast.AST, name: str) -> bool:
    """Is ``value`` a call of something reached through ``name`` (``name.Class(...)``)?"""
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    while isinstance(func, ast.Attribute):
        func = func.value
    return isinstance(func, ast.Name) and func.id == name and value.func is not func
