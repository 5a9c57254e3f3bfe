"""``backend="nccl"`` -> the backend PyTorch registers for the current device."""

from __future__ import annotations

import ast
import re

from . import fixer
from .device_string import device_value_edits

_NCCL = re.compile(r"^([a-zA-Z]{0,2})(\"\"\"|\'\'\'|\"|\')nccl")


@fixer("distributed")
def fix_distributed(ctx, hit):
    node = hit.node
    keyword = hit.match.arg.keyword if hit.match.arg else None
    dev = ctx.device
    if not isinstance(node, (ast.Constant, ast.JoinedStr)) or not dev.usable_at(node):
        return None
    if keyword == "backend":
        if not (isinstance(node, ast.Constant) and node.value == "nccl"):
            return None
        if dev.neuron:
            m = _NCCL.match(ctx.segment(node))
            if not m:
                return None
            start = ctx.offset(*ctx.span(node)[:2]) + m.end() - 4
            return ctx.make_fix(hit, [ctx.edit_at(start, start + 4, "neuron")], "Use the `neuron` process-group backend")
        if not ctx.allows("2.6"):
            ctx.note(hit, "not rewritten: `get_default_backend_for_device` needs PyTorch 2.6")
            return None
        dist = ctx.alias("torch.distributed") or ctx.with_alias("torch.distributed")
        edits = [ctx.replace(node, f"{dist}.get_default_backend_for_device({dev.expr()})")]
        edits += dev.preamble(torch=dist.endswith("distributed"))
        return ctx.make_fix(hit, edits, "Use the backend registered for the current device")
    if keyword == "device_type":
        return ctx.make_fix(hit, device_value_edits(ctx, node), "Use the current accelerator's device type")
    return None
