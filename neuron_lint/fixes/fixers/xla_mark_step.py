"""NRN703: ``xm.mark_step()`` / ``torch_xla.sync()`` -> nothing; ``xm.wait_device_ops()`` -> a synchronisation.

Only a call that is a statement of its own is rewritten. A step cut deleted from a block that
holds nothing else leaves ``pass`` (LibCST writes it). One that sits right before a timer
(the next statement reads ``time.time()``, ``time.perf_counter()``, ``time.monotonic()``,
``timeit.default_timer()``...) keeps the wait the timer measured, as
``if torch.accelerator.is_available(): torch.accelerator.synchronize()`` (the guard keeps a
CPU-only host running: ``torch.accelerator.synchronize()`` raises without an accelerator).
"""

from __future__ import annotations

import ast

from ..xla_common import drop_import, import_of

_CUTS = {"torch_xla.core.xla_model.mark_step", "torch_xla.sync", "torch_xla.torch_xla.sync"}
_WAIT = {"torch_xla.core.xla_model.wait_device_ops"}
_TIMERS = {"time.time", "time.perf_counter", "time.monotonic", "time.process_time", "time.time_ns",
           "time.perf_counter_ns", "time.monotonic_ns", "timeit.default_timer"}


def _next_statement(ctx, stmt):
    parent = ctx.parent(stmt)
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and stmt in block:
            i = block.index(stmt)
            return block[i + 1] if i + 1 < len(block) else None
    return None


def _reads_timer(ctx, stmt) -> bool:
    if stmt is None:
        return False
    for n in ast.walk(stmt):
        if isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute)):
            if ctx.qualname(n.func) in _TIMERS:
                return True
    return False


class XlaMarkStep:
    name = "xla_mark_step"

    def plan(self, ctx, hit):
        if hit.subject not in _CUTS and hit.subject not in _WAIT:
            ctx.note(hit, "not rewritten: call the function directly / delete the switch by hand")
            return None
        call = ctx.enclosing_call(hit.node)
        stmt = ctx.parent(call) if call is not None else None
        if not isinstance(stmt, ast.Expr) or stmt.value is not call:
            ctx.note(hit, "not rewritten: the call is not a statement of its own")
            return None
        imp = import_of(ctx, call.func)
        if hit.subject in _WAIT or _reads_timer(ctx, _next_statement(ctx, stmt)):
            line = [s for s in _block_of(ctx, stmt) if s.lineno == stmt.lineno]
            if len(line) > 1:
                ctx.note(hit, "not rewritten: other statements share its line")
                return None
            return ctx.propose(hit, stmt, "SimpleStatementLine", "Synchronise the device before the timer reads the clock"
                               if hit.subject in _CUTS else "Wait for the device with `torch.accelerator.synchronize()`",
                               {"mode": "sync", "imp": imp})
        return ctx.propose(hit, stmt, "Expr", "Delete the step cut: native TorchNeuron runs eagerly", {"mode": "delete", "imp": imp})

    def rewrite(self, rx, original, updated, data):
        import libcst as cst
        from libcst.helpers import parse_template_statement

        drop_import(rx, data)
        if data.get("mode") == "delete":
            return cst.RemovalSentinel.REMOVE
        t = rx.torch_name(original)
        module = rx.module.tree
        stmt = parse_template_statement(
            f"if {t}.accelerator.is_available():\n{module.default_indent}{t}.accelerator.synchronize()\n",
            config=module.config_for_parsing,
        )
        return stmt.with_changes(leading_lines=updated.leading_lines)


def _block_of(ctx, stmt):
    return ctx.block_of(stmt) or [stmt]


FIXER = XlaMarkStep()
