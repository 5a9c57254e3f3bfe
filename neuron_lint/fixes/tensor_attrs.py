"""``x.is_cuda`` -> ``x.device.type == DEVICE.type`` (is the tensor on the current accelerator?)."""

from __future__ import annotations

import ast

from . import fixer

# Parents in which `a == b` needs no parentheses.
_LOOSE = (ast.If, ast.While, ast.IfExp, ast.Assert, ast.BoolOp, ast.Call, ast.keyword, ast.Assign,
          ast.AnnAssign, ast.Return, ast.comprehension, ast.List, ast.Tuple, ast.Expr)


def _attribute_at(ctx, span, attr: str) -> ast.Attribute | None:
    for node in ast.walk(ctx.tree):
        if (isinstance(node, ast.Attribute) and node.attr == attr and node.end_lineno == span.end_lineno
                and node.end_col_offset == span.end_col_offset):
            return node
    return None


@fixer("is_cuda")
def fix_is_cuda(ctx, hit):
    node = hit.node if isinstance(hit.node, ast.Attribute) else _attribute_at(ctx, hit.node, "is_cuda")
    if node is None or not isinstance(node.ctx, ast.Load):
        return None
    dev = ctx.device
    if not dev.usable_at(node):
        return None
    parent = ctx.parent(node)
    loose = isinstance(parent, _LOOSE) or (isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not))
    if isinstance(parent, ast.IfExp) and parent.test is not node:
        loose = False
    _, _, end_line, end_col = ctx.span(node)
    end = ctx.offset(end_line, end_col)
    new = f"device.type == {dev.type_expr()}"
    edits = [ctx.edit_at(end - len("is_cuda"), end, new + ("" if loose else ")"))]
    if not loose:
        edits.append(ctx.insert_before(node, "("))
    return ctx.make_fix(hit, edits + dev.preamble(), "Compare the tensor's device type with the current accelerator's")
