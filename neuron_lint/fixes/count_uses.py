"""Where a device count kept in a name decides code, as far as it can be seen.

``num_of_gpus = torch.cuda.device_count()`` then ``for i in range(num_of_gpus):`` (TorchServe's
sanity check: the loop asks each GPU for ``torch.cuda.mem_get_info(i)``) decides that loop as
``range(torch.cuda.device_count())`` does, and ``if n_gpu > 1:`` decides its branch as the count
compared in place does. Those uses make the count a device test, rewritten only with what they
decide (:func:`neuron_lint.fixes.guards.decided_region`); uses of other kinds are left as before
(the count is a number the program passes on).
"""

from __future__ import annotations

import ast

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def count_uses(ctx, call: ast.Call) -> list[tuple[ast.AST, bool]]:
    """What a device count decides code through: ``call`` itself as the ``range()`` of a ``for``,
    or the uses of the name its value is assigned to (in the same function, bound once there) that
    decide code: ``range(name)`` of a ``for``, or ``name`` compared with a number in an ``if``,
    ``while``, ternary or ``assert`` test; each with whether the test holds with no device."""
    if _loop_count(ctx, call):
        return [(call, False)]
    assign = ctx.parent(call)
    if not (isinstance(assign, ast.Assign) and assign.value is call and len(assign.targets) == 1
            and isinstance(assign.targets[0], ast.Name)):
        return []
    scope = ctx.enclosing_function(assign)
    if not isinstance(scope, _FUNCTIONS):
        return []
    from .local_device import bindings

    name = assign.targets[0].id
    if len(list(bindings(scope, name))) != 1:
        return []
    found = []
    for n in ctx.walk(scope):
        if not (isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)):
            continue
        if ctx.enclosing_function(n) is not scope:
            continue  # a nested function reads it later, maybe after a change
        parent = ctx.parent(n)
        if _loop_count(ctx, n):
            found.append((n, False))
        elif (isinstance(parent, ast.Compare) and len(parent.ops) == 1
              and isinstance(ctx.parent(parent), (ast.If, ast.While, ast.IfExp, ast.Assert))
              and ctx.parent(parent).test is parent):
            other = parent.comparators[0] if parent.left is n else parent.left
            if isinstance(other, ast.Constant) and type(other.value) is int:
                found.append((n, counts_no_device(parent, n)))
    return found


def _loop_count(ctx, call: ast.AST) -> bool:
    """``for i in range(<call>):`` (or ``range(0, <call>)``)."""
    rng = ctx.parent(call)
    loop = ctx.parent(rng) if isinstance(rng, ast.Call) else None
    return (isinstance(loop, (ast.For, ast.AsyncFor)) and loop.iter is rng and isinstance(rng.func, ast.Name)
            and rng.func.id == "range" and call in rng.args)


_FLIPPED = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE, ast.Eq: ast.Eq, ast.NotEq: ast.NotEq}


def counts_no_device(compare: ast.Compare, call: ast.AST) -> bool:
    """Whether ``compare`` (the device count against a number) is true when there is no CUDA device:
    ``count == 0``, ``count < 1``, ``0 == count``... (``count >= 2`` is true only with devices)."""
    if len(compare.ops) != 1:
        return False
    op, other = compare.ops[0], compare.comparators[0]
    if compare.left is not call:
        op, other = _FLIPPED.get(type(op), type(op))(), compare.left
    if not (isinstance(other, ast.Constant) and isinstance(other.value, int) and not isinstance(other.value, bool)):
        return False
    n = other.value
    return {ast.Eq: n == 0, ast.LtE: n >= 0, ast.Lt: n >= 1}.get(type(op), False)
