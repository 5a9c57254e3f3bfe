"""Device lists: ``["cuda"] if torch.cuda.is_available() else []`` -> ``[DEVICE.type] if
torch.accelerator.is_available() else []``, planned on the ``ast`` and rewritten with LibCST (the
check and the strings it adds are one rewrite)."""

from __future__ import annotations

import ast

from .decline import Decline
from .device_choice import body_compares, device_data, is_test_file
from .device_forms import convert, cst_literal_kind, is_cuda_value, one_literal


def _list_literals(ctx, arm) -> list | None:
    """The CUDA strings of a device list (``["cuda"]``, ``["cpu"] + ["cuda:0", "cuda:1"]``): each a
    direct element of a list or tuple, one literal each. None when ``arm`` holds anything else."""
    found: list = []
    stack = [arm]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            stack += [node.left, node.right]
        elif isinstance(node, (ast.List, ast.Tuple)):
            for e in node.elts:
                if not (isinstance(e, ast.Constant) and isinstance(e.value, str)):
                    return None
                if is_cuda_value(e.value):
                    if not one_literal(ctx, e):
                        return None
                    found.append(e)
        else:
            return None
    return found


def _loop_of(ctx, node) -> ast.For | None:
    """The ``for`` loop whose iterable holds ``node``."""
    child = node
    for p in ctx.ancestors(node):
        if isinstance(p, (ast.For, ast.AsyncFor)):
            return p if p.iter is child or any(n is node for n in ast.walk(p.iter)) else None
        if isinstance(p, ast.stmt):
            return None
        child = p
    return None


def plan_device_list(ctx, hit, guard: ast.IfExp, arm, negated: bool):
    """``["cuda"] if torch.cuda.is_available() else []`` (a list of devices to run on): the check
    and the strings it adds are one rewrite, ``[DEVICE.type] if torch.accelerator.is_available()
    else []``. On CUDA the list is what it was; on a CPU-only host it is empty as before; on
    Trainium it holds ``"neuron"``. In a test module the tests then run on Trainium too (unsafe)."""
    literals = _list_literals(ctx, arm)
    if not literals or any(id(e) in ctx.flagged for e in literals):
        return None
    other = guard.body if negated else guard.orelse
    if any(isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.split(":")[0] == "cuda"
           for n in ast.walk(other)):
        return None
    loop = _loop_of(ctx, guard)
    if loop is not None and isinstance(loop.target, ast.Name) and body_compares(ctx, hit, loop.body, loop.target.id):
        return None
    data = device_data(ctx, hit, guard, import_ok=is_test_file(ctx))
    if data is None:
        return None
    test = is_test_file(ctx)
    message = "Use the current accelerator in the device list (the availability check goes with it)" + (
        "; the tests then run on Trainium too" if test else "")
    return ctx.propose(hit, guard, "IfExp", message, {**data, "mode": "guard_list", "negated": negated},
                       applicability="unsafe" if test else None, fixer="device_string")


def rewrite_guard_list(rx, original, updated, data):
    """``["cuda"] if torch.cuda.is_available() else []`` -> ``[DEVICE.type] if torch.accelerator.is_available() else []``."""
    import libcst as cst

    negated = data.get("negated", False)
    if not isinstance(updated, cst.IfExp):
        raise Decline("the code here is not the planned device list")

    class _Elements(cst.CSTTransformer):
        def leave_Element(self, original_node, updated_node):
            if cst_literal_kind(updated_node.value) in ("plain", "indexed"):
                return updated_node.with_changes(value=convert(rx, original, updated_node.value, data, False))
            return updated_node

    arm = updated.orelse if negated else updated.body
    new_arm = arm.visit(_Elements())
    if new_arm.deep_equals(arm):
        raise Decline("the device list holds no CUDA string")
    check = cst.Call(func=rx.dotted("torch.accelerator.is_available", original))
    if negated:
        if not isinstance(updated.test, cst.UnaryOperation):
            raise Decline("the code here is not the planned availability check")
        return updated.with_changes(test=updated.test.with_changes(expression=check), orelse=new_arm)
    return updated.with_changes(test=check, body=new_arm)
