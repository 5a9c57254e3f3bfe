"""CUDA-only mixed precision -> ``torch.autocast`` / ``torch.amp.GradScaler`` on the current device.

``torch.cuda.amp.autocast(enabled, dtype, cache_enabled)`` takes its arguments in that order; the
rewrite names them, because ``torch.autocast`` takes the device type first.
"""

from __future__ import annotations

import ast

from . import fixer
from .device_string import device_value_edits
from .statements import delete_statement

_AUTOCAST_POSITIONAL = ("enabled", "dtype", "cache_enabled")


def _autocast(ctx, hit, call: ast.Call):
    if len(call.args) > len(_AUTOCAST_POSITIONAL) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    dev = ctx.device
    edits = [ctx.replace(call.func, ctx.with_alias("torch.autocast"))]
    at = ctx.after_open_paren(call)
    more = bool(call.args or call.keywords)
    edits.append(ctx.edit_at(at, at, dev.type_expr() + (", " if more else "")))
    for name, arg in zip(_AUTOCAST_POSITIONAL, call.args):
        edits.append(ctx.insert_before(arg, f"{name}="))
    return edits + dev.preamble(torch=True)


def _grad_scaler(ctx, hit, call: ast.Call):
    dev = ctx.device
    edits = [ctx.replace(call.func, ctx.with_alias("torch.amp.GradScaler"))]
    at = ctx.after_open_paren(call)
    edits.append(ctx.edit_at(at, at, dev.type_expr() + (", " if call.args or call.keywords else "")))
    return edits + dev.preamble(torch=True)


def _unused_import(ctx, hit):
    """Drop ``from torch.cuda.amp import ...`` once nothing in the module uses the names it binds."""
    stmt = hit.node
    if not isinstance(stmt, ast.ImportFrom):
        return None
    bound = {a.asname or a.name for a in stmt.names}
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Name) and node.id in bound:
            ctx.note(hit, "the import is removed once the uses of the names it binds are rewritten (the next pass of `neuron-lint fix`)")
            return None
    return delete_statement(ctx, stmt)


@fixer("amp")
def fix_amp(ctx, hit):
    m = hit.match
    if m.kind == "imports":
        edits = _unused_import(ctx, hit)
        return ctx.make_fix(hit, edits, "Remove the unused CUDA AMP import")
    if m.kind == "calls":  # torch.autocast("cuda") / device_type="cuda" / torch.amp.GradScaler("cuda")
        if not ctx.device.usable_at(hit.node):
            return None
        return ctx.make_fix(hit, device_value_edits(ctx, hit.node), "Use the current accelerator's device type")
    call = ctx.enclosing_call(hit.node)
    if call is None or not ctx.device.usable_at(call):
        return None
    if hit.subject.endswith(".autocast"):
        edits = _autocast(ctx, hit, call)
        return ctx.make_fix(hit, edits, "Use `torch.autocast` with the current device type")
    if hit.subject.endswith(".GradScaler"):
        return ctx.make_fix(hit, _grad_scaler(ctx, hit, call), "Use `torch.amp.GradScaler` with the current device type")
    return None
