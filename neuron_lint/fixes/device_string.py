"""Device strings: ``"cuda"``, ``"cuda:1"``, ``f"cuda:{rank}"`` -> the module's current device.

A string stays a string, so code that stores or formats it keeps working: ``"cuda"`` becomes
``DEVICE.type``, ``"cuda:1"`` becomes ``f"{DEVICE.type}:1"`` and ``f"cuda:{rank}"`` becomes
``f"{DEVICE.type}:{rank}"``. With ``--device neuron`` only the word inside the literal changes.
"""

from __future__ import annotations

import ast
import re

from . import fixer

_QUOTE = r'("""|\'\'\'|"|\')'
_PLAIN = re.compile(r"^([rRuU]?)" + _QUOTE + r"cuda(?::(\d+))?\2$")
_FSTRING = re.compile(r"^([fFrR]{1,2})" + _QUOTE + r"cuda:")
_ANY = re.compile(r"^([a-zA-Z]{0,2})" + _QUOTE + r"cuda")


def _is_cpu(node) -> bool:
    return isinstance(node, ast.Constant) and node.value == "cpu"


def _availability_guard(ctx, node) -> ast.IfExp | None:
    """``"cuda" if <...>.is_available() else "cpu"`` around ``node``: the idiom already falls back to the CPU."""
    parent = ctx.parent(node)
    if isinstance(parent, ast.IfExp) and parent.body is node and _is_cpu(parent.orelse):
        test = parent.test
        if isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr == "is_available":
            return parent
    return None


def _first_arg_of_to(ctx, node) -> bool:
    call = ctx.parent(node)
    return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "to"
            and bool(call.args) and call.args[0] is node)


def device_value_edits(ctx, node) -> list | None:
    """Edits turning one CUDA device literal into the module's device idiom, or None."""
    dev = ctx.device
    seg = ctx.segment(node)
    start = ctx.offset(*ctx.span(node)[:2])
    if dev.neuron:
        m = _ANY.match(seg)
        if not m or "b" in m.group(1).lower():
            return None
        at = start + m.end() - 4
        return [ctx.edit_at(at, at + 4, "neuron")]
    if dev.in_definition(node):
        return [dev.definition_edit()] + dev.preamble(device=False, torch=True)
    if isinstance(node, ast.Constant):
        m = _PLAIN.match(seg)
        if not m:
            return None
        quote, index = m.group(2), m.group(3)
        if index is None:
            guard = _availability_guard(ctx, node)
            target = guard if guard is not None else node
            # `.to("cuda")` takes a device as well as a string: `.to(DEVICE)` reads best there.
            expr = dev.expr() if _first_arg_of_to(ctx, target) else dev.type_expr()
            return [ctx.replace(target, expr)] + dev.preamble()
        return [ctx.replace(node, f"f{quote}{{{dev.type_expr()}}}:{index}{quote}")] + dev.preamble()
    if isinstance(node, ast.JoinedStr):
        m = _FSTRING.match(seg)
        if not m or "f" not in m.group(1).lower():
            return None
        at = start + m.end() - 5
        return [ctx.edit_at(at, at + 4, "{" + dev.type_expr() + "}")] + dev.preamble()
    return None


@fixer("device_string")
def fix_device_string(ctx, hit):
    node = hit.node
    if not isinstance(node, (ast.Constant, ast.JoinedStr)):
        return None
    if not ctx.device.usable_at(node):
        ctx.note(hit, f"not rewritten: {ctx.device.why_not()}")
        return None
    edits = device_value_edits(ctx, node)
    return ctx.make_fix(hit, edits, "Use the current accelerator instead of CUDA")
