"""``f(..., dynamic=True)`` -> ``f(..., dynamic=False)``: the keyword argument holding the hit becomes ``False``.

Planned on the call (the ast ``keyword`` that contains the hit); carried out on the LibCST ``Call``
by replacing that argument's value, so its comma, spacing and any comment around it stay.
"""

from __future__ import annotations

import ast
import io
import tokenize


def module_comments(ctx) -> list[tuple[int, int, str]]:
    """Every comment of the module as (line, 1-based character column, text); computed once per file."""
    found = ctx.__dict__.get("_nrn_comments")
    if found is None:
        found = []
        try:
            for tok in tokenize.generate_tokens(io.StringIO(ctx.text).readline):
                if tok.type == tokenize.COMMENT:
                    found.append((tok.start[0], tok.start[1] + 1, tok.string))
        except (tokenize.TokenError, SyntaxError, IndentationError):
            pass
        ctx.__dict__["_nrn_comments"] = found
    return found


def comment_between(ctx, start: tuple[int, int], end: tuple[int, int]) -> bool:
    """Is there a comment from ``start`` to ``end`` ((line, 1-based column) pairs, as ``ctx.span`` gives)?"""
    return any(start <= (line, col) < end for line, col, _ in module_comments(ctx))


def keyword_holding(call: ast.Call | None, node) -> ast.keyword | None:
    """The named keyword argument of ``call`` whose value contains ``node`` (an ast node or span)."""
    if call is None:
        return None
    start = (node.lineno, node.col_offset)
    end = (node.end_lineno, node.end_col_offset)
    for kw in call.keywords:
        v = kw.value
        if kw.arg is not None and (v.lineno, v.col_offset) <= start and end <= (v.end_lineno, v.end_col_offset):
            return kw
    return None


def find_arg(call, name: str):
    """The LibCST ``Arg`` passed as ``name=``, and its index, or (None, -1)."""
    for i, arg in enumerate(call.args):
        if arg.keyword is not None and arg.keyword.value == name:
            return arg, i
    return None, -1


class KeywordFalse:
    name = "keyword_false"

    def plan(self, ctx, hit):
        kw = keyword_holding(hit.call, hit.node)
        if kw is None:
            return None
        if isinstance(kw.value, ast.Constant) and kw.value.value is False:
            return None
        line, col, end_line, end_col = ctx.span(kw.value)
        if comment_between(ctx, (line, col), (end_line, end_col)):
            ctx.note(hit, f"not rewritten: a comment inside the value of `{kw.arg}=` would be lost; change it by hand")
            return None
        return ctx.propose(hit, hit.call, "Call", f"Pass `{kw.arg}=False`", {"keyword": kw.arg})

    def rewrite(self, rx, original, updated, data):
        import libcst as cst

        from ..rewrite import Decline

        arg, i = find_arg(updated, data["keyword"])
        if arg is None:
            raise Decline(f"the call no longer passes `{data['keyword']}=`")
        import libcst.matchers as m

        if m.findall(arg.value, m.Comment()):
            raise Decline(f"a comment inside the value of `{data['keyword']}=` would be lost; change it by hand")
        args = list(updated.args)
        args[i] = arg.with_changes(value=cst.Name("False"))
        return updated.with_changes(args=args)


FIXER = KeywordFalse()
