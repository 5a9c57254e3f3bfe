"""``torch.cuda.X`` -> its device-agnostic equivalent (``torch.accelerator.X``, ``torch.Stream``, ...).

The rule's ``[fix.map]`` says, per qualified name, the ``target``, the PyTorch release that
introduced it (``since``; gated by ``--min-torch``), an optional ``args`` constraint and an
optional ``safety`` that overrides the rule's.
"""

from __future__ import annotations

import ast

from . import fixer
from .cuda_call import looks_like_index

#: args constraint -> (max positional args, allowed keywords or None for any)
_ARG_RULES = {
    "none": (0, frozenset()),
    "stream": (0, frozenset({"priority"})),
    "event": (0, frozenset({"enable_timing", "blocking", "interprocess"})),
    "index": (1, frozenset()),
}


def _args_fit(ctx, call: ast.Call | None, rule: str) -> bool:
    if rule == "any":
        return True
    if call is None:
        return False
    max_pos, kws = _ARG_RULES[rule]
    if len(call.args) > max_pos or any(isinstance(a, ast.Starred) for a in call.args):
        return False
    if any(k.arg is None or k.arg not in kws for k in call.keywords):
        return False
    if rule == "index" and call.args:
        a = call.args[0]
        return (isinstance(a, ast.Constant) and a.value is None) or looks_like_index(ctx, a)
    return True


def _qualname(ctx, node) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in ctx.import_bindings:
        return None
    return ".".join([ctx.import_bindings[node.id], *reversed(parts)])


def _guarded_region(ctx, node) -> list:
    """What a `torch.cuda.is_available()` guard protects: the rest of its condition and its body."""
    call = ctx.enclosing_call(node) or node
    child, parent = call, ctx.parent(call)
    while parent is not None:
        if isinstance(parent, ast.BoolOp):
            region = [v for v in parent.values if v is not child]
            outer = _guarded_region(ctx, parent)
            return region + outer
        if isinstance(parent, (ast.If, ast.While)) and parent.test is child:
            return [*parent.body]
        if isinstance(parent, ast.IfExp) and parent.test is child:
            return [parent.body]
        if isinstance(parent, ast.UnaryOp):  # `not torch.cuda.is_available()` guards the other branch
            return []
        if not isinstance(parent, (ast.Call,)) or parent is not call:
            return []
        child, parent = parent, ctx.parent(parent)
    return []


def _unfixed_cuda_uses(ctx, hit) -> list[str]:
    """CUDA-only names a guard protects that no fix (at this --min-torch) rewrites."""
    fmap = hit.rule.fix.map
    left = []
    for top in _guarded_region(ctx, hit.node):
        for node in ast.walk(top):
            if isinstance(node, (ast.Attribute, ast.Name)) and not isinstance(ctx.parent(node), ast.Attribute):
                qual = _qualname(ctx, node)
                if qual and qual.startswith("torch.cuda."):
                    entry = fmap.get(qual)
                    if not (isinstance(entry, dict) and ctx.allows(entry.get("since", "2.6"))):
                        left.append(qual)
    return sorted(set(left))


@fixer("cuda_api")
def fix_cuda_api(ctx, hit):
    entry = hit.rule.fix.map.get(hit.subject)
    if not isinstance(entry, dict):
        return None
    if hit.subject == "torch.cuda.is_available":
        left = _unfixed_cuda_uses(ctx, hit)
        if left:
            ctx.note(hit, f"not rewritten: the code this guards still calls `{left[0]}`, which has no rewrite here; "
                          "change that first, or the guard would let it run on Trainium")
            return None
    target, since = entry["target"], entry.get("since", "2.6")
    if not ctx.allows(since):
        ctx.note(hit, f"not rewritten: `{target}` needs PyTorch {since} and --min-torch is {ctx.settings.min_torch}; "
                      f"pass --min-torch {since} (TorchNeuron itself needs 2.13) to get the rewrite")
        return None
    call = ctx.enclosing_call(hit.node)
    if not _args_fit(ctx, call, entry.get("args", "any")):
        ctx.note(hit, f"not rewritten: these arguments do not carry over to `{target}` unchanged")
        return None
    edits = [ctx.replace(hit.node, ctx.with_alias(target))] + ctx.device.preamble(device=False, torch=True)
    return ctx.make_fix(hit, edits, f"Use `{target}`", entry.get("safety"))
