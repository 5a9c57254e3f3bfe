"""NRN704: ``torch.compile(..., backend="openxla")`` -> ``torch.compile(...)`` (``backend="neuron"`` with ``--device neuron``)."""

from __future__ import annotations

import ast


class XlaCompile:
    name = "xla_compile"

    def plan(self, ctx, hit):
        if hit.match.kind != "matcher":
            ctx.note(hit, "not rewritten: write `torch.compile(fn, fullgraph=True)` after checking the options")
            return None
        node = hit.node
        kw = ctx.parent(node)
        call = ctx.parent(kw)
        if not (isinstance(kw, ast.keyword) and kw.arg == "backend" and isinstance(call, ast.Call)):
            ctx.note(hit, "not rewritten: the backend is not a `backend=` keyword")
            return None
        if ctx.neuron:
            return ctx.propose(hit, node, "SimpleString", "Compile with the `neuron` backend", {"mode": "neuron"})
        return ctx.propose(hit, call, "Call", "Drop the XLA backend: TorchNeuron is selected on a Neuron device",
                           {"mode": "drop"})

    def rewrite(self, rx, original, updated, data):
        import libcst as cst

        from ..nodes import quote_of, string

        if data.get("mode") == "neuron":
            return string("neuron", quote_of(updated))
        args = list(updated.args)
        at = next((i for i, a in enumerate(args) if a.keyword is not None and a.keyword.value == "backend"), None)
        if at is None:
            from ..decline import Decline

            raise Decline("no `backend=` keyword")
        dropped = args.pop(at)
        if args and at == len(args):  # the last argument went: the new last one takes its comma
            args[-1] = args[-1].with_changes(comma=dropped.comma)
        _ = cst
        return updated.with_changes(args=args)


FIXER = XlaCompile()
