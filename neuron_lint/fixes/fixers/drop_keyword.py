"""``torch.compile(model, mode="max-autotune")`` -> ``torch.compile(model)``: the keyword argument
holding the hit is removed.

The argument list keeps its layout (:func:`neuron_lint.fixes.keyword_args.without_arg`): removing
the last argument hands its comma (a trailing comma or none) and the space before ``)`` to the
argument before it; comment lines after the argument's own stay. A comment that would go with it
(inside it, on its line, or before it on the line of the argument before) leaves it in place, and
the finding says why.
"""

from __future__ import annotations

from ..keyword_args import KeywordFixer, comment_between, without_arg


class DropKeyword(KeywordFixer):
    name = "drop_keyword"

    def plan_keyword(self, ctx, hit, kw):
        call = hit.call
        args = sorted([*call.args, *call.keywords], key=lambda a: (a.lineno, a.col_offset))
        i = next(j for j, a in enumerate(args) if a is kw)
        call_end = ctx.span(call)[2:]
        if i == len(args) - 1 and i > 0:  # the comma before it goes, up to `)`
            start, end = ctx.span(args[i - 1])[2:], call_end
        elif 0 < i < len(args) - 1:  # it goes with its comma; the lines after its own stay
            start, end = ctx.span(args[i - 1])[2:], (ctx.span(kw)[2] + 1, 0)
            end = min(end, ctx.span(args[i + 1])[:2])
        elif i < len(args) - 1:  # it goes with its comma, up to the next argument
            start, end = ctx.span(kw)[:2], ctx.span(args[i + 1])[:2]
        else:
            start, end = ctx.span(kw)[:2], call_end
        if comment_between(ctx, start, end):
            ctx.note(hit, f"not rewritten: a comment next to `{kw.arg}=` would be lost; remove the argument by hand")
            return None
        return ctx.propose(hit, call, "Call", f"Remove `{kw.arg}=`", {"keyword": kw.arg})

    def rewrite_arg(self, updated, arg, i, name):
        return updated.with_changes(args=without_arg(updated.args, i, name))


FIXER = DropKeyword()
