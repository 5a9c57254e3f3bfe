"""Where ``torch.load`` restores tensors: a ``map_location`` (or a loader's ``location``), given
directly, through a name, or as what a function returns.

It matters for a CUDA device string with an index: written for the current device, ``"cuda:0"``
becomes ``"cpu:0"`` on a CPU-only host, which ``torch.device`` and ``.to()`` accept but ``torch.load``
does not (it knows the CPU only as ``"cpu"``, and raises "don't know how to restore data location").
"""

from __future__ import annotations

import ast


def load_location(ctx, node: ast.AST) -> bool:
    """Is ``node`` (an indexed CUDA device literal) where ``torch.load`` restores tensors: there
    itself, inside ``torch.device(...)``, assigned to a name (or ``self`` attribute) that is one, or
    returned by a function whose calls are one (threestudio's ``get_device()``, the default
    ``map_location`` of its ``load_module_weights``)?"""
    value = node
    parent = ctx.parent(value)
    if isinstance(parent, ast.Call) and ctx.qualname(parent.func) == "torch.device" and parent.args and parent.args[0] is value:
        value, parent = parent, ctx.parent(parent)
    if isinstance(parent, ast.Return):
        function = ctx.enclosing_function(parent)
        return function is not None and any(_held_as_location(ctx, call) for call in _calls_of(ctx, function.name))
    return _held_as_location(ctx, value)


def at_load(ctx, node: ast.AST) -> bool:
    """Is ``node`` itself a ``map_location=`` (a loader's ``location=``) or ``torch.load``'s second argument?"""
    parent = ctx.parent(node)
    if isinstance(parent, ast.keyword):
        return parent.arg in ("map_location", "location")
    return (isinstance(parent, ast.Call) and ctx.qualname(parent.func) == "torch.load"
            and len(parent.args) > 1 and parent.args[1] is node)


def loads_with(ctx, node: ast.AST, name: str) -> bool:
    """Is ``name`` a ``map_location`` in the function (or module) around ``node``: given by keyword,
    or as the second argument of ``torch.load``?"""
    scope = ctx.enclosing_function(node) or ctx.tree
    return any(isinstance(n, ast.Name) and n.id == name and at_load(ctx, n) for n in ctx.walk(scope))


def _held_as_location(ctx, value: ast.AST) -> bool:
    if at_load(ctx, value):
        return True
    parent = ctx.parent(value)
    if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1 and parent.value is value):
        return False
    target = parent.targets[0]
    if isinstance(target, ast.Name):
        return loads_with(ctx, parent, target.id)
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        return any(isinstance(n, ast.Attribute) and n.attr == target.attr and isinstance(n.value, ast.Name)
                   and n.value.id == "self" and at_load(ctx, n) for n in ctx.walk(ctx.tree))
    return False


def _calls_of(ctx, name: str):
    """The calls in the module of a function named ``name`` (by name, or as a method)."""
    for n in ctx.walk(ctx.tree):
        if isinstance(n, ast.Call) and (isinstance(n.func, ast.Name) and n.func.id == name
                                        or isinstance(n.func, ast.Attribute) and n.func.attr == name):
            yield n
