"""The imports a pass of ``fix`` adds and removes, through LibCST's own codemod visitors.

- :class:`TopLevelAddImports`: ``AddImportsVisitor``, kept out of the statements it never changes;
- :func:`remove_unused_imports`: ``RemoveImportsVisitor``'s removals, with what is still in use
  read from the ``ast`` of the rewritten code (:func:`imports_in_use`) instead of a scope analysis
  of the whole module.

Both leave every statement they do not change the very node it was, so that
:meth:`~neuron_lint.fixes.regions.Module.code_of` copies its text instead of generating it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
from libcst.metadata import MetadataWrapper

from .import_order import lone_import
from .removed_comments import is_emptied, keep_comments


class TopLevelAddImports(AddImportsVisitor):
    """LibCST's ``AddImportsVisitor``, kept out of the statements it never changes: it extends only
    the imports at the top of the module and adds lines to the module's body. Every other statement
    stays the very node it was (a plain transform rebuilds every node), so that
    :meth:`~neuron_lint.fixes.regions.Module.code_of` copies its text instead of generating it."""

    def transform_module(self, tree: cst.Module) -> cst.Module:
        # as Codemod.transform_module, less its deep copy of the module (which would make every node new)
        wrapper = MetadataWrapper(tree, unsafe_skip_copy=True)
        before = self.context
        with self.resolve(wrapper):
            self.context = replace(before, wrapper=wrapper)
            try:
                return self.transform_module_impl(wrapper.module)
            finally:
                self.context = before

    def visit_Module(self, node: cst.Module) -> None:
        # LibCST gathers the imports at the top of the module with a visit of the whole module, of
        # which it reads only the statements up to the first that is not an import: hand it those.
        end = next((i for i, stmt in enumerate(node.body) if i and not lone_import(stmt)), len(node.body))
        super().visit_Module(node.with_changes(body=node.body[:end + 1]))

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.BaseCompoundStatement) or isinstance(node, cst.SimpleStatementLine) and not any(
                isinstance(small, (cst.Import, cst.ImportFrom)) for small in node.body):
            return False
        return super().on_visit(node)


def remove_unused_imports(context: CodemodContext, tree: cst.Module, code: str) -> cst.Module:
    """``tree`` (whose code is ``code``) less the imports ``RemoveImportsVisitor.remove_unused_import``
    asked for that nothing uses any more; LibCST's own visitor where :class:`_RemoveImports` cannot tell."""
    try:
        used = imports_in_use(ast.parse(code))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        used = None
    if used is not None:
        remover = _RemoveImports(context, used)
        new = tree.visit(remover)
        if remover.aliases == len(used):
            return new
    return RemoveImportsVisitor(context).transform_module(tree)


class _RemoveImports(RemoveImportsVisitor):
    """LibCST's ``RemoveImportsVisitor`` (its choice of the imports to remove, its handling of commas
    and comments), with what is in use decided by :func:`imports_in_use` on the ``ast`` of the code
    instead of a scope analysis of the whole module (which costs some twenty LibCST parses). It visits
    only the statements that can hold an import, and a statement with nothing removed stays the very
    node it was, so that :meth:`~neuron_lint.fixes.regions.Module.code_of` copies its text."""

    _BLOCKS = (cst.Module, cst.BaseCompoundStatement, cst.BaseSuite, cst.Else, cst.ExceptHandler,
               cst.ExceptStarHandler, cst.Finally, cst.MatchCase)

    def __init__(self, context: CodemodContext, used: list[bool]) -> None:
        super().__init__(context)
        self.used = used
        self.aliases = 0  # import names seen, in the order of the file (as ``used``)
        self._index: dict[int, int] = {}
        self._changes = 0
        self._marks: list[int] = []
        self._removed: set[int] = set()  # import lines removed, whose comment lines stay
        outer = self

        class _Unused:
            def __contains__(self, alias) -> bool:
                k = outer._index.get(id(alias))
                return k is not None and k < len(outer.used) and not outer.used[k]

        self._unused_imports = _Unused()

    def visit_Module(self, node: cst.Module) -> None:
        return None  # no GatherUnusedImportsVisitor: ``used`` says what is in use

    def on_visit(self, node: cst.CSTNode) -> bool:
        self._marks.append(self._changes)
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            if not isinstance(node.names, cst.ImportStar):
                for alias in node.names:
                    self._index[id(alias)] = self.aliases
                    self.aliases += 1
            return False
        if isinstance(node, cst.SimpleStatementLine) or isinstance(node, cst.SimpleStatementSuite):
            return any(isinstance(small, (cst.Import, cst.ImportFrom)) for small in node.body)
        return isinstance(node, self._BLOCKS)

    def on_leave(self, original_node, updated_node):
        mark = self._marks.pop()
        if isinstance(original_node, (cst.Import, cst.ImportFrom)):
            result = super().on_leave(original_node, updated_node)
            if isinstance(result, type(original_node)) and _same_names(result, original_node):
                return original_node  # LibCST rebuilds an import it keeps whole (a list is not a tuple)
            self._changes += 1
            return result
        if self._changes == mark:
            return original_node
        result = super().on_leave(original_node, updated_node)
        if _only_held_removed_imports(original_node, result):
            result = cst.RemoveFromParent()  # `if version >= "1.6": pass` is left of nothing but its test
        if is_emptied(original_node, result):
            self._removed.add(id(original_node))
        result = keep_comments(original_node, result, self._removed)
        if isinstance(result, cst.IndentedBlock):
            return _without_leading_blank(original_node, result)
        return result


def _without_leading_blank(original: cst.IndentedBlock, block: cst.IndentedBlock) -> cst.IndentedBlock:
    """A block whose first statement, an import, was removed: the blank lines that followed the
    import would now open the block (``def f():`` then an empty line); they go, comments stay."""
    if not (original.body and lone_import(original.body[0]) and block.body) or lone_import(block.body[0]):
        return block
    first = block.body[0]
    lines = list(first.leading_lines)
    while lines and lines[0].comment is None:
        lines.pop(0)
    if len(lines) == len(first.leading_lines):
        return block
    return block.with_changes(body=[first.with_changes(leading_lines=lines), *block.body[1:]])


def _only_held_removed_imports(original, result) -> bool:
    """An ``if`` without ``else``, or a ``try`` whose handlers only ``pass`` (no ``else``/``finally``),
    whose body held only imports, now all removed, and no comment: transformers' ``if
    version.parse(torch.__version__) >= version.parse("1.6"): from torch.cuda.amp import autocast``."""
    if isinstance(result, cst.If):
        if result.orelse is not None:
            return False
    elif isinstance(result, cst.Try):
        if result.orelse is not None or result.finalbody is not None or not all(
                isinstance(h.body, cst.IndentedBlock) and all(
                    isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(x, cst.Pass) for x in stmt.body)
                    for stmt in h.body.body) for h in result.handlers):
            return False
    else:
        return False
    return isinstance(result.body, cst.IndentedBlock) and not result.body.body \
        and "#" not in cst.Module([]).code_for_node(original)


def _same_names(a, b) -> bool:
    if isinstance(a.names, cst.ImportStar) or isinstance(b.names, cst.ImportStar):
        return a.names is b.names
    return len(a.names) == len(b.names) and all(x is y for x, y in zip(a.names, b.names)) and (
        not isinstance(a, cst.ImportFrom) or a.lpar is b.lpar)


def imports_in_use(tree: ast.Module) -> list[bool]:
    """For each name an ``import`` binds (star imports aside), in the order of the file: whether the
    module may still use it. ``import a.b`` binds ``a``. A name is used where it appears as a name,
    as a string equal to it (``__all__``) or as a word of a string annotation (for an import in a
    class body, also as an attribute). An import in a function is in use when the function (or one
    inside it) uses the name; one at module level (or declared ``global``), when module-level code
    or any function that does not bind the name itself uses it. Where in doubt, in use: a kept
    import costs at worst an unused-import warning, a wrongly removed one breaks the module."""
    scopes: list[_Scope] = []
    found: list[tuple[tuple[int, int], list[str], _Scope, bool]] = []  # (position, names, scope, in a class)

    def visit(node: ast.AST, scope: _Scope, in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                names = [a.asname or (a.name.split(".")[0] if isinstance(child, ast.Import) else a.name)
                         for a in child.names]
                if "*" not in names:
                    found.append(((child.lineno, child.col_offset), names, scope, in_class))
                if not in_class:
                    scope.binds.update(names)
                continue
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                inner = _Scope(scope)
                scopes.append(inner)
                scope.uses.update(_annotation_words(child))  # its return annotation
                for default in (*child.args.defaults, *(d for d in child.args.kw_defaults if d is not None)):
                    visit_expression(default, scope)
                for decorator in getattr(child, "decorator_list", ()):
                    visit_expression(decorator, scope)
                args = child.args
                every = (*args.posonlyargs, *args.args, *args.kwonlyargs,
                         *(x for x in (args.vararg, args.kwarg) if x is not None))
                inner.binds.update(a.arg for a in every)
                for annotation in (*(a.annotation for a in every), getattr(child, "returns", None)):
                    if annotation is not None:
                        visit_expression(annotation, scope)
                for a in every:
                    scope.uses.update(_annotation_words(a))
                body = child.body if isinstance(child.body, list) else [child.body]
                for stmt in body:
                    visit(ast.Module(body=[stmt], type_ignores=[]), inner, False)
                continue
            scope.take(child, in_class)
            if isinstance(child, (ast.ClassDef, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                visit(child, scope, True)  # their bindings are not the scope's
            else:
                visit(child, scope, in_class)

    def visit_expression(node: ast.AST, scope: _Scope) -> None:
        visit(ast.Expression(body=node), scope, True)

    module = _Scope(None)
    scopes.append(module)
    visit(tree, module, False)
    found.sort(key=lambda item: item[0])
    used: list[bool] = []
    for _position, names, scope, in_class in found:
        for name in names:
            if in_class and any(name in s.attrs for s in scopes if s.within(scope)):
                used.append(True)  # ``self.name``
            elif scope is not module and name not in scope.declared:
                used.append(any(name in s.uses for s in scopes if s.within(scope)))
            else:
                used.append(name in module.uses or any(
                    name in s.uses and (name not in s.binds or name in s.declared) for s in scopes if s is not module))
    return used


class _Scope:
    """What one function (or the module's own code) uses and binds, not counting the functions in it."""

    def __init__(self, parent: _Scope | None) -> None:
        self.parent = parent
        self.uses: set[str] = set()
        self.attrs: set[str] = set()
        self.binds: set[str] = set()
        self.declared: set[str] = set()  # ``global`` and ``nonlocal`` names

    def within(self, other: _Scope) -> bool:
        scope: _Scope | None = self
        while scope is not None:
            if scope is other:
                return True
            scope = scope.parent
        return False

    def take(self, node: ast.AST, in_class: bool) -> None:
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Store):
                if not in_class:
                    self.binds.add(node.id)
            else:
                self.uses.add(node.id)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            self.uses.add(node.target.id)  # ``x += 1`` reads ``x``
        elif isinstance(node, ast.Attribute):
            self.attrs.add(node.attr)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            self.declared.update(node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            self.uses.add(node.value)  # an ``__all__`` entry
        self.uses.update(_annotation_words(node))


def _annotation_words(node: ast.AST) -> set[str]:
    """The words of the string annotations directly on ``node``."""
    words: set[str] = set()
    for annotation in (getattr(node, "annotation", None), getattr(node, "returns", None)):
        if annotation is not None:
            for part in ast.walk(annotation):
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    words.update(_WORD.findall(part.value))
    return words


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
