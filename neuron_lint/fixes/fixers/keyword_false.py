"""``f(..., dynamic=True)`` -> ``f(..., dynamic=False)``: the keyword argument holding the hit becomes ``False``.

Planned on the call (the ast ``keyword`` that contains the hit); carried out on the LibCST ``Call``
by replacing that argument's value, so its comma, spacing and any comment around it stay.
"""

from __future__ import annotations

import ast

from ..keyword_args import KeywordFixer, comment_between


class KeywordFalse(KeywordFixer):
    name = "keyword_false"

    def plan_keyword(self, ctx, hit, kw):
        if isinstance(kw.value, ast.Constant) and kw.value.value is False:
            return None
        line, col, end_line, end_col = ctx.span(kw.value)
        if comment_between(ctx, (line, col), (end_line, end_col)):
            ctx.note(hit, f"not rewritten: a comment inside the value of `{kw.arg}=` would be lost; change it by hand")
            return None
        return ctx.propose(hit, hit.call, "Call", f"Pass `{kw.arg}=False`", {"keyword": kw.arg})

    def rewrite_arg(self, updated, arg, i, name):
        import libcst as cst
        import libcst.matchers as m

        from ..decline import Decline

        if m.findall(arg.value, m.Comment()):
            raise Decline(f"a comment inside the value of `{name}=` would be lost; change it by hand")
        args = list(updated.args)
        args[i] = arg.with_changes(value=cst.Name("False"))
        return updated.with_changes(args=args)


FIXER = KeywordFalse()
