"""Where a fix may not add the ``import torch`` its code needs: a module that imports from torch only
when torch is available, and a module of settings that does not import torch at all."""

from __future__ import annotations

import ast

from .module_kind import module_level


def torch_import_note(ctx, hit) -> str:
    """Why the module may not gain an ``import torch`` for ``hit``'s fix (the note), or ``""``."""
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


def settings_module(ctx) -> bool:
    """Is the module a file of settings read by a config loader (Ask-Anything's training configs:
    ``from configs.data import *``, then ``device = "cuda"`` among other names, read set 104): its
    top level only imports, binds names (three or more) to data (literals, ``dict(...)``, names) and
    holds its docstring, and it imports no torch?"""
    found = ctx.__dict__.get("_nrn_settings_module")
    if found is None:
        body = ctx.tree.body
        settings = [s for s in body if isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign))]
        found = ctx.__dict__["_nrn_settings_module"] = len(settings) >= 3 and all(
            isinstance(s, (ast.Import, ast.ImportFrom)) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
            or (s in settings and _data(s.value) and all(isinstance(t, ast.Name) for t in _targets(s))) for s in body) and not any(
            _torch_name(a.name) for s in body if isinstance(s, ast.Import) for a in s.names) and not any(
            _torch_name(s.module or "") and not s.level for s in body if isinstance(s, ast.ImportFrom))
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
