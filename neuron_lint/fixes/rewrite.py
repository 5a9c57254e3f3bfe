"""Carry out planned fixes with LibCST: one parse, one transformation per pass.

Only files with an applicable fix get here. The module is parsed once (:mod:`.regions`);
positions (to find the node each plan targets) and parents are computed only for the smallest
statements that hold a target, each on its own, and only those statements are visited: an
:class:`_Apply` transformer hands each targeted node to its fixer's ``rewrite``. Scopes (what is
bound where) are computed for the whole module, and only when a fixer asks. The imports the
rewrites need are then added, and those they left unused removed, by LibCST's own
``AddImportsVisitor`` and ``RemoveImportsVisitor``; last come the module-level definitions of the
device (:mod:`neuron_lint.fixes.scope`).

:func:`rewrite` gives the new text of a module with every given plan carried out;
:func:`with_edits` gives each finding the minimal text edits of its fix alone (JSON, SARIF).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field, replace

import libcst as cst
from libcst.helpers import parse_template_expression

from ..config.settings import Settings
from ..model import Finding
from . import load_fixer
from .decline import Decline
from .edits import minimal_edits
from .nodes import attribute
from .quotes import requote
from .regions import Module
from .removed_comments import is_emptied, keep_comments
from .scope import DeviceDefinitions


@dataclass
class Rewritten:
    text: str
    applied: list[Finding] = field(default_factory=list)
    declined: dict[int, str] = field(default_factory=dict)  # index into the findings given -> why


class RewriteContext:
    """What a fixer's ``rewrite`` may use: metadata of the original nodes, names, imports, the device.

    One per transformation: it collects the imports and module-level definitions the rewrites
    ask for, and :meth:`finish` adds them.
    """

    def __init__(self, module: Module, settings: Settings) -> None:
        self.module = module
        self.region = module.region(None)  # set to the statement being transformed
        self.settings = settings
        self._codemod = None
        self.definitions = DeviceDefinitions(self)
        self._needs_torch = False
        self.written: list[cst.CSTNode] = []  # what the fixers wrote, for the names it uses

    @property
    def codemod(self):
        """The ``CodemodContext`` that LibCST's import helpers collect their requests in. Made (and
        ``libcst.codemod`` imported: half a second, most of it ``libcst.matchers``) only for a
        rewrite that adds or removes an import."""
        if self._codemod is None:
            from libcst.codemod import CodemodContext

            self._codemod = CodemodContext()
        return self._codemod

    # ------------------------------------------------------------------ metadata
    def position(self, node: cst.CSTNode):
        return self.region.position(node)

    def scope(self, node: cst.CSTNode):
        """The scope of ``node``, the whole module analysed (computed the first time it is asked for)."""
        return self.module.scopes.get(node)

    def parent(self, node: cst.CSTNode):
        return self.region.parents.get(node)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.tree.code_for_node(node)

    # ------------------------------------------------------------------ names and imports
    def torch_name(self, site: cst.CSTNode | None = None) -> str:
        """How this module spells ``torch``; schedules ``import torch`` where nothing binds it."""
        if self.module.torch:
            return self.module.torch
        scope = self.scope(site) if site is not None else None
        if scope is not None and "torch" in scope:
            return "torch"  # imported inside the function
        local = _local_torch_alias(scope)
        if local:
            return local  # `import torch as th` inside the function (denoiser's executor, set 68)
        if not self._needs_torch:
            from libcst.codemod.visitors import AddImportsVisitor

            from .scope import imports_torch_conditionally

            if imports_torch_conditionally(self.module.tree):
                raise Decline("the module imports torch only when it is available (under `try`/`if`); an "
                              "`import torch` added at the top would make it fail to import without torch")

            self._needs_torch = True
            AddImportsVisitor.add_needed_import(self.codemod, "torch")
        return "torch"

    def dotted(self, qualified: str, site: cst.CSTNode | None = None) -> cst.BaseExpression:
        """``torch.accelerator.synchronize`` as an expression, written with the module's torch alias."""
        head, _, rest = qualified.partition(".")
        if head == "torch":
            head = self.torch_name(site)
        node: cst.BaseExpression = cst.Name(head)
        for part in rest.split(".") if rest else ():
            node = attribute(node, part)
        return node

    def expression(self, template: str, **nodes) -> cst.BaseExpression:
        """An expression from a fixed template whose ``{holes}`` are LibCST nodes."""
        return parse_template_expression(template, config=self.module.tree.config_for_parsing, **nodes)

    def remove_import_if_unused(self, module: str, obj: str | None = None, asname: str | None = None) -> None:
        from libcst.codemod.visitors import RemoveImportsVisitor

        RemoveImportsVisitor.remove_unused_import(self.codemod, module, obj, asname)

    # ------------------------------------------------------------------ the device
    def device(self, site: cst.CSTNode, data: dict) -> cst.BaseExpression:
        """The current device at ``site`` (a ``torch.device``, or ``"neuron"``)."""
        return self.definitions.device(site, data)

    def device_type(self, site: cst.CSTNode, data: dict) -> cst.BaseExpression:
        """The current device's type as a string expression: ``DEVICE.type`` or ``"neuron"``."""
        dev = self.device(site, data)
        if isinstance(dev, cst.SimpleString):
            return dev
        return attribute(dev, "type")

    def on_an_accelerator(self, dev_type: cst.BaseExpression, site: cst.CSTNode, quote: str = '"') -> cst.BaseExpression:
        """``<device type> != "cpu"``: is the current device an accelerator? For the library helper's
        ``_current_device().type`` that is ``torch.accelerator.is_available()``, the same answer
        without a second call of the helper in one expression."""
        from .nodes import string
        from .plan import DEVICE_HELPER

        value = dev_type.value if isinstance(dev_type, cst.Attribute) else None
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == DEVICE_HELPER:
            return cst.Call(func=self.dotted("torch.accelerator.is_available", site))
        return cst.Comparison(left=dev_type.deep_clone(), comparisons=[cst.ComparisonTarget(
            operator=cst.NotEqual(), comparator=string("cpu", quote))])

    # ------------------------------------------------------------------ the end
    def finish(self, tree: cst.Module) -> cst.Module:
        if self._codemod is not None:  # an import to add or remove
            from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor

            from .import_order import place_added_from_imports, sorted_torch_import
            from .imports import TopLevelAddImports, remove_unused_imports

            scratch = self._codemod.scratch
            if scratch.get(AddImportsVisitor.CONTEXT_KEY):
                before, tree = tree, TopLevelAddImports(self._codemod).transform_module(tree)
                if self._needs_torch:
                    tree = sorted_torch_import(tree, self.module.tree)
                tree = place_added_from_imports(tree, before)
            if scratch.get(RemoveImportsVisitor.CONTEXT_KEY):
                tree = remove_unused_imports(self._codemod, tree, self.module.code_of(tree))
        return self.definitions.insert(tree)


class _Apply(cst.CSTTransformer):
    """Find the node each plan targets (the smallest node of its class containing its span) and
    hand it to the fixer, bottom-up, so rewrites of nested nodes compose."""

    def __init__(self, rx: RewriteContext, findings: list[Finding]) -> None:
        super().__init__()
        self.rx = rx
        self.findings = findings
        # node class name -> sorted [(start, end, index)], positions as (line, 0-based column)
        self.by_kind: dict[str, list[tuple[tuple[int, int], tuple[int, int], int]]] = {}
        for i, f in enumerate(findings):
            line, col, end_line, end_col, kind = f.fix.target
            self.by_kind.setdefault(kind, []).append(((line, col - 1), (end_line, end_col - 1), i))
        for entries in self.by_kind.values():
            entries.sort()
        self.best: dict[int, cst.CSTNode] = {}
        self.applied: list[int] = []
        self.declined: dict[int, str] = {}
        self.removed: set[int] = set()  # statements removed, whose comment lines go to the next one

    def _containing(self, node: cst.CSTNode):
        entries = self.by_kind.get(type(node).__name__)
        if not entries:
            return ()
        r = self.rx.position(node)
        if r is None:
            return ()
        start, end = (r.start.line, r.start.column), (r.end.line, r.end.column)
        lo = bisect.bisect_left(entries, (start,))
        hi = bisect.bisect_right(entries, (end, (1 << 62, 0), 1 << 62))
        return [i for s, e, i in entries[lo:hi] if e <= end]

    def on_visit(self, node: cst.CSTNode) -> bool:
        for i in self._containing(node):
            self.best[i] = node  # visited outside-in: a later (inner) node is smaller
        return True

    def on_leave(self, original_node, updated_node):
        updated = super().on_leave(original_node, updated_node)
        done_here = None
        for i in self._containing(original_node):
            if self.best.get(i) is not original_node or i in self.applied or i in self.declined:
                continue
            f = self.findings[i]
            if done_here is not None:  # one fix per node per pass; the next pass retries on the new text
                same = (f.fix.fixer, f.fix.target, f.fix.data) == (done_here.fixer, done_here.target, done_here.data)
                if same:  # two findings, one fix (a guard removed with the duplicate seed it guards)
                    self.applied.append(i)
                continue
            try:
                new = load_fixer(f.fix.fixer).rewrite(self.rx, original_node, updated, dict(f.fix.data))
            except Decline as exc:
                self.declined[i] = str(exc)
                continue
            except Exception as exc:  # a bug in one fixer must not cost the file its other fixes
                self.declined[i] = f"internal error in fixer {f.fix.fixer}: {type(exc).__name__}: {exc}"
                continue
            if new is None:
                continue
            updated = requote(updated, new, lambda: self.rx.module.quote)
            self.rx.written.append(updated)
            done_here = f.fix
            self.applied.append(i)
        if is_emptied(original_node, updated):
            self.removed.add(id(original_node))
        return keep_comments(original_node, updated, self.removed)


def _transform(module: Module, findings: list[Finding], settings: Settings) -> tuple[str, _Apply]:
    rx = RewriteContext(module, settings)
    apply = _Apply(rx, findings)
    paths = module.paths_of(f.fix.target for f in findings)
    if paths is None:
        tree = module.tree.visit(apply)
    else:  # only the statements that hold a target are visited, each with its own metadata
        def visit(path, stmt):
            rx.region = module.region(path)
            return stmt.visit(apply)

        tree = module.rebuilt(paths, visit)
        if not apply.applied:
            return module.text, apply
        tree = rx.finish(tree)
        return module.code_of(tree), apply
    if apply.applied:
        tree = rx.finish(tree)
    return tree.code, apply


_LAST: list = [None, None]  # the text last rewritten and its Module: a pass that retries a subset reuses it


def _parsed(text: str) -> Module | None:
    """:func:`parse`, once per text: within one pass of ``fix`` the same text is rewritten again
    with fewer fixes when some are dropped (too long, or breaking the code)."""
    if _LAST[0] is not None and _LAST[0] == text:
        return _LAST[1]
    module = parse(text)
    _LAST[0], _LAST[1] = text, module
    return module


def forget() -> None:
    """Let go of the module kept by :func:`_parsed` (at the end of a file's fix)."""
    _LAST[0] = _LAST[1] = None


def parse(text: str) -> Module | None:
    """The LibCST module of ``text``, or None when LibCST cannot read it (the file is left as it is)."""
    try:
        return Module(text)
    except (cst.ParserSyntaxError, RecursionError, MemoryError, ValueError):
        return None


def rewrite(text: str, findings: list[Finding], settings: Settings) -> Rewritten:
    """``text`` with the planned fixes of ``findings`` carried out (one LibCST pass)."""
    findings = [f for f in findings if f.fix is not None and f.fix.fixer and f.fix.target]
    if not findings:
        return Rewritten(text)
    module = _parsed(text)
    if module is None:
        return Rewritten(text, declined={i: "LibCST cannot parse this file" for i in range(len(findings))})
    new, apply = _transform(module, findings, settings)
    return Rewritten(new, [findings[i] for i in apply.applied], apply.declined)


def rewrite_greedily(text: str, findings: list[Finding], settings: Settings, accept) -> Rewritten:
    """The largest prefix-greedy set of ``findings`` whose joint rewrite ``accept(new_text)`` allows.

    Fixes are tried one at a time in file order, each together with those already kept; the module
    is parsed once. Used when every fix is fine alone but some together are not (a line grown past
    the project's line length by two rewrites).
    """
    findings = [f for f in findings if f.fix is not None and f.fix.fixer and f.fix.target]
    module = parse(text)
    if module is None or not findings:
        return Rewritten(text)
    kept: list[Finding] = []
    best = text
    for f in sorted(findings, key=lambda f: f.fix.target[:4]):
        new, apply = _transform(module, kept + [f], settings)
        if len(apply.applied) == len(kept) + 1 and accept(new):
            kept.append(f)
            best = new
    return Rewritten(best, kept)


#: Up to this many fixes in one file, each fix's edits are computed on their own (one transformation
#: each); above it, from one transformation of them all (linear time, see :func:`_joint_edits`).
ALONE_LIMIT = 16


def with_edits(text: str, findings: list[Finding], settings: Settings, module: Module | None = None) -> list[Finding]:
    """The findings, each planned fix given the minimal edits it makes on its own.

    A plan the concrete tree refuses loses its fix (and gets the reason as its note). ``module``:
    :func:`parse` of ``text``, when the caller keeps it (the language server, one per document text).
    """
    planned = [i for i, f in enumerate(findings) if f.fix is not None and f.fix.fixer and f.fix.target]
    if not planned:
        return findings
    if module is None:
        module = _parsed(text)  # kept: `passes.advertised` may rewrite the same text next
    if module is not None and len(planned) > ALONE_LIMIT:
        return _joint_edits(text, module, findings, planned, settings)
    out = list(findings)
    for i in planned:
        f = findings[i]
        if module is None:
            out[i] = replace(f, fix=None, fix_note="not rewritten: LibCST cannot parse this file")
            continue
        new, apply = _transform(module, [f], settings)
        if not apply.applied:
            why = apply.declined.get(0, "the rewrite did not apply to this code")
            out[i] = replace(f, fix=None, fix_note=f"not rewritten: {why}")
            continue
        out[i] = replace(f, fix=replace(f.fix, edits=minimal_edits(text, new)))
    return out


def _joint_edits(text: str, module: Module, findings: list[Finding], planned: list[int], settings: Settings) -> list[Finding]:
    """Edits for many fixes from one transformation of them all.

    Each changed span goes to the fix whose target holds it; a span outside every target (an
    import, the device definition) goes to the first fix in the file that was applied, so applying
    every fix's edits gives exactly what ``fix`` writes. A fix the tree refused, or one that shares
    its node with another fix in this pass, gets edits of its own the slow way.
    """
    wanted = [findings[i] for i in planned]
    new, apply = _transform(module, wanted, settings)
    out = list(findings)
    applied = set(apply.applied)
    spans = {k: f.fix.target[:4] for k, f in enumerate(wanted)}
    owned: dict[int, list] = {k: [] for k in applied}
    shared: list = []
    for edit in minimal_edits(text, new):
        start, end = (edit.line, edit.col), (edit.end_line, edit.end_col)
        owner = next((k for k in sorted(applied, key=lambda k: spans[k])
                      if (spans[k][0], spans[k][1]) <= start and end <= (spans[k][2], spans[k][3])), None)
        (owned[owner] if owner is not None else shared).append(edit)
    first = min(applied, key=lambda k: spans[k], default=None)
    if first is not None:
        owned[first] = sorted(owned[first] + shared, key=lambda e: (e.line, e.col))
    for k, i in enumerate(planned):
        f = findings[i]
        if k in applied:
            out[i] = replace(f, fix=replace(f.fix, edits=tuple(owned[k])))
            continue
        alone, one = _transform(module, [f], settings)
        if not one.applied:
            why = one.declined.get(0, "the rewrite did not apply to this code")
            out[i] = replace(f, fix=None, fix_note=f"not rewritten: {why}")
        else:
            out[i] = replace(f, fix=replace(f.fix, edits=minimal_edits(text, alone)))
    return out


def _local_torch_alias(scope) -> str:
    """The name a function (or one around it) binds with ``import torch as <name>``, or ``""``."""
    from libcst.metadata import GlobalScope

    while scope is not None and not isinstance(scope, GlobalScope):
        for assignment in scope.assignments:
            node = getattr(assignment, "node", None)
            if isinstance(node, cst.Import) and any(
                    alias.evaluated_name == "torch" and alias.evaluated_alias == assignment.name
                    for alias in node.names):
                return assignment.name
        scope = scope.parent
    return ""

