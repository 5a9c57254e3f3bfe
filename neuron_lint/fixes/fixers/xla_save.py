"""NRN709 (unsafe): ``xm.save(obj, path)`` -> ``if LOCAL_RANK == 0: torch.save(obj, path)``.

``master_only=True, global_master=False`` (the defaults) write once per host; ``global_master=True``
once in all (``RANK``); ``master_only=False`` on every rank (no guard).
"""

from __future__ import annotations

import ast

from ..xla_common import drop_import, env_int, fits, import_of


class XlaSave:
    name = "xla_save"

    def plan(self, ctx, hit):
        if hit.subject != "torch_xla.core.xla_model.save":
            ctx.note(hit, "not rewritten: use `torch.save`/`torch.load` or `torch.distributed.checkpoint` by hand")
            return None
        call = ctx.enclosing_call(hit.node)
        stmt = ctx.parent(call) if call is not None else None
        if not (isinstance(stmt, ast.Expr) and stmt.value is call) or len(call.args) != 2 or any(
                isinstance(a, ast.Starred) for a in call.args):
            ctx.note(hit, "not rewritten: only `xm.save(obj, path)` as a statement of its own")
            return None
        flags = {"master_only": True, "global_master": False}
        for k in call.keywords:
            if k.arg in flags and isinstance(k.value, ast.Constant) and isinstance(k.value.value, bool):
                flags[k.arg] = k.value.value
            else:
                ctx.note(hit, f"not rewritten: `{k.arg}=` is not a literal master_only/global_master")
                return None
        parent = ctx.parent(stmt)
        block = next((getattr(parent, f) for f in ("body", "orelse", "finalbody")
                      if isinstance(getattr(parent, f, None), list) and stmt in getattr(parent, f)), [stmt])
        if any(s is not stmt and s.lineno == stmt.lineno for s in block):
            ctx.note(hit, "not rewritten: other statements share its line")
            return None
        if not fits(ctx, hit, call, len(ctx.segment(call)) - len(ctx.segment(call.func)) + 10, indent=4):
            return None
        var = None if not flags["master_only"] else ("RANK" if flags["global_master"] else "LOCAL_RANK")
        return ctx.propose(hit, stmt, "SimpleStatementLine",
                           "`torch.save` on the same rank(s); tensors keep their device (xm.save moved them to the CPU)",
                           {"var": var, "imp": import_of(ctx, call.func)})

    def rewrite(self, rx, original, updated, data):
        import libcst as cst
        from libcst.helpers import parse_template_statement

        drop_import(rx, data)
        call = updated.body[0].value
        save = cst.Call(func=rx.dotted("torch.save", original), args=[
            call.args[0].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
            call.args[1].with_changes(comma=cst.MaybeSentinel.DEFAULT),
        ])
        module = rx.module.tree
        if data.get("var") is None:
            return updated.with_changes(body=[updated.body[0].with_changes(value=save)])
        stmt = parse_template_statement(
            "if {rank} == 0:\n" + module.default_indent + "{save}\n",
            config=module.config_for_parsing, rank=env_int(rx, data["var"], 0), save=save,
        )
        return stmt.with_changes(leading_lines=updated.leading_lines)


FIXER = XlaSave()
