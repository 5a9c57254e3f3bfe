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
    if "#" not in ctx.text[ctx.lines.offset(*start):ctx.lines.offset(*end)]:
        return False  # no comment can start there: the module is not tokenized for it
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


def _has_comment(*nodes) -> bool:
    import libcst as cst
    import libcst.matchers as m

    return any(isinstance(n, cst.CSTNode) and m.findall(n, m.Comment()) for n in nodes)


def _breaks_line(whitespace) -> bool:
    import libcst as cst

    return isinstance(whitespace, cst.ParenthesizedWhitespace)


def without_arg(args: list, i: int, name: str) -> list:
    """LibCST ``args`` without the ``i``-th, keeping the layout of the rest: the last argument hands
    its comma (a trailing comma or none) and the space before ``)`` to the one before it; one in the
    middle leaves the space after the comma before it or after its own, whichever breaks the line
    (with the comment lines in it: yolov7's ``DDP(model, device_ids=[r], output_device=r,`` / ``# a
    comment`` / ``find_unused_parameters=...)``). Raises :class:`Decline` when a comment would go
    (one on the removed argument's line, which speaks of it)."""
    import libcst as cst

    args = list(args)
    arg = args[i]
    if i == len(args) - 1 and i > 0:
        before = args[i - 1]
        lost = [arg, before.comma, before.whitespace_after_arg]
        args[i - 1] = before.with_changes(comma=arg.comma, whitespace_after_arg=arg.whitespace_after_arg)
    elif i > 0 and isinstance(args[i - 1].comma, cst.Comma) and isinstance(arg.comma, cst.Comma):
        before = args[i - 1]
        mine, theirs = arg.comma.whitespace_after, before.comma.whitespace_after
        # a comment on the argument's own line goes with it (so the fix declines); one on the lines
        # after it stays
        ours = _breaks_line(mine) and mine.first_line.comment is None and not _has_comment(theirs)
        keep, drop = (mine, theirs) if ours else (theirs, mine)
        lost = [arg.with_changes(comma=cst.MaybeSentinel.DEFAULT), arg.comma.whitespace_before, drop]
        args[i - 1] = before.with_changes(comma=before.comma.with_changes(whitespace_after=keep))
    else:
        lost = [arg]  # the argument with its comma and the space after it
    if _has_comment(*lost):
        raise Decline(f"a comment next to `{name}=` would be lost; remove the argument by hand")
    del args[i]
    return args


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


def with_commas(args: list, before_args=None) -> list:
    """Every argument but the last followed by a comma (the new ones get ``, ``). In a call that
    breaks its arguments over lines they go one per line with a trailing comma, as ``ruff format``
    prints a call it cannot join (open_flamingo's ``lambda: autocast(`` / arguments / ``)`` had its
    new last argument glued to the old one and to ``)``)."""
    import libcst as cst
    import libcst.matchers as m

    if isinstance(before_args, cst.ParenthesizedWhitespace) and args and not any(
            m.findall(w, m.Comment()) for a in args for w in (a.comma, a.whitespace_after_arg)
            if isinstance(w, cst.CSTNode)):
        closing = before_args.with_changes(last_line=cst.SimpleWhitespace(""))
        return [a.with_changes(comma=cst.Comma(whitespace_after=closing if i == len(args) - 1 else before_args),
                               whitespace_after_arg=cst.SimpleWhitespace(""))
                for i, a in enumerate(args)]
    out = []
    for i, a in enumerate(args):
        if i < len(args) - 1 and not isinstance(a.comma, cst.Comma):
            a = a.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        out.append(a)
    return out
