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


@fixer("cuda_api")
def fix_cuda_api(ctx, hit):
    entry = hit.rule.fix.map.get(hit.subject)
    if not isinstance(entry, dict):
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
