"""One walk over a module's syntax tree, asking the rule index at each interesting node.

Name resolution is a light pass of our own, done during the same walk: imports bind local
names to qualified names (``import torch as th`` binds ``th`` to ``torch``;
``from torch.cuda.amp import autocast`` binds ``autocast`` to ``torch.cuda.amp.autocast``).
Function bodies are walked after the code around them (as Python runs them later), so a
function sees module-level imports written below it. A local definition (``def vmap``, a
parameter) hides an import of the same name.
"""

from __future__ import annotations

import ast
import fnmatch
import os
from dataclasses import dataclass
from contextlib import contextmanager
from functools import lru_cache
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

from .catalog import Match, Rule
from .index import RuleIndex
from .parameters import parameter_defaults

if TYPE_CHECKING:
    from .prefilter import Active

_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
_ENV_CALLS = {
    "os.environ.get", "os.environ.setdefault", "os.environ.pop", "os.getenv", "os.putenv", "os.unsetenv",
}
_SCOPE_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
#: Match kind -> the index table it lives in.
_KIND_TABLES = {"names": "names", "imports": "imports", "methods": "methods", "attributes": "attributes",
                "calls": "calls", "assign": "assigns", "env": "env"}
#: Every expression node type (a walk for imports alone never enters one).
_EXPR_TYPES = frozenset(c for c in vars(ast).values() if isinstance(c, type) and issubclass(c, ast.expr) and c is not ast.expr)


def _ignore(node: ast.AST) -> None:
    return None
# Node types that hold no code: `ctx` (Load/Store), `op` and `ops` (operators) fields hold only these.
_LEAF_TYPES = (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}  # node type -> fields that may hold code
_ALL_FIELDS: dict[type, tuple[str, ...]] = {}  # node type -> every field


#: Fields that only ever hold a name, a number or a flag, never a node (`Global.names` is a list of str).
_SCALAR_FIELDS = {"id", "attr", "arg", "name", "module", "asname", "level", "is_async", "simple", "conversion",
                  "type_comment", "tag", "kind", "kwd_attrs"}
_SCALAR_FIELDS_OF = {ast.Global: {"names"}, ast.Nonlocal: {"names"}, ast.Constant: {"value"}}


def _child_fields(cls: type, every: bool) -> tuple[str, ...]:
    scalar = _SCALAR_FIELDS | _SCALAR_FIELDS_OF.get(cls, set())
    if cls.__name__ == "TypeAlias":  # Python 3.12: `type X = ...` names its alias with a Name node
        scalar = scalar - {"name"}
    if every:
        fields = _ALL_FIELDS[cls] = tuple(f for f in cls._fields if f not in scalar)
    else:
        fields = _CHILD_FIELDS[cls] = tuple(f for f in cls._fields if f not in scalar and f not in ("ctx", "op", "ops"))
    return fields
# `if not is_x_available(): return` makes the rest optional; `raise` makes the package a requirement
_EXITS = (ast.Return, ast.Continue, ast.Break)

# Marks a name bound by assignment (`F = torch.func`). Such a name resolves only as the base of an
# attribute chain (`F.grad`); used bare it is a value already reported where it was assigned.
_ALIAS = "\x01"


@dataclass(frozen=True)
class Span:
    """A position range in ast terms (1-based lines, UTF-8 byte columns) that is not a node."""

    lineno: int
    col_offset: int
    end_lineno: int
    end_col_offset: int

    @classmethod
    def name_to_end(cls, attribute: ast.Attribute, end: ast.AST) -> "Span":
        """From the attribute's name (the `cuda` of `x.cuda`) to the end of ``end``."""
        line = attribute.end_lineno or attribute.lineno
        col = (attribute.end_col_offset or 0) - len(attribute.attr.encode("utf-8"))
        return cls(line, col, end.end_lineno or line, end.end_col_offset or 0)


@dataclass(frozen=True)
class Hit:
    """A match before it becomes a finding: the node to report and what matched."""

    rule: Rule
    match: Match
    node: ast.AST
    subject: str  # fills {name} in the message
    call: ast.Call | None = None  # the call the node belongs to, for fixers


class Analyzer:
    def __init__(
        self, index: RuleIndex, matchers: dict[str, Callable] | None = None, path: str | None = None,
        text: str | None = None, active: Active | None = None,
    ) -> None:
        """``text``, when given, is the module's source: Python matchers none of whose trigger
        words occur in it cannot fire there, so they are not run (the prefilter's argument, per match).
        ``active`` (from :func:`neuron_lint.prefilter.active`) says which match kinds and matchers can
        fire in this module at all: the walk leaves out the work of the others (same hits)."""
        self.index = index
        kinds = active.kinds if active is not None else None
        on = {k: bool(getattr(index, attr)) and (kinds is None or k in kinds) for k, attr in _KIND_TABLES.items()}
        self._names, self._imports, self._methods = on["names"], on["imports"], on["methods"]
        self._attributes, self._calls, self._assigns, self._env = on["attributes"], on["calls"], on["assign"], on["env"]
        self.matchers = matchers or {}
        self.path = path
        self.hits: list[Hit] = []
        self._scopes: list[dict[str, str | None]] = [{}]
        self._deferred: list[tuple[ast.AST, list[dict]]] = []
        # ids of nodes whose value is only inspected (compared, a dict key, a host copy, an
        # isinstance class): a dtype or API named there creates nothing on the device.
        self._inert: set[int] = set()
        self._guard_depth = 0
        self.tree: ast.Module | None = None
        self.import_bindings: dict[str, str] = {}  # module-level name -> qualified name
        self._dispatch = {
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
            self._dispatch[ast.TryStar] = self._visit_try
        # Python matchers subscribe to node types.
        self._matcher_subs: dict[type, list[tuple[Rule, Match, Callable]]] = {}
        for rule, m in index.matchers:
            if active is not None and id(m) not in active.matchers:
                continue
            if active is None and text is not None and m.trigger and not any(word in text for word in m.trigger):
                continue
            for name in m.patterns:
                fn = self.matchers.get(name)
                if fn is None:
                    raise KeyError(f"{rule.file}: matcher {name!r} is not defined in neuron_lint.matchers")
                for node_type in fn.node_types:
                    self._matcher_subs.setdefault(node_type, []).append((rule, m, fn))
        # Handlers whose only work is for a kind of match that cannot fire here: the plain walk does
        # the same (an attribute chain still jumps to its base, as matchers expect).
        if not self._names:  # `_inert` only silences names
            for node_type in (ast.Dict, ast.IfExp):
                del self._dispatch[node_type]
            if not self._env:
                del self._dispatch[ast.Compare]
            if not (self._calls or self._methods or self._env):
                del self._dispatch[ast.Call]
            del self._dispatch[ast.Name]
            if not self._attributes and ast.Name not in self._matcher_subs:
                self._dispatch[ast.Attribute] = self._visit_attribute_base
        if not self._env:
            del self._dispatch[ast.Subscript]
        # With only imports to find and no matcher, expressions hold nothing: they are not visited.
        self._statements_only = not self._matcher_subs and not (
            self._names or self._methods or self._attributes or self._calls or self._assigns or self._env)
        # One dictionary lookup per node: node type -> what to do with it (hot path).
        self._handlers: dict[type, Callable] = dict(self._dispatch)
        for node_type, subs in self._matcher_subs.items():
            self._handlers[node_type] = self._with_matchers(subs, self._dispatch.get(node_type))
        # Operators and load/store contexts are leaves nothing looks at: not visited unless asked for.
        watched_leaf = any(issubclass(t, _LEAF_TYPES) for t in self._handlers)
        self._fields = _ALL_FIELDS if watched_leaf else _CHILD_FIELDS
        self._skip = frozenset() if watched_leaf or ast.Constant in self._handlers else frozenset({ast.Constant})
        if ast.Name not in self._handlers and not watched_leaf:
            self._skip |= {ast.Name}  # a bare name is a leaf: nothing to do there
        if self._statements_only:
            self._skip |= _EXPR_TYPES
            for node_type in _EXPR_TYPES:
                self._handlers[node_type] = _ignore

    def _with_matchers(self, subs: list, handler: Callable | None) -> Callable[[ast.AST], None]:
        def visit(node: ast.AST) -> None:
            for rule, m, fn in subs:
                for hit_node, subject in fn(self, node):
                    self._hit(rule, m, hit_node, subject)
            if handler is not None:
                handler(node)
            else:
                self._visit_body(node)

        return visit

    # ------------------------------------------------------------------ driving
    def run(self, tree: ast.Module) -> list[Hit]:
        self.tree = tree  # for matchers that look at the whole module (where a variable is used)
        self._visit_stmts(tree.body)
        self.import_bindings = {k: v for k, v in self._scopes[0].items() if v and v[0] != _ALIAS}
        while self._deferred:
            node, scopes = self._deferred.pop(0)
            saved = self._scopes
            self._scopes = scopes + [self._params(node)]
            if isinstance(node, ast.Lambda):
                self.visit(node.body)
            else:
                self._visit_stmts(node.body)
            self._scopes = saved
        return self.hits

    def _visit_stmts(self, stmts: list[ast.stmt]) -> None:
        """A block of statements. After `if not is_x_available(): return`, the rest of it is guarded."""
        added = 0
        for stmt in stmts:
            self.visit(stmt)
            if isinstance(stmt, ast.If) and not stmt.orelse and stmt.body and isinstance(stmt.body[-1], _EXITS):
                if import_guard(stmt.test) == "orelse":
                    self._guard_depth += 1
                    added += 1
        self._guard_depth -= added

    def visit(self, node: ast.AST) -> None:
        handler = self._handlers.get(node.__class__)
        if handler is not None:
            handler(node)
        else:
            self._visit_body(node)

    def _visit_body(self, node: ast.AST) -> None:
        """Visit the children of ``node`` in ``ast.iter_child_nodes`` order (less unwatched leaves)."""
        cls = node.__class__
        fields = self._fields.get(cls)
        if fields is None:
            fields = _child_fields(cls, self._fields is _ALL_FIELDS)
        # `visit` inlined: this loop runs for most nodes of the tree
        handlers, body, skip, AST = self._handlers, self._visit_body, self._skip, ast.AST
        for name in fields:
            value = getattr(node, name, None)
            if value.__class__ is list:
                for item in value:
                    cls = item.__class__
                    if cls not in skip and isinstance(item, AST):
                        handler = handlers.get(cls)
                        if handler is not None:
                            handler(item)
                        else:
                            body(item)
            elif value is not None:
                cls = value.__class__
                if cls not in skip and isinstance(value, AST):
                    handler = handlers.get(cls)
                    if handler is not None:
                        handler(value)
                    else:
                        body(value)

    # ------------------------------------------------------------------ names
    def lookup(self, name: str) -> str | None:
        for scope in reversed(self._scopes):
            if name in scope:
                return scope[name]
        return None

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
        if base[0] == _ALIAS:
            if not parts:
                return None  # `dtype = torch.float64; f(dtype)`: the assignment was the finding
            base = base[1:]
        if parts:
            parts.reverse()
            return base + "." + ".".join(parts)
        return base

    def _bind(self, name: str, qual: str | None) -> None:
        self._scopes[-1][name] = qual

    @staticmethod
    def _params(node: ast.AST) -> dict[str, str | None]:
        a = node.args  # type: ignore[attr-defined]
        names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
        if a.vararg:
            names.append(a.vararg.arg)
        if a.kwarg:
            names.append(a.kwarg.arg)
        return dict.fromkeys(names)

    # ------------------------------------------------------------------ hits
    def _hit(self, rule: Rule, match: Match, node: ast.AST, subject: str, call: ast.Call | None = None) -> None:
        self.hits.append(Hit(rule, match, node, subject, call))

    # ------------------------------------------------------------------ imports
    def _visit_import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname:
                self._bind(alias.asname, alias.name)
            else:
                top = alias.name.split(".", 1)[0]
                self._bind(top, top)
            self._check_import(alias.name, alias)

    def _visit_import_from(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module:
            for alias in node.names:  # relative import: a local module, never a known API
                if alias.name != "*":
                    self._bind(alias.asname or alias.name, None)
            return
        reported = self._check_import(node.module, node)
        for alias in node.names:
            if alias.name == "*":
                continue
            qual = f"{node.module}.{alias.name}"
            self._bind(alias.asname or alias.name, qual)
            if not reported:
                self._check_import(qual, alias)

    def _check_import(self, module: str, node: ast.AST) -> bool:
        if not self._imports:
            return False
        hits = self.index.imports.lookup(module)
        if hits and self.path and is_local_package(self.path, module.split(".", 1)[0]):
            return True  # the project's own package (mamba_ssm inside the mamba repository)
        found = False
        for rule, m in hits:
            if self._guard_depth and not m.guarded:
                continue
            found = True
            self._hit(rule, m, node, module)  # every import statement: each one fails on its own
        return found

    def _visit_try(self, node: ast.AST) -> None:
        # `except ImportError: fallback = None` makes the imports optional; a handler that raises or
        # imports again (`except ImportError: install(); import x`) makes them a requirement.
        guards = any(
            self._catches_import_error(h.type) and not _requires(node.body, h.body) for h in node.handlers  # type: ignore[attr-defined]
        )
        if guards:
            self._guard_depth += 1
        for stmt in node.body:  # type: ignore[attr-defined]
            self.visit(stmt)
        if guards:
            self._guard_depth -= 1
        for part in (node.handlers, node.orelse, node.finalbody):  # type: ignore[attr-defined]
            for stmt in part:
                self.visit(stmt)

    def _visit_if(self, node: ast.If) -> None:
        """`if TYPE_CHECKING:` and `if is_flash_attn_available():` guard the imports they contain."""
        self.visit(node.test)
        guard = import_guard(node.test)
        for part, guarded in ((node.body, guard == "body"), (node.orelse, guard == "orelse")):
            if guarded:
                self._guard_depth += 1
            self._visit_stmts(part)
            if guarded:
                self._guard_depth -= 1

    @staticmethod
    def _catches_import_error(expr: ast.AST | None) -> bool:
        if expr is None:
            return True
        items = expr.elts if isinstance(expr, ast.Tuple) else [expr]
        return any(isinstance(e, ast.Name) and e.id in _IMPORT_ERRORS for e in items)

    # ------------------------------------------------------------------ scopes
    def _visit_function(self, node: ast.AST) -> None:
        for deco in getattr(node, "decorator_list", ()):
            self.visit(deco)
        args = node.args  # type: ignore[attr-defined]
        for default in (*args.defaults, *args.kw_defaults):
            if default is not None:
                self.visit(default)
        if not isinstance(node, ast.Lambda):
            for p in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
                if p is not None and p.annotation is not None:
                    self.visit(p.annotation)
            if node.returns is not None:  # type: ignore[attr-defined]
                self.visit(node.returns)  # type: ignore[attr-defined]
            self._bind(node.name, None)  # type: ignore[attr-defined]
            if self._assigns:
                self._check_param_defaults(args)
        # Class scopes are not visible from inside a method.
        chain = [s for s in self._scopes if not s.get("<class>", False)]
        self._deferred.append((node, chain))

    def _visit_class(self, node: ast.ClassDef) -> None:
        for part in (node.decorator_list, node.bases, node.keywords):
            for child in part:
                self.visit(child)
        self._scopes.append({"<class>": True})  # type: ignore[dict-item]
        for stmt in node.body:
            self.visit(stmt)
        self._scopes.pop()
        self._bind(node.name, None)

    # ------------------------------------------------------------------ references
    def _visit_name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load) or not self._names:
            return
        qual = self.lookup(node.id)
        if qual is not None and qual[0] != _ALIAS:
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
        for operand in (node.left, *node.comparators):
            self._inert.add(id(operand))
            if isinstance(operand, (ast.Tuple, ast.List, ast.Set)):
                self._inert.update(id(e) for e in operand.elts)
        if self._env and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            left = node.left
            right = node.comparators[0]
            if isinstance(left, ast.Constant) and isinstance(left.value, str) and self.qualname(right) == "os.environ":
                self._check_env(left)
        self._visit_body(node)

    def _visit_dict(self, node: ast.Dict) -> None:
        self._inert.update(id(k) for k in node.keys if k is not None)
        values = node.values
        if len(values) >= 2 and all(isinstance(v, ast.Attribute) for v in values):
            # `{np.float64: torch.float64, np.complex64: torch.complex64}`, `{"fp32": torch.float32,
            # "fp64": torch.float64}`: a conversion or choice table of torch's own names (dtypes).
            # Tables of deeper names (`{"cuda": ProfilerActivity.CUDA}`) are still reported.
            bases = {self.qualname(v.value) for v in values}  # type: ignore[attr-defined]
            if bases == {"torch"} and len({v.attr for v in values}) == len(values):  # type: ignore[attr-defined]
                self._inert.update(id(v) for v in values)
        self._visit_body(node)

    def _visit_ifexp(self, node: ast.IfExp) -> None:
        # `torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32` echoes
        # a setting made elsewhere (and reported there)
        if isinstance(node.test, ast.Compare):
            operands = {ast.dump(o) for o in (node.test.left, *node.test.comparators)}
            for arm in (node.body, node.orelse):
                if ast.dump(arm) in operands:
                    self._inert.add(id(arm))
        self._visit_body(node)

    # ------------------------------------------------------------------ calls
    def _visit_call(self, node: ast.Call) -> None:
        func = node.func
        index = self.index
        if self._names:  # `_inert` only silences name matches
            self._mark_inert_args(node, func)
        if self._calls or self._methods or self._env:
            qual = self.qualname(func) if isinstance(func, (ast.Name, ast.Attribute)) else None
            is_method = qual is None and isinstance(func, ast.Attribute)
            if self._methods and is_method:
                hits = index.methods.lookup(func.attr)  # type: ignore[union-attr]
                if hits and func.attr in _DTYPE_METHODS and _is_cpu_copy(func.value):  # type: ignore[union-attr]
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

    def _mark_inert_args(self, node: ast.Call, func: ast.AST) -> None:
        if node.keywords and _on_cpu(node):
            self._inert.update(id(kw.value) for kw in node.keywords if kw.arg == "dtype")
        if isinstance(func, ast.Name) and func.id in ("isinstance", "issubclass") and len(node.args) == 2:
            classes = node.args[1]  # `isinstance(model, DataParallel)` inspects a type; it uses nothing
            self._inert.add(id(classes))
            if isinstance(classes, ast.Tuple):
                self._inert.update(id(e) for e in classes.elts)
        if isinstance(func, ast.Attribute) and func.attr == "to" and _is_cpu_copy(func.value):
            self._inert.update(id(a) for a in node.args)  # `x.cpu().to(torch.float64)`
            self._inert.update(id(kw.value) for kw in node.keywords if kw.arg == "dtype")
        if isinstance(func, ast.Attribute) and func.attr == "cpu" and isinstance(func.value, ast.Call):
            inner = func.value  # `w.to(torch.float64).cpu()`: the float64 copy is for the host
            if isinstance(inner.func, ast.Attribute) and inner.func.attr == "to":
                self._inert.update(id(a) for a in inner.args)
                self._inert.update(id(kw.value) for kw in inner.keywords if kw.arg == "dtype")

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
        found = self.match_value(value, m)
        if found is not None:
            node, subject = found
            self._hit(rule, m, node, subject, call)

    def match_value(self, value: ast.AST, m: Match) -> tuple[ast.AST, str] | None:
        """Does an expression equal one of the match's values? Looks into both arms of `a if c else b`."""
        if isinstance(value, ast.IfExp):
            return self.match_value(value.body, m) or self.match_value(value.orelse, m)
        if isinstance(value, (ast.List, ast.Tuple)) and any(isinstance(w, str) for w in m.values):
            # `sources=["a.cpp", "b.cu"]`, `["nvidia-smi", "-L"]`: a string value may be one element
            for elt in value.elts:
                found = self.match_value(elt, m)
                if found is not None:
                    return found
            return None
        if isinstance(value, ast.Constant):
            v = value.value
            for want in m.values:
                if isinstance(want, str):
                    if isinstance(v, str) and fnmatch.fnmatchcase(v, want):
                        return value, v
                elif type(v) is type(want) and v == want:
                    return value, repr(v)
            return None
        if isinstance(value, ast.JoinedStr) and any(isinstance(w, str) for w in m.values):
            text = "".join(
                part.value if isinstance(part, ast.Constant) else "\x00" for part in value.values
            )
            for want in m.values:
                if isinstance(want, str) and fnmatch.fnmatchcase(text, want):
                    return value, text.replace("\x00", "{…}")
            return None
        if m.value_names and isinstance(value, (ast.Name, ast.Attribute)):
            qual = self.qualname(value)
            if qual is not None and any(fnmatch.fnmatchcase(qual, p) for p in m.value_names):
                return value, qual
        return None

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
                    self._bind(targets[0].id, _ALIAS + qual)
        self._visit_body(node)

    def _check_assign(self, name: str, value: ast.AST) -> None:
        for rule, m in self.index.assigns.lookup(name):
            found = self.match_value(value, m)
            if found is not None:
                self._hit(rule, m, found[0], found[1])

    def _check_param_defaults(self, args: ast.arguments) -> None:
        for param, default in parameter_defaults(args):
            self._check_assign(param.arg, default)


def _imported_packages(stmts: list[ast.stmt]) -> set[str]:
    found: set[str] = set()
    for stmt in stmts:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Import):
                found.update(a.name.split(".", 1)[0] for a in n.names)
            elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
                found.add(n.module.split(".", 1)[0])
    return found


def _requires(body: list[ast.stmt], handler_body: list[ast.stmt]) -> bool:
    """Does an ``except ImportError:`` handler insist on the package: raise, exit, or import the same
    package again (after installing it)? A handler importing something else is a fallback."""
    wanted = _imported_packages(body)
    for stmt in handler_body:
        if isinstance(stmt, ast.Raise):
            return True
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            func = stmt.value.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("exit", "_exit", "abort"):
                return True
    return bool(wanted & _imported_packages(handler_body))


@lru_cache(maxsize=4096)
def _import_roots(directory: str) -> tuple[str, ...]:
    """The ancestors of a directory that could be on sys.path: those that are not packages themselves."""
    roots = []
    d = os.path.abspath(directory)
    while True:
        if not os.path.isfile(os.path.join(d, "__init__.py")):
            roots.append(d)
        parent = os.path.dirname(d)
        if parent == d:
            return tuple(roots)
        d = parent


@lru_cache(maxsize=4096)
def _provides(root: str, name: str) -> bool:
    return os.path.isfile(os.path.join(root, name, "__init__.py")) or os.path.isfile(os.path.join(root, name + ".py"))


_recording: list[list[tuple[str, str, bool]]] = []


@contextmanager
def recorded_lookups() -> Iterator[list[tuple[str, str, bool]]]:
    """Collect the (file, package, answer) questions asked of the disk inside the block.

    A cached result stays valid only while the same questions get the same answers (see runner).
    """
    lookups: list[tuple[str, str, bool]] = []
    _recording.append(lookups)
    try:
        yield lookups
    finally:
        _recording.remove(lookups)


def is_local_package(path: str, top: str) -> bool:
    """Is `top` a package of the project being checked (a sibling of one of the file's import roots)?

    `import mamba_ssm` inside the mamba repository is the project's own code, whose CUDA parts are
    reported where they are; `import triton` from `mamba_ssm/ops/triton/x.py` is still the real
    Triton, since `mamba_ssm/ops` is a package and so not an import root.
    """
    try:
        if not os.path.isfile(path):
            return False  # source text given without a real file (stdin, the library API, examples)
        answer = any(_provides(root, top) for root in _import_roots(os.path.dirname(path) or "."))
        for lookups in _recording:
            lookups.append((path, top, answer))
        return answer
    except (OSError, ValueError):
        return False


_DTYPE_METHODS = frozenset({"double", "cfloat", "cdouble", "chalf"})


def _is_cpu_copy(expr: ast.AST) -> bool:
    """`x.cpu()` (or `x.detach().cpu()`): a host tensor."""
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "cpu" and not expr.args


def _on_cpu(call: ast.Call) -> bool:
    """`device="cpu"` or `device=torch.device("cpu")`: the call makes a host tensor."""
    for kw in call.keywords:
        if kw.arg == "device":
            value = kw.value
            if isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords:
                func = value.func  # torch.device("cpu"), however torch was imported
                if not (isinstance(func, ast.Attribute) and func.attr == "device" or isinstance(func, ast.Name) and func.id == "device"):
                    return False
                value = value.args[0]
            return isinstance(value, ast.Constant) and value.value == "cpu"
    return False


def _is_availability_check(expr: ast.AST) -> bool:
    """`is_x_available()`, `importlib.util.find_spec("x")`, `HAS_X`, `X_AVAILABLE`, `TYPE_CHECKING`.

    Such a test says a package may be missing (or, for TYPE_CHECKING, that the code never runs).
    """
    if isinstance(expr, ast.Call):
        func = expr.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        # `torch.cuda.is_available()` checks for a device, not a package: its branch is still reported
        return ("available" in name.lower() and name != "is_available") or name == "find_spec"
    name = expr.attr if isinstance(expr, ast.Attribute) else expr.id if isinstance(expr, ast.Name) else ""
    return name == "TYPE_CHECKING" or (
        name.isupper() and (name.lstrip("_").startswith("HAS_") or name.endswith("_AVAILABLE"))
    )


def import_guard(test: ast.AST) -> str | None:
    """Which branch of an `if` runs only when an optional package (or a type checker) is there."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return "orelse" if import_guard(test.operand) == "body" else None
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return "body" if any(import_guard(v) == "body" for v in test.values) else None
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.comparators[0], ast.Constant):
        if test.comparators[0].value is None and _is_availability_check(test.left):  # find_spec(x) is not None
            return "body" if isinstance(test.ops[0], ast.IsNot) else "orelse" if isinstance(test.ops[0], ast.Is) else None
        return None
    return "body" if _is_availability_check(test) else None


def argument(call: ast.Call, position: int | None, keyword: str | None) -> ast.AST | None:
    """The expression passed for a parameter, by keyword or by position (not through *args)."""
    if keyword is not None:
        for kw in call.keywords:
            if kw.arg == keyword:
                return kw.value
    if position is not None and position < len(call.args):
        if not any(isinstance(a, ast.Starred) for a in call.args[: position + 1]):
            return call.args[position]
    return None


def iter_hits(index: RuleIndex, tree: ast.Module, matchers: dict[str, Callable] | None = None) -> Iterable[Hit]:
    return Analyzer(index, matchers).run(tree)
