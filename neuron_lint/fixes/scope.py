"""Which device a rewritten site refers to, and the module-level definitions that needs.

With ``--device accelerator`` (the default), in this order:

1. inside a function, a local variable already holding the current device
   (``device = torch.device("cuda")`` or the idiom below, assigned once, before the site);
2. the module's own device variable, when it has one at module level (``device = torch.device("cuda")``;
   its definition is rewritten into the idiom by the NRN202 fix);
3. in a script (a module with a ``__main__`` guard or work at module level): one variable
   ``DEVICE``, defined right after the import block::

       DEVICE = (
           torch.accelerator.current_accelerator()
           if torch.accelerator.is_available()
           else torch.device("cpu")
       )

4. in a library module (anything imported): a small function ``_current_device()``, so that
   importing the module never probes the device.

On a CUDA machine it is the CUDA device, on Trainium ``neuron``, on a CPU-only host the CPU.
With ``--device neuron`` every site gets the plain string ``"neuron"``.
"""

from __future__ import annotations

import re

import libcst as cst

from ..io.notebook import CELL_SEPARATOR
from .decline import Decline
from .line_length import line_length
from .plan import DEVICE_HELPER, DEVICE_VAR
from .quotes import requote

_VARIABLE = """{name} = (
{i}{t}.accelerator.current_accelerator()
{i}if {t}.accelerator.is_available()
{i}else {t}.device("cpu")
)
"""
#: The same definition where it fits the project's line length (ruff format joins the lines there).
_ONE_LINE_VARIABLE = """{name} = {t}.accelerator.current_accelerator() if {t}.accelerator.is_available() else {t}.device("cpu")
"""

_HELPER = '''def {helper}(){returns}:
{i}"""The current accelerator (CUDA, Neuron, ...), or else the CPU."""
{i}if {t}.accelerator.is_available():
{i}{i}return {t}.accelerator.current_accelerator()
{i}return {t}.device("cpu")
'''


def torch_alias(tree: cst.Module) -> str:
    """The name the module binds to ``torch`` at module level (also under ``if``/``try``), or "".
    An ``import torch`` in the ``__main__`` block binds nothing when the module is imported (Latte's
    ``models/clip.py``, which otherwise has only ``import torch.nn as nn``)."""
    found = ""
    body = [s for s in tree.body if not (isinstance(s, cst.If) and _is_main_guard(s))]
    for stmt in _module_level_statements(body):
        for small in getattr(stmt, "body", ()):
            if isinstance(small, cst.Import):
                for alias in small.names:
                    name = _dotted(alias.name)
                    if alias.asname is not None and name == "torch":
                        return alias.asname.name.value if isinstance(alias.asname.name, cst.Name) else found
                    if alias.asname is None and name.split(".")[0] == "torch":
                        found = "torch"
    return found


def imports_torch_conditionally(tree: cst.Module) -> bool:
    """Does the module import from torch only under ``if``/``try`` (composer's ``collect_env``:
    ``try: import torch.utils.collect_env as torchenv ... except ImportError: TORCH_AVAILABLE = False``)?
    Such a module must still import without torch, so no fix may add ``import torch`` to it."""
    conditional = False
    for stmt in tree.body:
        top = isinstance(stmt, cst.SimpleStatementLine)
        for small in (s for line in _module_level_statements([stmt]) for s in getattr(line, "body", ())):
            if isinstance(small, cst.Import):
                hit = any(_dotted(a.name).split(".")[0] == "torch" for a in small.names)
            elif isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
                hit = _dotted(small.module).split(".")[0] == "torch"
            else:
                continue
            if hit and top:
                return False
            conditional = conditional or hit
    return conditional


def _indent_unit(text: str, inferred: str) -> str:
    """The indentation the inserted definitions use: LibCST's (the file's first indented block),
    unless most of the file's indented lines use the other kind (RWKV-v8's layers: one helper in
    tabs, everything else in spaces)."""
    tabs = len(re.findall(r"^\t", text, re.M))
    spaces = len(re.findall(r"^ +\S", text, re.M))
    if "\t" in inferred and spaces > tabs:
        return "    "
    if "\t" not in inferred and tabs > spaces:
        return "\t"
    return inferred


class _Indented(cst.CSTTransformer):
    """Blocks indented with ``indent`` whatever the module's default (KAIR's retinaface detector: one
    line of tabs above, every block in spaces)."""

    def __init__(self, indent: str) -> None:
        super().__init__()
        self.indent = indent

    def leave_IndentedBlock(self, original_node, updated_node):
        return updated_node.with_changes(indent=self.indent)


def _module_level_statements(body):
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            yield stmt
        elif isinstance(stmt, (cst.If, cst.Try)):
            yield from _module_level_statements(stmt.body.body)
            for extra in (getattr(stmt, "orelse", None), getattr(stmt, "finalbody", None)):
                if isinstance(extra, (cst.Else, cst.Finally)):
                    yield from _module_level_statements(extra.body.body)
                elif isinstance(extra, cst.If):
                    yield from _module_level_statements([extra])
            for handler in getattr(stmt, "handlers", ()):
                yield from _module_level_statements(handler.body.body)


def _dotted(node) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


class DeviceDefinitions:
    """The device expressions of one transformation, and the definitions they need."""

    def __init__(self, rx) -> None:
        self.rx = rx
        self.variable = False  # DEVICE = ... is needed
        self.helper = False  # def _current_device(): ... is needed

    def device(self, site: cst.CSTNode, data: dict) -> cst.BaseExpression:
        how = data.get("device")
        if how == "neuron":
            return cst.SimpleString('"neuron"')
        if data.get("local"):  # a local already holding the device (planned on the ast): `device`, `accelerator.device`
            head, *rest = data["local"].split(".")
            node: cst.BaseExpression = cst.Name(head)
            for part in rest:
                node = cst.Attribute(value=node, attr=cst.Name(part))
            return node
        if how == "var":
            return cst.Name(data["name"])
        self.rx.torch_name(None)  # the definition, at module level, uses the module's torch
        if how == "script":
            self.variable = True
            return cst.Name(DEVICE_VAR)
        if how == "library":
            self.helper = True
            return cst.Call(func=cst.Name(DEVICE_HELPER))
        raise Decline("no device was planned for this site")

    # ------------------------------------------------------------------ insertion
    def insert(self, tree: cst.Module) -> cst.Module:
        """Add the definitions the rewrites referred to, right after the import block."""
        if not (self.variable or self.helper):
            return tree
        # a rewrite may ask for the device and then write something else (DDP's `device_ids` test is
        # `torch.accelerator.is_available()` beside the helper): define only what the code now names
        used = _names_used(self.rx.written)
        self.variable, self.helper = self.variable and DEVICE_VAR in used, self.helper and DEVICE_HELPER in used
        t = self.rx.module.torch or "torch"
        indent = _indent_unit(self.rx.module.text, tree.default_indent)
        config = tree.config_for_parsing
        new: list[cst.BaseStatement] = []
        if self.variable and DEVICE_VAR not in _module_names(tree):
            one_line = _ONE_LINE_VARIABLE.format(name=DEVICE_VAR, t=t)
            template = one_line if len(one_line) <= line_length() else _VARIABLE.format(name=DEVICE_VAR, i=indent, t=t)
            new.append(requote(None, cst.parse_statement(template, config=config), lambda: self.rx.module.quote))
        if self.helper and DEVICE_HELPER not in _module_names(tree):
            # annotated for type checkers, unless the annotation would need torch where it may be missing
            returns = "" if imports_torch_conditionally(tree) else f" -> {t}.device"
            helper = cst.parse_statement(_HELPER.format(helper=DEVICE_HELPER, i=indent, t=t, returns=returns),
                                         config=config)
            if indent != tree.default_indent:  # a block without its own indent is printed with the module's
                helper = helper.visit(_Indented(indent))
            new.append(requote(None, helper, lambda: self.rx.module.quote))
        if not new:
            return tree
        body = list(tree.body)
        at = _leading_block_length(body)
        for i, stmt in enumerate(body):  # never above the first import of torch, wherever the file has it
            if _imports_torch(stmt):
                if i + 1 > at:
                    at = i + 1
                    while at < len(body) and _is_import_statement(body[at]):
                        at += 1  # nor inside the run of imports it belongs to (mirrors plan.leading_end)
                break
        # the blank lines the file leaves after its imports (isort's `lines-after-imports`) go
        # before the first definition too, so the import block keeps its spacing
        # (two before a def or class say nothing: PEP 8 asks for them there)
        kept = _blank_lines_before(body[at]) if 0 < at < len(body) and not _is_definition(body[at]) else 0
        # comment lines right under the imports, apart from the statement after them (a commented-out
        # import: `# from pointnet2_ops import pointnet2_utils`), stay with the imports
        head: list = []
        if 0 < at < len(body):
            head, rest = _comments_under_imports(body[at])
            if head:
                body[at] = body[at].with_changes(leading_lines=rest)
        for stmt in new:
            gap = max(2 if isinstance(stmt, cst.FunctionDef) else 1, kept)
            body.insert(at, stmt.with_changes(leading_lines=head + [cst.EmptyLine()] * (gap if at else 0)))
            head = []
            at += 1
        if at < len(body):
            follower = body[at]
            needed = 2 if (isinstance(follower, (cst.FunctionDef, cst.ClassDef)) or isinstance(new[-1], cst.FunctionDef)) else 1
            body[at] = _with_blank_lines(follower, needed)
        if self.variable and isinstance(new[0], cst.SimpleStatementLine) and CELL_SEPARATOR.search(self.rx.module.text):
            body = _again_in_sections(body, at, new[0])
        return tree.with_changes(body=body)


class _UsesDevice(cst.CSTVisitor):
    found = False

    def visit_Name(self, node: cst.Name) -> None:
        self.found = self.found or node.value == DEVICE_VAR


def _again_in_sections(body: list, at: int, definition: cst.SimpleStatementLine) -> list:
    """A notebook whose later cell imports torch again starts a section that may run in a fresh
    kernel (captum's Distributed_Attribution: "restart the kernel before Part 2"): where that section
    uses the device variable, it gets its own definition, after that run of imports."""
    out, i = body[:at], at
    while i < len(body):
        out.append(body[i])
        if not _imports_torch(body[i]):
            i += 1
            continue
        i += 1
        while i < len(body) and _is_import_statement(body[i]):
            out.append(body[i])
            i += 1
        uses = _UsesDevice()
        for stmt in body[i:]:
            stmt.visit(uses)
        if uses.found:
            out.append(definition.with_changes(leading_lines=[cst.EmptyLine()]))
            if i < len(body):
                body[i] = _with_blank_lines(body[i], 1)
    return out


def _is_definition(stmt) -> bool:
    return isinstance(stmt, (cst.FunctionDef, cst.ClassDef))


def _blank_lines_before(stmt) -> int:
    """The empty lines (no comment) a statement starts with, at most 2 (what ruff format keeps)."""
    n = 0
    for line in stmt.leading_lines:
        if line.comment is not None:
            break
        n += 1
    return min(n, 2)


def _imports_torch(stmt) -> bool:
    """A module-level statement that binds ``torch`` (``import torch``, ``import torch.nn``, or one
    under ``if``/``try``), as :func:`neuron_lint.fixes.module_kind.binds_torch` sees it. ``import
    torch.distributed as dist`` binds ``dist``, and the ``__main__`` block runs after the module's
    definitions, so neither counts (diffusers' gligen script imports ``torch.distributed`` there)."""
    if isinstance(stmt, cst.If) and _is_main_guard(stmt):
        return False
    for small in _module_level_statements([stmt]):
        for node in getattr(small, "body", ()):
            if isinstance(node, cst.Import) and any(
                    _dotted(a.name) == "torch" or _dotted(a.name).startswith("torch.") and a.asname is None
                    for a in node.names):
                return True
    return False


def _names_used(written: list[cst.CSTNode]) -> set[str]:
    """Every name in what the fixers wrote (a walk of those nodes only: visiting the whole module
    cost more than its parse)."""
    found: set[str] = set()
    todo = list(written)
    while todo:
        node = todo.pop()
        if isinstance(node, cst.Name):
            found.add(node.value)
        if isinstance(node, cst.CSTNode):  # a removal leaves a sentinel
            todo.extend(node.children)
    return found


def _module_names(tree: cst.Module) -> set[str]:
    names = set()
    for stmt in tree.body:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            names.add(stmt.name.value)
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign):
                    names.update(t.target.value for t in small.targets if isinstance(t.target, cst.Name))
    return names


def _is_docstring(stmt) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def _only_imports(block) -> bool:
    stmts = getattr(getattr(block, "body", None), "body", ())
    return bool(stmts) and all(
        isinstance(s, cst.SimpleStatementLine) and all(isinstance(x, (cst.Import, cst.ImportFrom, cst.Pass)) for x in s.body)
        for s in stmts
    )


def _constant(node) -> bool:
    if isinstance(node, cst.ConcatenatedString):
        return _constant(node.left) and _constant(node.right)
    return isinstance(node, (cst.SimpleString, cst.Integer, cst.Float, cst.Imaginary)) or (
        isinstance(node, cst.Name) and node.value in ("True", "False", "None"))


def _import_or_flag(small) -> bool:
    """What a conditional import's ``try`` may hold (mirrors plan._import_or_flag): imports, ``pass``
    and flags set to a constant (``HAS_APEX = True``)."""
    if isinstance(small, (cst.Import, cst.ImportFrom, cst.Pass)):
        return True
    return (isinstance(small, cst.Assign) and all(isinstance(t.target, cst.Name) for t in small.targets)
            and _constant(small.value))


def _is_main_guard(stmt) -> bool:
    """``if __name__ == "__main__":`` (or any test of ``__name__``)."""
    test = getattr(stmt, "test", None)
    return (isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name) and test.left.value == "__name__")


def _is_import_statement(stmt) -> bool:
    """An import line, or a ``try``/``if`` that only imports (as in the leading block)."""
    if isinstance(stmt, cst.SimpleStatementLine):
        return all(isinstance(x, (cst.Import, cst.ImportFrom)) for x in stmt.body)
    if isinstance(stmt, cst.Try):
        lines = stmt.body.body
        return all(isinstance(s, cst.SimpleStatementLine) and all(_import_or_flag(x) for x in s.body) for s in lines) and any(
            isinstance(x, (cst.Import, cst.ImportFrom)) for s in lines for x in s.body)
    return isinstance(stmt, cst.If) and not _is_main_guard(stmt) and _only_imports(stmt) and (
        stmt.orelse is None or (isinstance(stmt.orelse, cst.Else) and _only_imports(stmt.orelse)))


def _leading_block_length(body: list) -> int:
    """How many statements the docstring and leading import block take, bare calls between its
    imports included (mirrors plan.leading_block_end)."""
    n = end = 1 if body and _is_docstring(body[0]) else 0
    while n < len(body) and (_is_import_statement(body[n]) or _is_setup_call(body[n])):
        n += 1
        if _is_import_statement(body[n - 1]):
            end = n
    return end


def _is_setup_call(stmt) -> bool:
    """A bare call (``matplotlib.use("Agg")``), as plan._is_setup_call."""
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, cst.Call))


def _comments_under_imports(stmt) -> tuple[list, list]:
    """``stmt``'s leading lines split into the comment lines that start them, when a blank line
    parts those from ``stmt``, and the rest; or ``([], lines)``."""
    lines = list(stmt.leading_lines)
    n = 0
    while n < len(lines) and lines[n].comment is not None:
        n += 1
    if n == 0 or n == len(lines):
        return [], lines
    return lines[:n], lines[n:]


def _with_blank_lines(stmt, needed: int):
    """``stmt`` with at least ``needed`` blank lines before its first comment or itself."""
    lines = list(stmt.leading_lines)
    blank = 0
    for line in lines:
        if line.comment is not None:
            break
        blank += 1
    if blank >= needed:
        return stmt
    return stmt.with_changes(leading_lines=[cst.EmptyLine()] * (needed - blank) + lines)
