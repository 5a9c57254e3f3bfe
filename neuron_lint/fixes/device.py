"""How a module names "the current device" after a fix: one readable idiom per module.

With ``--device accelerator`` (the default) every rewritten site refers to ONE module-level
variable, defined once right after the imports::

    DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")

On a CUDA machine it is ``device(type='cuda')``, on Trainium ``device(type='neuron')``, and on a
CPU-only host ``cpu`` (valid from PyTorch 2.6). If the module already defines a device variable
at module level that is clearly the current CUDA device (``device = torch.device("cuda")``, or the
``"cuda" if torch.cuda.is_available() else "cpu"`` form), that variable is reused and its own
definition becomes the idiom. Function parameters called ``device`` are never reused: a caller can
pass anything.

With ``--device neuron`` sites get the plain string ``"neuron"`` and no variable is defined.
"""

from __future__ import annotations

import ast

from ..model import Edit

IDIOM = '{t}.accelerator.current_accelerator() if {t}.accelerator.is_available() else {t}.device("cpu")'
DEFAULT_NAME = "DEVICE"
REUSABLE_NAMES = ("device", "DEVICE")


def _is_str(node, *values) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in values


def _bound_names(tree: ast.AST) -> dict[str, int]:
    """How many times each name is bound anywhere in the module (assignments, parameters, loops...)."""
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


class DeviceWriter:
    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.neuron = ctx.settings.device == "neuron"
        tree = ctx.tree
        self._leading_end_line, torch_alias = self._leading_block(tree)
        self.needs_torch_import = torch_alias is None
        self.torch_name = torch_alias or "torch"
        self.idiom = IDIOM.format(t=self.torch_name)
        self.blocked = ""  # why no device expression can be written in this module
        self.var = DEFAULT_NAME
        self.var_stmt: ast.Assign | None = None  # the statement defining the reused variable
        self.defined = False  # the idiom is already in the file
        if not self.neuron:
            self._find_variable(tree)

    # ------------------------------------------------------------------ analysis
    def _leading_block(self, tree: ast.Module) -> tuple[int, str | None]:
        """Last line of the module's leading docstring/import block, and the torch alias it binds."""
        end = 0
        alias = None
        for i, stmt in enumerate(tree.body):
            if i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                end = stmt.end_lineno or stmt.lineno
                continue
            if isinstance(stmt, ast.Import):
                for a in stmt.names:
                    if a.asname and a.name == "torch":
                        alias = alias or a.asname
                    elif not a.asname and a.name.split(".")[0] == "torch":
                        alias = "torch"
            elif isinstance(stmt, ast.ImportFrom):
                pass
            elif isinstance(stmt, ast.Try) and all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in stmt.body):
                pass
            else:
                break
            end = stmt.end_lineno or stmt.lineno
        return end, alias

    def _is_idiom(self, value: ast.AST) -> bool:
        try:
            want = ast.parse(self.idiom, mode="eval").body
        except SyntaxError:  # pragma: no cover - the idiom is constant
            return False
        return ast.dump(value) == ast.dump(want)

    def _is_cuda_definition(self, value: ast.AST) -> bool:
        """``torch.device("cuda")`` or ``torch.device("cuda" if <...>.is_available() else "cpu")``."""
        if not (isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords):
            return False
        func = value.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            qual = f"{self.ctx.import_bindings.get(func.value.id)}.{func.attr}"
        elif isinstance(func, ast.Name):
            qual = self.ctx.import_bindings.get(func.id)
        else:
            return False
        if qual != "torch.device":
            return False
        arg = value.args[0]
        if _is_str(arg, "cuda"):
            return True
        if isinstance(arg, ast.IfExp) and _is_str(arg.body, "cuda") and _is_str(arg.orelse, "cpu"):
            test = arg.test
            return isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr == "is_available"
        return False

    def _find_variable(self, tree: ast.Module) -> None:
        counts = _bound_names(tree)
        for stmt in tree.body:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
                continue
            name = stmt.targets[0].id
            if counts.get(name, 0) != 1:
                continue
            if self._is_idiom(stmt.value):
                self.var, self.var_stmt, self.defined = name, stmt, True
                return
            if name in REUSABLE_NAMES and self._is_cuda_definition(stmt.value):
                self.var, self.var_stmt = name, stmt
                return
        if counts.get(DEFAULT_NAME, 0):
            self.blocked = f"the module already uses the name {DEFAULT_NAME} for something else"

    # ------------------------------------------------------------------ queries
    def usable_at(self, node) -> bool:
        """Can a site at ``node`` refer to the device variable (is it defined before the site runs)?"""
        if self.neuron:
            return True
        if self.blocked:
            return False
        line = node.lineno
        if self.var_stmt is not None:
            if isinstance(node, ast.AST) and self.in_definition(node):
                return True
            if isinstance(node, ast.AST) and not self.ctx.at_module_level(node):
                return True  # a function body runs after the module-level definition
            return line > (self.var_stmt.end_lineno or self.var_stmt.lineno)
        return line > self._leading_end_line

    def why_not(self) -> str:
        return self.blocked or "the site runs before the module's device variable is defined"

    def expr(self) -> str:
        """The current device (a torch.device, or ``"neuron"``)."""
        return '"neuron"' if self.neuron else self.var

    def type_expr(self) -> str:
        """The current device's type as a string: ``DEVICE.type`` or ``"neuron"``."""
        return '"neuron"' if self.neuron else f"{self.var}.type"

    def in_definition(self, node: ast.AST) -> bool:
        """Is ``node`` inside the value of the module's reused device variable?"""
        stmt = self.var_stmt
        if stmt is None or self.defined:
            return False
        v = stmt.value
        return (v.lineno, v.col_offset) <= (node.lineno, node.col_offset) and (
            (node.end_lineno, node.end_col_offset) <= (v.end_lineno, v.end_col_offset)
        )

    # ------------------------------------------------------------------ edits
    def preamble(self, device: bool = True, torch: bool = False) -> list[Edit]:
        """The edit defining what the rewritten sites need: ``import torch`` and/or the device variable.

        ``device``: the site refers to the device variable; ``torch``: it refers to the torch module.
        Every fix in a module asks for the same edit, so applying several fixes inserts it once.
        """
        need_device = device and not self.neuron and not self.defined and self.var_stmt is None
        content = ""
        if self.needs_torch_import and (need_device or torch):
            content += "import torch\n"
        if need_device:
            content += f"{self.var} = {self.idiom}\n"
        if not content:
            return []
        return [self._insertion(content)]

    def definition_edit(self) -> Edit:
        """Rewrite the reused variable's value into the idiom."""
        return self.ctx.replace(self.var_stmt.value, self.idiom)

    def _insertion(self, content: str) -> Edit:
        ctx = self.ctx
        if self._leading_end_line:
            line = self._leading_end_line + 1
        else:
            first = ctx.tree.body[0] if ctx.tree.body else None
            line = min([first.lineno, *(d.lineno for d in getattr(first, "decorator_list", ()))]) if first else 1
        if line > len(ctx.lines.lines):
            end = len(ctx.text)
            if ctx.text and not ctx.text.endswith(("\n", "\r")):
                content = "\n" + content
            return ctx.edit_at(end, end, content)
        return Edit(line, 1, line, 1, content)
