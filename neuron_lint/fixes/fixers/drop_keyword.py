"""``torch.compile(model, mode="max-autotune")`` -> ``torch.compile(model)``: the keyword argument
holding the hit is removed.

The argument list keeps its layout: removing the last argument hands its comma (a trailing comma
or none) and the space before ``)`` to the argument before it. A comment inside the removed text
(the argument, its comma, or the comma of the argument before it when that one is dropped) would
be lost: then nothing is removed and the finding says why.
"""

from __future__ import annotations

from ..keyword_args import KeywordFixer, comment_between


def _has_comment(*nodes) -> bool:
    import libcst as cst
    import libcst.matchers as m

    for node in nodes:
        if isinstance(node, cst.CSTNode) and m.findall(node, m.Comment()):
            return True
    return False


class DropKeyword(KeywordFixer):
    name = "drop_keyword"

    def plan_keyword(self, ctx, hit, kw):
        call = hit.call
        args = sorted([*call.args, *call.keywords], key=lambda a: (a.lineno, a.col_offset))
        i = next(j for j, a in enumerate(args) if a is kw)
        call_end = ctx.span(call)[2:]
        if i == len(args) - 1 and i > 0:  # the comma before it goes, up to `)`
            start, end = ctx.span(args[i - 1])[2:], call_end
        elif i < len(args) - 1:  # it goes with its comma, up to the next argument
            start, end = ctx.span(kw)[:2], ctx.span(args[i + 1])[:2]
        else:
            start, end = ctx.span(kw)[:2], call_end
        if comment_between(ctx, start, end):
            ctx.note(hit, f"not rewritten: a comment next to `{kw.arg}=` would be lost; remove the argument by hand")
            return None
        return ctx.propose(hit, call, "Call", f"Remove `{kw.arg}=`", {"keyword": kw.arg})

    def rewrite_arg(self, updated, arg, i, name):
        from ..decline import Decline

        args = list(updated.args)
        lost = [arg]  # the argument with its comma and the space after it
        if i == len(args) - 1 and i > 0:
            before = args[i - 1]
            lost += [before.comma, before.whitespace_after_arg]
            args[i - 1] = before.with_changes(comma=arg.comma, whitespace_after_arg=arg.whitespace_after_arg)
        if _has_comment(*lost):
            raise Decline(f"a comment next to `{name}=` would be lost; remove the argument by hand")
        del args[i]
        return updated.with_changes(args=args)


FIXER = DropKeyword()
