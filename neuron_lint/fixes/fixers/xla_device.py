"""NRN702: the PyTorch/XLA device -> the current device.

- ``xm.xla_device()`` / ``torch_xla.device()`` -> the module's current device (``DEVICE`` in a
  script, ``_current_device()`` in a library module, a local ``device`` already in scope; with
  ``--device neuron`` ``torch.device("neuron")``). ``xm.xla_device(n)`` drops the index (unsafe:
  under torchrun each process sees its NeuronCore as index 0);
- an ``"xla"`` device string -> ``DEVICE.type`` (``"neuron"`` with ``--device neuron``);
- ``... == "xla"`` (a device-type comparison) -> ``... == "neuron"``: the branch the XLA code
  meant for the accelerator is taken on Trainium, and on no other device, as before.
"""

from __future__ import annotations

import ast

from ..xla_common import drop_import, fits, import_of

_ACQUIRE = {"torch_xla.core.xla_model.xla_device", "torch_xla.device", "torch_xla.torch_xla.device"}


class XlaDevice:
    name = "xla_device"

    def plan(self, ctx, hit):
        node = hit.node
        if hit.match.kind == "matcher":
            return self._plan_string(ctx, hit, node)
        if hit.subject not in _ACQUIRE:
            ctx.note(hit, "not rewritten: write `torch.accelerator.device_count()` / the device type by hand")
            return None
        call = ctx.enclosing_call(node)
        if call is None:
            ctx.note(hit, "not rewritten: the function is not called here")
            return None
        applicability = None
        if call.keywords or len(call.args) > 1:
            ctx.note(hit, "not rewritten: arguments other than a device index")
            return None
        if call.args:
            applicability = "unsafe"
        data = ctx.device_or_note(hit, call)
        if data is None:
            return None
        if not fits(ctx, hit, call, len("_current_device()")):
            return None
        message = "Use the current device" + (" (the index is dropped: each torchrun process sees index 0)" if call.args else "")
        return ctx.propose(hit, call, "Call", message, {**data, "imp": import_of(ctx, call.func)}, applicability)

    def _plan_string(self, ctx, hit, node):
        parent = ctx.parent(node)
        if not (isinstance(node, ast.Constant) and node.value == "xla"):
            ctx.note(hit, "not rewritten: an indexed device string; under torchrun use the plain current device")
            return None
        if isinstance(parent, ast.JoinedStr):
            ctx.note(hit, "not rewritten: part of an f-string")
            return None
        if isinstance(parent, ast.Compare) or (isinstance(parent, (ast.Tuple, ast.List, ast.Set)) and isinstance(ctx.parent(parent), ast.Compare)):
            return ctx.propose(hit, node, "SimpleString", "Compare with the native device type `neuron`", {"mode": "neuron"})
        if isinstance(parent, ast.arguments):
            ctx.note(hit, "not rewritten: a default value is computed when the function is defined (at import); "
                          "write `device=None` and choose the device in the body")
            return None
        if not _names_the_device_to_use(ctx, node):
            ctx.note(hit, "not rewritten: here `\"xla\"` is one device type among others (an element, an argument), "
                          "not the device the code runs on; the current device's type would change its meaning")
            return None
        data = ctx.device_or_note(hit, node)
        if data is None:
            return None
        if not fits(ctx, hit, node, len("DEVICE.type")):
            return None
        return ctx.propose(hit, node, "SimpleString", "Use the current device's type", {**data, "mode": "type"})

    def rewrite(self, rx, original, updated, data):
        import libcst as cst

        from ..nodes import string, quote_of

        mode = data.get("mode")
        if mode == "neuron":
            return string("neuron", quote_of(updated))
        if mode == "type":
            return rx.device_type(original, data)
        drop_import(rx, data)
        if data.get("device") == "neuron":
            return cst.Call(func=rx.dotted("torch.device", original), args=[cst.Arg(string("neuron"))])
        return rx.device(original, data)


def _device_word(name: str | None) -> bool:
    return bool(name) and "device" in name.lower()


def _names_the_device_to_use(ctx, node) -> bool:
    """Is the ``"xla"`` at ``node`` the device the code runs on: ``torch.device("xla")``,
    ``x.to("xla")``, ``device="xla"``, ``device = "xla"``, or a branch of
    ``"xla" if ... else "cpu"`` used so? (Not an element of a list of device types, timm's
    ``capturable_supported_devices.append("xla")``.)"""
    parent = ctx.parent(node)
    while isinstance(parent, ast.IfExp) and node is not parent.test:
        node, parent = parent, ctx.parent(parent)
    if isinstance(parent, ast.keyword):
        return _device_word(parent.arg)
    if isinstance(parent, ast.Call) and node in parent.args:
        func = parent.func
        return ctx.qualname(func) == "torch.device" or (isinstance(func, ast.Attribute) and func.attr == "to")
    if isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is node:
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        return all(_device_word(t.id if isinstance(t, ast.Name) else getattr(t, "attr", None)) for t in targets)
    return False


FIXER = XlaDevice()
