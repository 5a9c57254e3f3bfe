"""The ast side of a fix: what a fixer may look at while ``check`` plans rewrites.

Planning must stay as cheap as detection (it runs on every file with a fixable finding), so it
reads only the ``ast`` the engine already has. A plan is a :class:`~neuron_lint.model.Fix` with
no edits: the node to replace (``target``), the fixer's decisions (``data``) and its
applicability. :mod:`neuron_lint.fixes.rewrite` carries plans out with LibCST.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

from ..config.settings import Settings
from ..engine.parents import TreeParents, walk_nodes
from ..io.positions import LineIndex
from ..model import Applicability, Fix

# (their readers join the one project walk, project_scan.source_index, only if registered before it runs)
from . import mocked, name_dispatch, own_extension, process_group, vendored_device  # noqa: F401
from .function_imports import FunctionImports
from .library_device import library_device_note
from .local_device import local_device
from .module_kind import (
    binds_torch,
    forks_workers,
    is_main_guard,
    is_script,
    is_str,
    module_level,
)
from .visible_devices import picks_visible_devices

#: The module-level device variable a script gets, and the helper a library module gets.
DEVICE_VAR = "DEVICE"
DEVICE_HELPER = "_current_device"
#: Module-level names that, bound once to the current CUDA device, are reused as the device.
REUSABLE_NAMES = ("device", "DEVICE")


def version_tuple(text: str) -> tuple[int, ...]:
    """``"2.6"`` -> ``(2, 6)``; raises ValueError on anything else."""
    parts = tuple(int(p) for p in str(text).strip().split("."))
    if not 1 <= len(parts) <= 3:
        raise ValueError(text)
    return parts


def _import_or_flag(stmt: ast.stmt) -> bool:
    """An import, ``pass``, or the flag a conditional import sets (``HAS_APEX = True``, ``apex = None``)."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Pass)):
        return True
    return (isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets)
            and isinstance(stmt.value, ast.Constant))


def _is_import_block(stmt: ast.stmt) -> bool:
    """An import, or a ``try``/``if`` whose body only imports (a conditional import), perhaps
    setting a flag that says whether it worked."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return True
    if isinstance(stmt, ast.Try):
        if not any(isinstance(s, (ast.Import, ast.ImportFrom)) for s in stmt.body):
            return False
        return all(_import_or_flag(s) for s in stmt.body)
    if isinstance(stmt, ast.If) and not is_main_guard(stmt):
        return all(isinstance(s, (ast.Import, ast.ImportFrom, ast.Pass)) for s in [*stmt.body, *stmt.orelse])
    return False


def _is_setup_call(stmt: ast.stmt) -> bool:
    """A bare call between imports (``matplotlib.use("Agg")``, ``pyximport.install()``,
    ``sys.path.append(...)``): the import block goes on past it when more imports follow."""
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)


def leading_block_end(tree: ast.Module) -> int:
    """The last line of the module's docstring and leading import block (0 when there is none),
    bare calls between its imports included (LDAM-DRW's ``import matplotlib``,
    ``matplotlib.use('Agg')``, ``import matplotlib.pyplot as plt``).

    A module-level device definition goes right after it (see :mod:`neuron_lint.fixes.scope`).
    """
    end = 0
    for i, stmt in enumerate(tree.body):
        if i == 0 and isinstance(stmt, ast.Expr) and is_str(stmt.value):
            end = stmt.end_lineno or stmt.lineno
            continue
        if _is_setup_call(stmt):
            continue
        if not _is_import_block(stmt):
            break
        end = stmt.end_lineno or stmt.lineno
    return end


def bound_names(tree: ast.AST) -> dict[str, int]:
    """How many times each name is bound anywhere in the module (assignments, parameters, imports...)."""
    counts: dict[str, int] = {}

    def add(name: str) -> None:
        counts[name] = counts.get(name, 0) + 1

    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            add(node.id)
        elif isinstance(node, ast.arg):
            add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                add(a.asname or a.name.split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for n in node.names:
                add(n)
    return counts


@dataclass
class PlanContext:
    """One module's facts for planning fixes; built once per file, on demand."""

    text: str
    tree: ast.Module
    lines: LineIndex
    settings: Settings
    import_bindings: dict[str, str]  # module-level name -> qualified name
    notes: dict[int, str] = field(default_factory=dict)
    _parents: TreeParents | None = field(default=None, repr=False)
    path: str = ""  # the module's path as given to check (fixers may treat test files differently)
    flagged: frozenset[int] = frozenset()  # id() of every node a rule reported in this module
    _walks: dict[int, list] = field(default_factory=dict, repr=False)
    peers: Callable[[str], list | None] | None = field(default=None, repr=False)  # another module's findings

    # ------------------------------------------------------------------ positions and tree
    def span(self, node) -> tuple[int, int, int, int]:
        return self.lines.node_span(node)

    def segment(self, node) -> str:
        return self.lines.segment(node)

    def walk(self, node: ast.AST) -> list[ast.AST]:
        """``node`` and every node under it, in ``ast.walk``'s order. Kept: the fixers of one module
        ask about the same functions and the same tree again for each finding."""
        found = self._walks.get(id(node))
        if found is None:
            found = self._walks[id(node)] = walk_nodes(node)
        return found

    def parent(self, node: ast.AST) -> ast.AST | None:
        if self._parents is None:
            self._parents = TreeParents(self.tree)
        return self._parents.of(node)

    def ancestors(self, node: ast.AST):
        p = self.parent(node)
        while p is not None:
            yield p
            p = self.parent(p)

    def enclosing_call(self, node: ast.AST) -> ast.Call | None:
        """The call whose callee is ``node`` (``node(...)``), if any."""
        parent = self.parent(node)
        if isinstance(parent, ast.Call) and parent.func is node:
            return parent
        return None

    def enclosing_function(self, node: ast.AST) -> ast.AST | None:
        for p in self.ancestors(node):
            if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return p
        return None

    def at_module_level(self, node: ast.AST) -> bool:
        return not any(isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
                       for p in self.ancestors(node))

    def under_main_guard(self, node: ast.AST) -> bool:
        """Is ``node`` in the body of the module's ``if __name__ == "__main__":`` (run, never imported)?"""
        child = node
        for p in self.ancestors(node):
            if isinstance(p, ast.If) and is_main_guard(p) and isinstance(self.parent(p), ast.Module):
                return any(child is s for s in p.body)
            child = p
        return False

    def block_of(self, stmt: ast.stmt) -> list | None:
        """The statement list (body, else or finally block) holding ``stmt``."""
        parent = self.parent(stmt)
        for name in ("body", "orelse", "finalbody"):
            block = getattr(parent, name, None)
            if isinstance(block, list) and any(s is stmt for s in block):
                return block
        return None

    def statement_of(self, node: ast.AST) -> ast.stmt | None:
        if isinstance(node, ast.stmt):
            return node
        for p in self.ancestors(node):
            if isinstance(p, ast.stmt):
                return p
        return None

    # ------------------------------------------------------------------ names
    def qualname(self, node) -> str | None:
        """``torch.cuda.synchronize`` for ``th.cuda.synchronize`` under ``import torch as th`` (and
        through a function's own imports: :mod:`neuron_lint.fixes.function_imports`)."""
        return self._names.qualname(node)

    @cached_property
    def _names(self) -> FunctionImports:
        return FunctionImports(self)

    @cached_property
    def bound(self) -> dict[str, int]:
        return bound_names(self.tree)

    # ------------------------------------------------------------------ the module's device
    @property
    def neuron(self) -> bool:
        return self.settings.device == "neuron"

    @cached_property
    def is_script(self) -> bool:
        """Is this module run rather than imported? (:func:`neuron_lint.fixes.module_kind.is_script`)"""
        from .device_choice import is_test_file

        return is_script(self.tree, self.path, is_test_file(self))

    @cached_property
    def leading_end(self) -> int:
        """Where a module-level definition goes: after the import block, and after the first import of torch."""
        end = leading_block_end(self.tree)
        body = self.tree.body
        for i, stmt in enumerate(body):
            if not binds_torch(stmt):
                continue
            # (the first import of torch: a notebook's later sections import it again, captum's
            # Distributed_Attribution, and its first section needs the definition too)
            if (stmt.end_lineno or stmt.lineno) > end:
                # ... and after the rest of that run of imports (never between two of them)
                j = i
                while j + 1 < len(body) and _is_import_block(body[j + 1]):
                    j += 1
                end = body[j].end_lineno or body[j].lineno
            break
        return end

    @cached_property
    def torch_only_conditionally(self) -> bool:
        """Is torch imported only under ``if``/``try`` at module level (``if is_torch_available():``)?"""
        top = [s for s in self.tree.body if binds_torch(s)]
        return bool(top) and not any(isinstance(s, ast.Import) for s in top)

    @cached_property
    def device_variable(self) -> ast.Assign | None:
        """A module-level ``device = torch.device("cuda")`` (or the ``"cuda" if ... else "cpu"`` form,
        or the idiom itself), which rewritten sites reuse. The name may be bound again at module
        level (``if __name__ == "__main__": DEVICE = ...``), but only to device definitions."""
        for stmt in self.tree.body:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
                continue
            name = stmt.targets[0].id
            if name not in REUSABLE_NAMES or not _is_device_definition(self, stmt.value):
                continue
            definitions = _module_definitions(self, name)
            # a method of the same name is an attribute, not the module's variable (ECCV2022-RIFE's
            # `class Model: def device(self): self.flownet.to(device)`)
            methods = sum(1 for c in ast.walk(self.tree) if isinstance(c, ast.ClassDef) for m in c.body
                          if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name == name)
            if self.bound.get(name, 0) - methods == definitions:
                return stmt
        return None

    @cached_property
    def has_device_helper(self) -> bool:
        """Does the module define the device helper a previous fix added (a module-level
        ``def _current_device():`` without parameters, bound nowhere else)?"""
        return self.bound.get(DEVICE_HELPER, 0) == 1 and any(
            isinstance(s, ast.FunctionDef) and s.name == DEVICE_HELPER and not s.args.args and not s.args.posonlyargs
            for s in self.tree.body)

    @cached_property
    def defined_device(self) -> ast.Assign | None:
        """:attr:`device_variable`, or else a module-level definition functions only shadow (see :func:`_shadowed`)."""
        return self.device_variable or _shadowed(self)

    def in_device_definition(self, node: ast.AST) -> bool:
        stmt = self.defined_device
        return stmt is not None and any(p is stmt for p in self.ancestors(node))

    def device_choice(self, node: ast.AST) -> tuple[dict, str]:
        """How a site at ``node`` names the current device: plan data, or ``({}, why not)``.

        The data says which module-level definition the site relies on and, inside a function
        that already holds the current device in a local variable, that variable's name
        (``local``, :mod:`neuron_lint.fixes.local_device`), which the rewrite uses instead.
        """
        data, why = self._device_definition(node)
        if data and data["device"] != "neuron":
            local = local_device(self, node)
            if local:
                data["local"] = local
        return data, why

    def _device_definition(self, node: ast.AST) -> tuple[dict, str]:
        if self.neuron:
            return {"device": "neuron"}, ""
        stmt = self.device_variable
        at_top = self.at_module_level(node)
        if stmt is not None:
            name = stmt.targets[0].id
            if at_top and node.lineno <= (stmt.end_lineno or stmt.lineno) and not self.in_device_definition(node):
                return {}, f"the site runs before the module's device variable `{name}` is defined"
            return {"device": "var", "name": name}, ""
        if self.is_script and not self.torch_only_conditionally and not picks_visible_devices(self) \
                and not forks_workers(self):
            if not self.bound.get(DEVICE_VAR, 0):
                if at_top and node.lineno <= self.leading_end:
                    return {}, "the site runs among the imports, before a device variable could be defined"
                return {"device": "script"}, ""
            if at_top and node.lineno <= self.leading_end:
                return {}, f"the module already uses the name {DEVICE_VAR} for something else"
            # DEVICE is taken (an attribute, a local, the script's own: Depth-Anything-V2, set 110): a function instead
        elif at_top and not self.under_main_guard(node):
            return {}, ("a library module would probe the device when it is imported; "
                        "pass the device in, or choose it inside a function")
        if self.bound.get(DEVICE_HELPER, 0) and not self.has_device_helper:
            return {}, f"the module already uses the name {DEVICE_HELPER} for something else"
        why = library_device_note(self, node)
        if why:
            return {}, why
        return {"device": "library"}, ""

    def device_or_note(self, hit, node: ast.AST) -> dict | None:
        """:meth:`device_choice` for ``hit``'s site, or None after noting why there is none."""
        data, why = self.device_choice(node)
        if not data:
            self.note(hit, f"not rewritten: {why}")
            return None
        return data

    # ------------------------------------------------------------------ settings and results
    def allows(self, since: str) -> bool:
        """Whether ``--min-torch`` permits emitting an API first released in ``since``."""
        try:
            return version_tuple(self.settings.min_torch) >= version_tuple(since)
        except ValueError:
            return False

    def note(self, hit, text: str) -> None:
        self.notes[id(hit)] = text

    def propose(self, hit, node: ast.AST, kind: str, message: str, data: dict | None = None,
                applicability: str | None = None, fixer: str | None = None) -> Fix:
        """A plan: replace the LibCST node of class ``kind`` at ``node``'s span, with ``data``
        (rewritten by the rule's fixer, or by ``fixer`` when one rule's site is another's rewrite)."""
        from .withheld import withheld

        why = withheld(self, hit, node)
        if why:
            self.note(hit, why)
            return None
        target = (*self.span(node), kind)
        items = tuple(sorted((k, _frozen(v)) for k, v in (data or {}).items()))
        safety = Applicability(applicability or hit.rule.fix.safety).value
        return Fix(safety, (), message, fixer or hit.rule.fix.fixer, target, items)


def _is_device_definition(ctx, value: ast.AST) -> bool:
    """A device definition a rewritten site may reuse (see :attr:`PlanContext.device_variable`)."""
    if isinstance(value, ast.IfExp):  # the idiom: current_accelerator() if is_available() else device("cpu")
        if ctx.qualname(getattr(value.body, "func", None)) == "torch.accelerator.current_accelerator":
            return True
        # torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
        return (ctx.qualname(getattr(value.test, "func", None)) == "torch.cuda.is_available"
                and not getattr(value.test, "args", True) and _is_device_call(ctx, value.body, "cuda")
                and _is_device_call(ctx, value.orelse, "cpu"))
    if not (isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords):
        return False
    if ctx.qualname(value.func) != "torch.device":
        return False
    arg = value.args[0]
    if is_str(arg, "cuda"):
        return True
    if isinstance(arg, ast.IfExp) and is_str(arg.body, "cuda") and is_str(arg.orelse, "cpu"):
        tests = arg.test.values if isinstance(arg.test, ast.BoolOp) and isinstance(arg.test.op, ast.And) else [arg.test]
        return any(ctx.qualname(getattr(t, "func", None)) == "torch.cuda.is_available" for t in tests)
    return False


def _is_device_call(ctx, node: ast.AST, kind: str) -> bool:
    """``torch.device("<kind>")``."""
    return (isinstance(node, ast.Call) and ctx.qualname(node.func) == "torch.device" and len(node.args) == 1
            and not node.keywords and is_str(node.args[0], kind))


def _frozen(value):
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


def dist_alias(ctx) -> str:
    """The name the module binds ``torch.distributed`` to (``dist`` when it has several), or ""."""
    names = sorted(n for n, q in ctx.import_bindings.items() if q == "torch.distributed")
    return "dist" if "dist" in names else (names[0] if names else "")


def _shadowed(ctx) -> ast.Assign | None:
    """A module-level device definition whose name functions only shadow (FastSpeech2's
    ``utils/tools.py``: ``def to_device(data, device)`` beside ``device = torch.device(...)``): its
    value is still the module's device, to be rewritten like any other, though sites in functions
    cannot reuse the name."""
    declared = None  # the names functions declare `global`: a walk of the whole module, done only when needed
    for stmt in ctx.tree.body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id in REUSABLE_NAMES and _is_device_definition(ctx, stmt.value)):
            if declared is None:
                declared = {n for node in ctx.walk(ctx.tree) if isinstance(node, ast.Global) for n in node.names}
            if (stmt.targets[0].id not in declared
                    and _module_bindings(ctx.tree, stmt.targets[0].id) == _module_definitions(ctx, stmt.targets[0].id)):
                return stmt
    return None


def _module_bindings(tree: ast.Module, name: str) -> int:
    """How many times the module's own code (not its functions' or classes') binds ``name``."""
    todo, count = list(tree.body), 0
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            count += getattr(n, "name", None) == name
            continue
        if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load):
            count += 1
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            count += sum((a.asname or a.name.split(".")[0]) == name for a in n.names)
        todo.extend(ast.iter_child_nodes(n))
    return count


def _module_definitions(ctx, name: str) -> int:
    """How many module-level ``name = <device definition>`` statements the module has."""
    return sum(1 for s in module_level(ctx.tree.body) if isinstance(s, ast.Assign) and len(s.targets) == 1
               and isinstance(s.targets[0], ast.Name) and s.targets[0].id == name and _is_device_definition(ctx, s.value))

