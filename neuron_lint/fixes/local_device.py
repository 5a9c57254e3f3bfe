"""A local variable that already holds the current device, for a fix inside a function to reuse.

Decided while planning, on the ``ast``: the site's innermost scope must be a function (not a
class body, a lambda or a comprehension) that binds the name exactly once, by a plain
``device = <current device>`` assigned before the site, and declares it neither ``global`` nor
``nonlocal``. Then ``x.cuda()`` becomes ``x.to(device)`` rather than a module-level definition.
Failing that, a function that made ``accelerator = Accelerator(...)`` (Hugging Face Accelerate)
gives ``accelerator.device``, the device that library chose for the process.
"""

from __future__ import annotations

import ast
import re
import weakref

#: Values that make a local variable the current device.
DEVICE_VALUE = re.compile(r"^\w+\.(device\(\s*[\"']cuda[\"']\s*\)|accelerator\.current_accelerator\(\))")
LOCAL_NAMES = ("device",)

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def local_device(ctx, node: ast.AST) -> str:
    """The name of a local of ``node``'s function holding the current device, or ""."""
    fn, child = None, node
    for p in ctx.ancestors(node):
        if isinstance(p, _SCOPES):
            fn = p
            break
        child = p
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not any(s is child for s in fn.body):
        return ""
    for name in LOCAL_NAMES:
        found = list(bindings(fn, name))
        if len(found) != 1 or found[0] is None:
            continue
        stmt = found[0]
        if (stmt.end_lineno or stmt.lineno) >= node.lineno:
            continue
        if DEVICE_VALUE.match(ctx.segment(stmt.value).strip()) or _accelerators_device(ctx, fn, stmt.value):
            return name
    return _accelerate_device(ctx, fn, node)


def _accelerators_device(ctx, fn, value: ast.AST) -> bool:
    """``accelerator.device`` where ``accelerator`` is the module's or the function's one
    ``Accelerator(...)`` (StyleTTS2's ``train_finetune_accelerate.py``: ``accelerator =
    Accelerator()`` at module level, ``device = accelerator.device`` in ``main``)."""
    if not (isinstance(value, ast.Attribute) and value.attr == "device" and isinstance(value.value, ast.Name)):
        return False
    name = value.value.id
    local = list(bindings(fn, name))
    if local:
        stmts = local
    else:  # the module's own: bound once, by a top-level statement
        stmts = [s for s in ctx.tree.body if isinstance(s, ast.Assign) and len(s.targets) == 1
                 and isinstance(s.targets[0], ast.Name) and s.targets[0].id == name]
        if ctx.bound.get(name, 0) != 1:
            return False
    return len(stmts) == 1 and isinstance(stmts[0], ast.Assign) and isinstance(stmts[0].value, ast.Call) \
        and ctx.qualname(stmts[0].value.func) == "accelerate.Accelerator"


def _accelerate_device(ctx, fn, node: ast.AST) -> str:
    """``accelerator.device`` where the function made ``accelerator = Accelerator(...)`` (Hugging
    Face Accelerate, which knows CUDA, the Neuron device and the CPU, and the rank's index) at its
    top level before the site, and binds that name nowhere else; else ""."""
    for stmt in fn.body:
        if (stmt.end_lineno or stmt.lineno) >= node.lineno:
            return ""
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Call) and ctx.qualname(stmt.value.func) == "accelerate.Accelerator"):
            name = stmt.targets[0].id
            if list(bindings(fn, name)) == [stmt]:
                return f"{name}.device"
    return ""


_BINDINGS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # fn -> {name: its bindings}


def bindings(fn, name: str) -> list:
    """:func:`scope_bindings`, kept: each site of a module asks about the same function again."""
    of_fn = _BINDINGS.setdefault(fn, {})
    found = of_fn.get(name)
    if found is None:
        found = of_fn[name] = list(scope_bindings(fn, name))
    return found


def scope_bindings(fn, name: str):
    """Each binding of ``name`` in ``fn``'s own scope: the ``Assign`` for ``name = value``, else None
    (a parameter, another kind of assignment, an import, a nested definition); a ``global`` or
    ``nonlocal`` declaration counts twice, so that the name is never taken for a local."""
    a = fn.args
    for arg in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg):
        if arg is not None and arg.arg == name:
            yield None
    todo = list(fn.body)
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if n.name == name:
                yield None
            todo.extend(n.decorator_list)
            continue
        if isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue  # their own scope (a walrus inside is rare enough to ignore)
        if isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names:
            yield None
            yield None
            continue
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                and n.targets[0].id == name:
            yield n
            todo.append(n.value)
            continue
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store):
            yield None
        elif isinstance(n, (ast.Import, ast.ImportFrom)) and any((al.asname or al.name.split(".")[0]) == name for al in n.names):
            yield None
        elif isinstance(n, ast.ExceptHandler) and n.name == name:
            yield None
        elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name == name:
            yield None
        todo.extend(ast.iter_child_nodes(n))
