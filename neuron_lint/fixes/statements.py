"""Remove a whole statement (a CUDA-only flag line), keeping the code around it valid."""

from __future__ import annotations

import ast

from . import fixer


def _body_of(ctx, stmt):
    parent = ctx.parent(stmt)
    if parent is None:
        return None, None
    for name in ("body", "orelse", "finalbody", "handlers"):
        body = getattr(parent, name, None)
        if isinstance(body, list) and any(s is stmt for s in body):
            return parent, body
    return parent, None


def delete_statement(ctx, stmt: ast.stmt):
    """Edits deleting the lines of ``stmt``, or replacing it with ``pass`` when it is alone in a block.

    None when the statement shares a line with other code (``a = 1; stmt``) or is not in a block.
    """
    parent, body = _body_of(ctx, stmt)
    if body is None:
        return None
    text = ctx.text
    line, col, end_line, end_col = ctx.span(stmt)
    line_start = ctx.offset(line, 1)
    start, end = ctx.offset(line, col), ctx.offset(end_line, end_col)
    if text[line_start:start].strip():
        return None
    eol = end
    while eol < len(text) and text[eol] not in "\r\n":
        eol += 1
    rest = text[end:eol].strip()
    if rest and not rest.startswith("#"):
        return None
    if len(body) == 1 and not isinstance(parent, ast.Module):
        return [ctx.edit_at(start, end, "pass")]
    if eol < len(text):
        eol += 2 if text.startswith("\r\n", eol) else 1
    return [ctx.edit_at(line_start, eol, "")]


@fixer("remove_statement")
def fix_remove_statement(ctx, hit):
    """Remove ``torch.backends.cudnn.benchmark = True`` or ``torch.backends.cuda.enable_flash_sdp(True)``."""
    node = hit.node
    parent = ctx.parent(node)
    stmt = None
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and parent.targets[0] is node:
        stmt = parent
    elif isinstance(parent, ast.Call) and parent.func is node:
        grand = ctx.parent(parent)
        if isinstance(grand, ast.Expr):
            stmt = grand
    if stmt is None:
        return None
    edits = delete_statement(ctx, stmt)
    return ctx.make_fix(hit, edits, "Remove the CUDA-only setting")
