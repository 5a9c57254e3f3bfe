"""The keyword argument of a call that holds a hit, and the comments near it.

Shared by the fixers that rewrite one keyword argument (``keyword_false``, ``drop_keyword``):
:class:`KeywordFixer` finds the keyword on the ``ast`` when planning and the LibCST ``Arg`` when
rewriting, and hands them to the fixer. :func:`module_comments` and :func:`comment_between` tell
whether a rewrite would lose a comment.
"""

from __future__ import annotations

import ast
import io
import tokenize

from .decline import Decline


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


class KeywordFixer:
    """A fixer of the keyword argument holding the hit: a subclass plans it in
    ``plan_keyword(ctx, hit, kw)`` (``kw`` the ast ``keyword``; the plan data names it as
    ``"keyword"``) and rewrites the call in ``rewrite_arg(updated, arg, i, name)`` (``arg`` the
    LibCST ``Arg`` at index ``i`` of the call's arguments)."""

    def plan(self, ctx, hit):
        kw = keyword_holding(hit.call, hit.node)
        if kw is None:
            return None
        return self.plan_keyword(ctx, hit, kw)

    def rewrite(self, rx, original, updated, data):
        name = data["keyword"]
        arg, i = find_arg(updated, name)
        if arg is None:
            raise Decline(f"the call no longer passes `{name}=`")
        return self.rewrite_arg(updated, arg, i, name)
