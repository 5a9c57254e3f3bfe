"""Distributed code tied to CUDA -> the current device.

- ``backend="nccl"`` -> ``dist.get_default_backend_for_device(DEVICE)`` (PyTorch 2.6; written with
  the module's own alias of ``torch.distributed``): NCCL on a GPU, the registered backend on
  Trainium (``neuron``), gloo on a CPU-only host. With ``--device neuron``: ``"neuron"``;
- ``init_device_mesh("cuda", ...)`` -> ``init_device_mesh(DEVICE.type, ...)`` (see :mod:`neuron_lint.fixes.device_literal`);
- ``DistributedDataParallel(model, device_ids=[local_rank], output_device=local_rank)`` ->
  ``device_ids=[local_rank] if DEVICE.type != "cpu" else None``. In PyTorch 2.13 DDP takes one
  device index for a single-device module on any accelerator (it moves the inputs to
  ``torch.device(<module's device type>, index)``), and requires ``None`` for CPU modules: so the
  CUDA path is unchanged, Trainium gets the same treatment as a GPU, and a CPU-only run no longer
  raises. ``output_device`` defaults to ``device_ids[0]``, so when it repeats that index it is
  dropped; otherwise it gets the same condition.
"""

from __future__ import annotations

import ast

from ..device_choice import device_data
from ..device_literal import plan_device_type
from ..keyword_args import without_arg
from ..plan import dist_alias
from ..process_group import backend_compared, nccl_asked


def plan_backend(ctx, hit, node, fixer: str | None = None, kind: str = "SimpleString",
                 applicability: str | None = None):
    """``"nccl"`` -> the backend registered for the current device (``"neuron"`` with --device neuron)."""
    compared = backend_compared(ctx)
    if compared:
        ctx.note(hit, f"not rewritten: the module compares its backend with `\"nccl\"` (line {compared}) to decide "
                      "what to do; with the device's backend, Trainium's `neuron` would take none of those "
                      "branches. Port the backend and those tests together by hand")
        return None
    if ctx.neuron and kind == "SimpleString":
        return ctx.propose(hit, node, "SimpleString", "Use the `neuron` process-group backend", {"mode": "neuron"},
                           fixer=fixer)
    if not ctx.allows("2.6"):
        ctx.note(hit, "not rewritten: `get_default_backend_for_device` needs PyTorch 2.6 (--min-torch)")
        return None
    data = device_data(ctx, hit, node)
    if data is None:
        return None
    return ctx.propose(hit, node, kind, "Use the backend registered for the current device",
                       {**data, "mode": "backend", "dist": dist_alias(ctx)}, applicability, fixer)


def _nccl_or_gloo(ctx, node) -> ast.IfExp | None:
    """The choice ``"nccl" if dist.is_nccl_available() else "gloo"`` whose body is ``node``."""
    choice = ctx.parent(node)
    if not (isinstance(choice, ast.IfExp) and choice.body is node and isinstance(choice.test, ast.Call)):
        return None
    if choice.test.args or choice.test.keywords:
        return None
    if ctx.qualname(choice.test.func) != "torch.distributed.is_nccl_available":
        return None
    return choice if isinstance(choice.orelse, ast.Constant) and choice.orelse.value == "gloo" else None


class Distributed:
    name = "distributed"

    def plan(self, ctx, hit):
        if hit.match.kind == "matcher":
            return self._plan_ddp(ctx, hit)
        arg, node = hit.match.arg, hit.node
        keyword = arg.keyword if arg else None
        if keyword == "device_type":
            return plan_device_type(ctx, hit, node)
        if keyword != "backend":
            return None
        if not (isinstance(node, ast.Constant) and node.value == "nccl"):
            ctx.note(hit, "not rewritten: a backend string naming devices (`cpu:gloo,cuda:nccl`) needs a "
                          "`neuron:neuron` entry added by hand")
            return None
        asked = nccl_asked(ctx)
        if asked:
            ctx.note(hit, f"not rewritten: the project asks whether its process group is NCCL's to place tensors "
                          f"(`get_backend() == \"nccl\"`, {asked}); with the device's backend that test sends "
                          "Trainium's collectives CPU tensors. Rewrite those tests first")
            return None
        choice = _nccl_or_gloo(ctx, node)
        if choice is not None:
            # NCCL is there only in a CUDA build, so on Trainium the test picks gloo (yolov9): the whole
            # choice is the device's backend. Unsafe: a CUDA build without NCCL (Windows') gets "nccl".
            return plan_backend(ctx, hit, choice, kind="IfExp", applicability="unsafe")
        return plan_backend(ctx, hit, node)

    def _plan_ddp(self, ctx, hit):
        ids = hit.node
        kw = ctx.parent(ids)
        call = ctx.parent(kw)
        if not (isinstance(kw, ast.keyword) and isinstance(call, ast.Call)):
            return None
        if len(ids.elts) != 1 or isinstance(ids.elts[0], ast.Starred):
            ctx.note(hit, "not rewritten: DistributedDataParallel takes at most one device index")
            return None
        if ctx.neuron:
            ctx.note(hit, "nothing to rewrite with --device neuron: DistributedDataParallel takes the index of a "
                          "`neuron` device as it takes a CUDA one")
            return None
        if any(k.arg is None for k in call.keywords):
            ctx.note(hit, "not rewritten: `**kwargs` may pass `output_device` too")
            return None
        data = device_data(ctx, hit, call)
        if data is None:
            return None
        output = next((k.value for k in call.keywords if k.arg == "output_device"), None)
        same = output is not None and ast.dump(output) == ast.dump(ids.elts[0])
        return ctx.propose(hit, call, "Call", "Pass DDP device indices only for an accelerator (`None` on the CPU)",
                           {**data, "mode": "ddp", "drop_output": same})

    # ------------------------------------------------------------------ LibCST
    def rewrite(self, rx, original, updated, data):
        import libcst as cst

        from ..device_literal import rewrite_literal
        from ..nodes import attribute

        mode = data.get("mode")
        if mode == "neuron":
            raw = updated.raw_value
            return cst.SimpleString(f"{updated.prefix}{updated.quote}neuron{raw[4:]}{updated.quote}")
        if mode == "backend":
            alias = data.get("dist")
            if alias:
                func = attribute(alias, "get_default_backend_for_device")
            else:
                func = rx.dotted("torch.distributed.get_default_backend_for_device", original)
            return cst.Call(func=func, args=[cst.Arg(rx.device(original, data))])
        if mode == "ddp":
            return self._rewrite_ddp(rx, original, updated, data)
        return rewrite_literal(rx, original, updated, data)

    def _rewrite_ddp(self, rx, original, updated, data):
        dev_type = rx.device_type(original, data)

        def only_off_cpu(value):
            return rx.expression('{value} if {off} else None', value=value, off=rx.on_an_accelerator(dev_type, original))

        args = list(updated.args)
        for i in reversed(range(len(args))):
            a = args[i]
            name = a.keyword.value if a.keyword is not None else None
            if name == "output_device" and data.get("drop_output"):
                args = without_arg(args, i, name)
            elif name in ("device_ids", "output_device"):
                args[i] = a.with_changes(value=only_off_cpu(_joined(a.value)))
        if not any(a.keyword is not None and a.keyword.value == "device_ids" for a in args):
            from ..decline import Decline

            raise Decline("the call has no `device_ids` keyword")
        return updated.with_changes(args=args)


def _joined(value):
    """A one-element list broken after its bracket (ECCV2022-RIFE's ``device_ids=[`` / ``local_rank]``)
    as one line, so that the condition the fix adds does not start inside the break."""
    import libcst as cst

    if not (isinstance(value, cst.List) and len(value.elements) == 1):
        return value
    (element,) = value.elements
    if not isinstance(element, cst.Element) or "\n" in cst.Module([]).code_for_node(element.value):
        return value
    return value.with_changes(lbracket=cst.LeftSquareBracket(), rbracket=cst.RightSquareBracket(),
                              elements=[element.with_changes(comma=cst.MaybeSentinel.DEFAULT)])


FIXER = Distributed()
