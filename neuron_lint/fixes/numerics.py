"""Unsafe rewrites for the numerics and compile families: they change what the program computes
or how it is compiled, so they are applied only with ``--unsafe-fixes``.

- ``float32``: ``torch.float64``/``torch.double`` -> ``torch.float32``, ``.double()`` -> ``.float()``,
  ``dtype="float64"`` -> ``dtype="float32"``, ``dtype=float`` -> ``dtype=torch.float32``.
- ``keyword_false``: the keyword argument holding the hit becomes ``False`` (``dynamic=True``).
- ``drop_keyword``: the keyword argument holding the hit is removed (``mode="max-autotune"``).
"""

from __future__ import annotations

import ast
import re

from . import fixer

_DOUBLE_NAMES = {"float64": "float32", "double": "float32", "DoubleTensor": "FloatTensor"}
_QUOTED = re.compile(r"^([a-zA-Z]{0,2})(\"\"\"|'''|\"|')(float64|double)\2$")


def _keyword_of(ctx, hit) -> tuple[ast.Call, ast.keyword] | None:
    call = hit.call
    if call is None:
        return None
    for kw in call.keywords:
        v = kw.value
        if kw.arg is not None and (v.lineno, v.col_offset) <= (hit.node.lineno, hit.node.col_offset) and (
            (hit.node.end_lineno, hit.node.end_col_offset) <= (v.end_lineno, v.end_col_offset)
        ):
            return call, kw
    return None


@fixer("float32")
def fix_float32(ctx, hit):
    node = hit.node
    if isinstance(node, ast.Attribute) and node.attr in _DOUBLE_NAMES:
        _, _, end_line, end_col = ctx.span(node)
        end = ctx.offset(end_line, end_col)
        edits = [ctx.edit_at(end - len(node.attr), end, _DOUBLE_NAMES[node.attr])]
    elif hit.match.kind == "methods" and hit.call is not None and isinstance(hit.call.func, ast.Attribute):
        _, _, end_line, end_col = ctx.span(hit.call.func)
        end = ctx.offset(end_line, end_col)
        edits = [ctx.edit_at(end - len("double"), end, "float")]
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
        m = _QUOTED.match(ctx.segment(node))
        if not m:
            return None
        start = ctx.offset(*ctx.span(node)[:2]) + len(m.group(1)) + len(m.group(2))
        edits = [ctx.edit_at(start, start + len(m.group(3)), "float32")]
    elif isinstance(node, ast.Name) and node.id == "float":
        edits = [ctx.replace(node, ctx.with_alias("torch.float32"))] + ctx.device.preamble(device=False, torch=True)
    else:
        return None
    return ctx.make_fix(hit, edits, "Use float32 (changes precision on every device)")


@fixer("keyword_false")
def fix_keyword_false(ctx, hit):
    found = _keyword_of(ctx, hit)
    if found is None:
        return None
    _, kw = found
    return ctx.make_fix(hit, [ctx.replace(kw.value, "False")], f"Pass `{kw.arg}=False`")


@fixer("drop_keyword")
def fix_drop_keyword(ctx, hit):
    found = _keyword_of(ctx, hit)
    if found is None:
        return None
    call, kw = found
    args = [*call.args, *call.keywords]
    args.sort(key=lambda a: (a.lineno, a.col_offset))
    i = next(j for j, a in enumerate(args) if a is kw)
    kw_start = ctx.offset(*ctx.span(kw)[:2])
    kw_end = ctx.offset(*ctx.span(kw)[2:])
    if i > 0:  # drop ", mode=..." from the end of the previous argument
        start, end = ctx.offset(*ctx.span(args[i - 1])[2:]), kw_end
    elif len(args) > 1:  # first argument: drop "mode=..., " up to the next one
        start, end = kw_start, ctx.offset(*ctx.span(args[1])[:2])
    else:
        start, end = kw_start, kw_end
    if "#" in ctx.text[start:end]:
        return None  # a comment in between: leave it to a person
    return ctx.make_fix(hit, [ctx.edit_at(start, end, "")], f"Remove `{kw.arg}=`")
