"""Where a fix may not add the ``import torch`` its code needs: a module that computes with another
framework (``import oneflow as torch``, ``import paddle``), a module that imports from torch only
when torch is available, and a module of settings that does not import torch at all."""

from __future__ import annotations

import ast

from .module_kind import imported_modules, module_level

#: Frameworks whose tensors and modules have PyTorch's `.cuda()`, devices and much of its API.
_OTHER_FRAMEWORKS = frozenset({"paddle", "oneflow", "jittor", "megengine", "mindspore", "mxnet", "tensorflow", "jax"})


def torch_import_note(ctx, hit) -> str:
    """Why the module may not gain an ``import torch`` for ``hit``'s fix (the note), or ``""``."""
    other = other_framework(ctx)
    if other:
        return (f"not rewritten: the module computes with `{other}`, not PyTorch (its tensors, modules and "
                "devices are that framework's); the PyTorch code a fix writes, and the `import torch` it needs, "
                "do not belong there")
    if torch_only_under_guard(ctx):
        return ("not rewritten: the module imports from torch only when torch is available (under `try`/`if`) "
                "and binds no `torch`; the fix would need an `import torch` at the top, and the module would "
                "then fail to import without torch")
    if hit.rule.category == "cuda-specific" and settings_module(ctx):
        return ("not rewritten: the module holds settings only (names bound to values, no function or class) and "
                "does not import torch; an `import torch` added for the fix would become one of its settings "
                "(a config loader that keeps every top-level name, as Ask-Anything's, then fails to save it). "
                "Choose the device where the settings are read")
    return ""


def other_framework(ctx) -> str:
    """The framework the module computes with instead of PyTorch, or ``""``: one imported under the
    name ``torch`` (CodeGeeX's ``import oneflow as torch``), or, in a module that imports no torch,
    one of :data:`_OTHER_FRAMEWORKS` (its ``paddle/inference.py``; read set 106)."""
    found = ctx.__dict__.get("_nrn_other_framework")
    if found is None:
        imports = [s for s in ctx.tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
        aliased = next((a.name for s in imports if isinstance(s, ast.Import) for a in s.names
                        if a.asname == "torch" and not _torch_name(a.name)), "")
        names = [a.name for s in imports if isinstance(s, ast.Import) for a in s.names] + [
            s.module or "" for s in imports if isinstance(s, ast.ImportFrom) and not s.level]
        other = "" if any(_torch_name(n) for n in names) else next(
            (n.split(".")[0] for n in names if n.split(".")[0] in _OTHER_FRAMEWORKS), "")
        found = ctx.__dict__["_nrn_other_framework"] = aliased or other
    return found


def settings_module(ctx) -> bool:
    """Is the module a file of settings read by a config loader (Ask-Anything's training configs:
    ``from configs.data import *``, then ``device = "cuda"`` among other names, read set 104): its
    top level only imports, binds names (three or more) to data (literals, ``dict(...)``, names) and
    holds its docstring, and it imports no torch?"""
    found = ctx.__dict__.get("_nrn_settings_module")
    if found is None:
        body = ctx.tree.body
        settings = [s for s in body if isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign))]
        imports = [s for s in body if isinstance(s, (ast.Import, ast.ImportFrom))]
        docstrings = [s for s in body if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)]
        found = ctx.__dict__["_nrn_settings_module"] = (
            len(settings) >= 3 and len(settings) + len(imports) + len(docstrings) == len(body)
            and all(_data(s.value) and all(isinstance(t, ast.Name) for t in _targets(s)) for s in settings)
            and not any(_torch_name(m) for m, level in imported_modules(imports) if not level))
    return found


def _targets(stmt: ast.stmt) -> list:
    return stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]


#: What a setting's value may hold: literals and containers, names and their parts, arithmetic.
_DATA = (ast.Constant, ast.Name, ast.Attribute, ast.Subscript, ast.Slice, ast.List, ast.Tuple, ast.Dict, ast.Set,
         ast.JoinedStr, ast.FormattedValue, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.keyword,
         ast.Starred, ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)


def _data(value: ast.AST | None) -> bool:
    """Is ``value`` data: no call but ``dict(...)``, ``list(...)``, ``tuple(...)`` or ``set(...)``?"""
    return value is not None and all(
        isinstance(n, _DATA) or (isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                                 and n.func.id in ("dict", "list", "tuple", "set")) for n in ast.walk(value))


def _torch_name(module: str) -> bool:
    return module.split(".")[0] == "torch"


def torch_only_under_guard(ctx) -> bool:
    """Does the module import from torch only under ``if``/``try`` without binding ``torch``
    (composer's ``collect_env``: ``try: from torch.cuda import is_available as cuda_available``)?"""
    found = ctx.__dict__.get("_nrn_torch_guarded")
    if found is None:
        top = {id(s) for s in ctx.tree.body}
        guarded = False
        for stmt in module_level(ctx.tree.body):
            if isinstance(stmt, ast.Import):
                names = [a.name for a in stmt.names if a.name.split(".")[0] == "torch"]
                binds = any(a.name.split(".")[0] == "torch" and (a.asname or a.name.split(".")[0]) == "torch"
                            for a in stmt.names)
            elif isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module:
                names = [stmt.module] if stmt.module.split(".")[0] == "torch" else []
                binds = False
            else:
                continue
            if binds or (names and id(stmt) in top):
                guarded = False
                break
            guarded = guarded or bool(names)
        found = ctx.__dict__["_nrn_torch_guarded"] = guarded
    return found
