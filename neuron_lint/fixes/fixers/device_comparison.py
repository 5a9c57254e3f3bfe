"""NRN211: ``x == "cuda"`` deciding device-specific code -> ``x == DEVICE.type != "cpu"`` (and
``"cuda" in x.type``, which is the same question of a device type).

The new comparison is true exactly when ``x`` names the current accelerator and that is not the
CPU: on a CUDA machine the current accelerator is CUDA, so the answer is the same as before for
every ``x``; on Trainium it is true for ``"neuron"``; on a CPU-only host it is false, as before.
``x != "cuda"`` becomes ``not (x == DEVICE.type != "cpu")``. The comparison is a device guard, so
it is rewritten only with everything it decides (:mod:`neuron_lint.fixes.guards`).
"""

from __future__ import annotations

import ast

from ..guards import decided_region
from ..loss_scalers import decided_autocast


def _subject(cmp: ast.Compare):
    """The compared expression of ``x == "<name>"`` (either way round), and the name; or None."""
    if len(cmp.ops) != 1 or not isinstance(cmp.ops[0], (ast.Eq, ast.NotEq)):
        return None
    left, right = cmp.left, cmp.comparators[0]
    if isinstance(left, ast.Constant) and isinstance(left.value, str):
        left, right = right, left
    if isinstance(right, ast.Constant) and isinstance(right.value, str):
        return ast.dump(left), right.value
    return None


def _dispatched_name(ctx, cmp: ast.Compare) -> str | None:
    """Another accelerator name the same expression is compared with in the ``if``/``elif`` chain
    that ``cmp`` tests, when the CUDA arm holds nothing neuron-lint reports (gpt-neox: ``name ==
    "cuda"`` runs nvidia-smi, ``elif name == "xpu"`` clinfo, ``elif name == "npu"`` npu-smi), or
    None. The CPU is not another accelerator."""
    node = ctx.parent(cmp)
    if not (isinstance(node, ast.If) and node.test is cmp):
        return None
    subject = _subject(cmp)
    if subject is None or any(id(n) in ctx.flagged for stmt in node.body for n in ast.walk(stmt)):
        # an arm whose CUDA code neuron-lint rewrites (timm: `torch.cuda.synchronize()` beside
        # `elif device.type == "npu": torch.npu.synchronize()`) serves every accelerator once rewritten
        return None
    top = node
    while isinstance(ctx.parent(top), ast.If) and ctx.parent(top).orelse == [top]:
        top = ctx.parent(top)
    arm = top
    while isinstance(arm, ast.If):
        found = _subject(arm.test) if isinstance(arm.test, ast.Compare) else None
        if found is not None and found[0] == subject[0] and found[1] not in ("cuda", "cpu", ""):
            return found[1]
        arm = arm.orelse[0] if len(arm.orelse) == 1 else None
    return None


def _in_device_type(cmp: ast.Compare) -> bool:
    """``"cuda" in x.type`` (``not in``): the name of a device type holds ``"cuda"`` only when it is
    ``"cuda"``, so this is ``x.type == "cuda"`` (KPConv's ``if 'cuda' in self.device.type:``)."""
    return (isinstance(cmp.ops[0], (ast.In, ast.NotIn)) and isinstance(cmp.left, ast.Constant)
            and cmp.left.value == "cuda" and isinstance(cmp.comparators[0], ast.Attribute)
            and cmp.comparators[0].attr == "type")


def _arm(ctx, cmp: ast.Compare, negated: bool) -> list:
    """The code that runs where the comparison says CUDA: the body of its ``if`` (the ``else`` when
    negated) or its arm of a conditional expression; ``[]`` elsewhere."""
    parent = ctx.parent(cmp)
    if isinstance(parent, ast.If) and parent.test is cmp:
        return parent.orelse if negated else parent.body
    if isinstance(parent, ast.IfExp) and parent.test is cmp:
        return [parent.orelse if negated else parent.body]
    return []


class DeviceComparison:
    name = "device_comparison"

    def plan(self, ctx, hit):
        cmp = hit.node
        if not (isinstance(cmp, ast.Compare) and len(cmp.ops) == 1
                and (isinstance(cmp.ops[0], (ast.Eq, ast.NotEq)) or _in_device_type(cmp))):
            ctx.note(hit, "not rewritten: only `== \"cuda\"`, `!= \"cuda\"` and `\"cuda\" in x.type` have a "
                          "rewrite; compare `torch.device(x).type` with the current accelerator's type by hand")
            return None
        other = _dispatched_name(ctx, cmp)
        if other is not None:
            ctx.note(hit, f"not rewritten: it is one arm of a choice among device names (`{other}` has its own), "
                          "so the CUDA arm stays CUDA's")
            return None
        negated = isinstance(cmp.ops[0], (ast.NotEq, ast.NotIn))
        region, why = decided_region(ctx, cmp, negated=negated)
        if region is None:
            ctx.note(hit, f"not rewritten: {why}")
            return None
        data = ctx.device_or_note(hit, cmp)
        if data is None:
            return None
        region = region + decided_autocast(ctx, _arm(ctx, cmp, negated)).get("region", [])
        data.update(region=region, negated=negated, cuda_left=isinstance(cmp.left, ast.Constant))
        return ctx.propose(hit, cmp, "Comparison", "Compare with the current accelerator's device type", data)

    def rewrite(self, rx, original, updated, data):
        import libcst as cst

        from ..nodes import string

        other = updated.comparisons[0].comparator if data["cuda_left"] else updated.left
        other = other.with_changes(lpar=[], rpar=[]) if isinstance(other, cst.SimpleString) else other
        if data.get("device") == "neuron":
            right = [cst.ComparisonTarget(cst.Equal(), string("neuron"))]
        else:
            right = [cst.ComparisonTarget(cst.Equal(), rx.device_type(original, data)),
                     cst.ComparisonTarget(cst.NotEqual(), string("cpu"))]
        new = cst.Comparison(left=other, comparisons=right)
        if not data["negated"]:
            return new.with_changes(lpar=updated.lpar, rpar=updated.rpar)
        inner = new.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return cst.UnaryOperation(operator=cst.Not(), expression=inner, lpar=updated.lpar, rpar=updated.rpar)


FIXER = DeviceComparison()
