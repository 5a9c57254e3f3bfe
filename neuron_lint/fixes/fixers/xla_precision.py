"""NRN705: precision on the XLA path -> native autocast / torch.optim.

- ``torch.autocast("xla")`` / ``device_type="xla"`` -> the current device's type (``"neuron"`` with
  ``--device neuron``), adding ``dtype=torch.bfloat16`` when no dtype is given (the XLA autocast
  default; native autocast follows CUDA, whose default is float16);
- ``torch_xla.amp.syncfree.AdamW`` (``Adam``, ``SGD``) -> ``torch.optim.AdamW``;
- unsafe: a statement setting ``XLA_USE_BF16`` / ``XLA_DOWNCAST_BF16`` is deleted.
"""

from __future__ import annotations

import ast

from ..xla_common import drop_import, fits, import_of, plan_env_delete

_OPTIMIZERS = {"AdamW", "Adam", "SGD"}


class XlaPrecision:
    name = "xla_precision"

    def plan(self, ctx, hit):
        m = hit.match
        if m.kind == "matcher" and "xla_autocast" in m.patterns:
            return self._plan_autocast(ctx, hit)
        if m.kind == "matcher":
            return plan_env_delete(ctx, hit, "Delete the XLA-only bf16 switch (cast the model to bfloat16 yourself)")
        last = hit.subject.rsplit(".", 1)[-1]
        if hit.subject.startswith("torch_xla.amp.syncfree") and last in _OPTIMIZERS:
            return ctx.propose(hit, hit.node, type(hit.node).__name__, f"Use `torch.optim.{last}`",
                               {"mode": "optim", "name": last, "imp": import_of(ctx, hit.node)})
        ctx.note(hit, "not rewritten: replace it by hand")
        return None

    def _plan_autocast(self, ctx, hit):
        node = hit.node
        parent = ctx.parent(node)
        call = ctx.parent(parent) if isinstance(parent, ast.keyword) else parent
        if not isinstance(call, ast.Call):
            ctx.note(hit, "not rewritten: the device is not a direct argument")
            return None
        if any(k.arg is None for k in call.keywords):
            ctx.note(hit, "not rewritten: `**kwargs` may carry a dtype")
            return None
        has_dtype = any(k.arg == "dtype" for k in call.keywords) or len(call.args) > 1
        data = ctx.device_or_note(hit, call)
        if data is None:
            return None
        grow = (3 if ctx.neuron else 8) + (0 if has_dtype else len(", dtype=torch.bfloat16"))
        if not fits(ctx, hit, call, len(ctx.segment(call)) + grow):
            return None
        return ctx.propose(hit, call, "Call", "Autocast on the current device, in bfloat16",
                           {**data, "mode": "autocast", "add_dtype": not has_dtype})

    def rewrite(self, rx, original, updated, data):
        import libcst as cst

        from ..nodes import keyword

        mode = data.get("mode")
        if mode == "delete_env":
            return cst.RemovalSentinel.REMOVE
        if mode == "optim":
            drop_import(rx, data)
            return rx.dotted(f"torch.optim.{data['name']}", original)
        args = list(updated.args)
        at = next((i for i, a in enumerate(args) if (a.keyword is None and i == 0) or
                   (a.keyword is not None and a.keyword.value == "device_type")), None)
        if at is None:
            from ..decline import Decline

            raise Decline("no device argument")
        dev = rx.device_type(original, data)
        args[at] = args[at].with_changes(value=dev)
        if data.get("add_dtype"):
            bf16 = rx.dotted("torch.bfloat16", original)
            last = args[-1]
            comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            args[-1] = last.with_changes(comma=comma)
            args.append(keyword("dtype", bf16))
        return updated.with_changes(args=args)


FIXER = XlaPrecision()
