"""The tree walk itself: statement order, scopes, imports and import guards.

Function bodies are walked after the code around them (as Python runs them later), so a function
sees module-level imports written below it. What names refer to is kept in a
:class:`neuron_lint.engine.semantic.SemanticModel`, which is what matchers are given; the rule index's
expression tables are looked up by the subclass :class:`neuron_lint.engine.analyzer.Analyzer`.
"""

from __future__ import annotations

import ast
from typing import Callable

from ..catalog.index import RuleIndex
from ..catalog.loading import Match, Rule
from .hits import Hit
from .import_guards import EXITS, catches_import_error, import_guard, try_guards
from .project_facts import is_local_package
from .semantic import SemanticModel

# Node types that hold no code: `ctx` (Load/Store), `op` and `ops` (operators) fields hold only these.
LEAF_TYPES = (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)
CHILD_FIELDS: dict[type, tuple[str, ...]] = {}  # node type -> fields that may hold code
ALL_FIELDS: dict[type, tuple[str, ...]] = {}  # node type -> every field

#: Fields that only ever hold a name, a number or a flag, never a node (`Global.names` is a list of str).
_SCALAR_FIELDS = {"id", "attr", "arg", "name", "module", "asname", "level", "is_async", "simple", "conversion",
                  "type_comment", "tag", "kind", "kwd_attrs"}
_SCALAR_FIELDS_OF = {ast.Global: {"names"}, ast.Nonlocal: {"names"}, ast.Constant: {"value"}}


def _child_fields(cls: type, every: bool) -> tuple[str, ...]:
    scalar = _SCALAR_FIELDS | _SCALAR_FIELDS_OF.get(cls, set())
    if cls.__name__ == "TypeAlias":  # Python 3.12: `type X = ...` names its alias with a Name node
        scalar = scalar - {"name"}
    if every:
        fields = ALL_FIELDS[cls] = tuple(f for f in cls._fields if f not in scalar)
    else:
        fields = CHILD_FIELDS[cls] = tuple(f for f in cls._fields if f not in scalar and f not in ("ctx", "op", "ops"))
    return fields


class Walker:
    """Drives the walk; subclasses fill ``_handlers`` (node type -> what to do with it)."""

    def __init__(self, index: RuleIndex, model: SemanticModel) -> None:
        self.index = index
        self.model = model
        self.path = model.path
        self.hits: list[Hit] = []
        self.import_bindings: dict[str, str] = {}  # module-level name -> qualified name
        self._deferred: list[tuple[ast.AST, list[dict]]] = []
        # The model's methods and sets, bound once: the walk calls them at most nodes.
        self.qualname = model.qualname
        self.lookup = model.lookup
        self._bind = model.bind
        self._inert = model.inert
        self._imports = False
        self._handlers: dict[type, Callable] = {}
        self._fields = CHILD_FIELDS
        self._skip: frozenset[type] = frozenset()

    def _with_matchers(self, subs: list, handler: Callable | None) -> Callable[[ast.AST], None]:
        model = self.model

        def visit(node: ast.AST) -> None:
            for rule, m, fn in subs:
                for hit_node, subject in fn(model, node):
                    self._hit(rule, m, hit_node, subject)
            if handler is not None:
                handler(node)
            else:
                self._visit_body(node)

        return visit

    # ------------------------------------------------------------------ driving
    def run(self, tree: ast.Module) -> list[Hit]:
        model = self.model
        model.tree = tree  # for matchers that look at the whole module (where a variable is used)
        self._visit_stmts(tree.body)
        self.import_bindings = model.import_bindings()
        while self._deferred:
            node, scopes = self._deferred.pop(0)
            saved = model.swap_scopes(scopes + [model.parameters(node)])
            if isinstance(node, ast.Lambda):
                self.visit(node.body)
            else:
                self._visit_stmts(node.body)
            model.swap_scopes(saved)
        return self.hits

    def _visit_stmts(self, stmts: list[ast.stmt]) -> None:
        """A block of statements. After `if not is_x_available(): return`, the rest of it is guarded."""
        added = 0
        for stmt in stmts:
            self.visit(stmt)
            if isinstance(stmt, ast.If) and not stmt.orelse and stmt.body and isinstance(stmt.body[-1], EXITS):
                if import_guard(stmt.test) == "orelse":
                    self.model.guard_depth += 1
                    added += 1
        self.model.guard_depth -= added

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
            fields = _child_fields(cls, self._fields is ALL_FIELDS)
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
        if node.names[0].name == "*" and self.model.lookup("torch") is None:
            # `from ..imports.torch import *` (fastai v1, DeOldify): a module that uses `torch` with
            # no import of its own gets it from there; unresolved, its `torch.cuda` calls went unseen
            self._bind("torch", "torch")
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
        guarded = self.model.guard_depth
        for rule, m in hits:
            if guarded and not m.guarded:
                continue
            found = True
            self._hit(rule, m, node, module)  # every import statement: each one fails on its own
        return found

    def _visit_try(self, node: ast.AST) -> None:
        guards = try_guards(node)
        model = self.model
        if guards:
            model.guard_depth += 1
        for stmt in node.body:  # type: ignore[attr-defined]
            self.visit(stmt)
        if guards:
            model.guard_depth -= 1
        preferred = self._preferred_imports(node)
        for part in (node.handlers, node.orelse, node.finalbody):  # type: ignore[attr-defined]
            for stmt in part:
                self.visit(stmt)
        for name, qual in preferred:
            self._bind(name, qual)

    def _preferred_imports(self, node: ast.AST) -> list[tuple[str, str | None]]:
        """The names the imports of a ``try`` body bind, as bound now, when a handler catches
        ``ImportError``: the handler's import of the same name is the fallback for an older
        library (ignite: ``from torch.amp import GradScaler``, else ``torch.cuda.amp``'s), so the
        code after the ``try`` uses what the body imported, not what the fallback would."""
        if not any(catches_import_error(h.type) for h in node.handlers):  # type: ignore[attr-defined]
            return []
        names = [a.asname or a.name.split(".", 1)[0] for stmt in node.body  # type: ignore[attr-defined]
                 if isinstance(stmt, (ast.Import, ast.ImportFrom)) for a in stmt.names if a.name != "*"]
        return [(name, self.model.lookup(name)) for name in names]

    def _visit_if(self, node: ast.If) -> None:
        """`if TYPE_CHECKING:` and `if is_flash_attn_available():` guard the imports they contain."""
        self.visit(node.test)
        guard = import_guard(node.test)
        model = self.model
        for part, guarded in ((node.body, guard == "body"), (node.orelse, guard == "orelse")):
            if guarded:
                model.guard_depth += 1
            self._visit_stmts(part)
            if guarded:
                model.guard_depth -= 1

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
            self._function_defined(args)
        # Class scopes are not visible from inside a method.
        self._deferred.append((node, self.model.function_scopes()))

    def _function_defined(self, args: ast.arguments) -> None:
        """A ``def`` was met (its parameters' defaults are in ``args``): for subclasses."""

    def _visit_class(self, node: ast.ClassDef) -> None:
        for part in (node.decorator_list, node.bases, node.keywords):
            for child in part:
                self.visit(child)
        model = self.model
        model.push_class_scope()
        for stmt in node.body:
            self.visit(stmt)
        model.pop_scope()
        self._bind(node.name, None)
