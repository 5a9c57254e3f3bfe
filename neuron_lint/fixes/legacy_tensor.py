"""``torch.cuda.LongTensor([a, b])`` -> ``torch.tensor([a, b], dtype=torch.long, device=<current device>)``.

The legacy typed constructors build a tensor on the current CUDA device from data, or an
uninitialised one from sizes (``torch.cuda.FloatTensor(4, 4)``, ``torch.cuda.LongTensor(n)``). A list
or tuple display (or a list comprehension) is surely data, and two or more arguments (or one integer)
are surely sizes; a single name may be either, and is left. ``torch.tensor`` copies the data like the
legacy constructor does for a sequence, ``torch.empty`` makes the same uninitialised tensor from
sizes, and both put it on the device the other device rewrites use (the current CUDA device on
CUDA). Megatron-style code (gpt-neox) builds its broadcast flags this way; pytorch-YOLOv4's region
loss its `pred_boxes = torch.cuda.FloatTensor(4, n)`.
"""

from __future__ import annotations

import ast
import re

#: ``torch.cuda.<Kind>Tensor`` -> the dtype name written (``torch.<name>``).
DTYPES = {
    "Float": "float", "Double": "double", "Half": "half", "BFloat16": "bfloat16", "Long": "long",
    "Int": "int", "Short": "short", "Char": "int8", "Byte": "uint8", "Bool": "bool",
}
_TYPED = re.compile(r"torch\.cuda\.(\w+)Tensor$")


def legacy_dtype(subject: str) -> str | None:
    """``"long"`` for ``torch.cuda.LongTensor``; None for anything else."""
    m = _TYPED.match(subject)
    return DTYPES.get(m.group(1)) if m else None


def plan_legacy_tensor(ctx, hit, dtype: str):
    """The plan for ``hit`` (a ``torch.cuda.<Kind>Tensor`` reference), or None with a note."""
    call = ctx.enclosing_call(hit.node)
    if call is None:
        return None  # a type (`isinstance(x, torch.cuda.FloatTensor)`, `x.type(...)`): no tensor is made
    args = call.args
    data_form = len(args) == 1 and isinstance(args[0], (ast.List, ast.Tuple, ast.ListComp))
    sizes = len(args) >= 2 or (len(args) == 1 and isinstance(args[0], ast.Constant) and type(args[0].value) is int)
    if call.keywords or not (data_form or sizes):
        ctx.note(hit, "not rewritten: only a list or tuple of values is surely data here, and only two or more "
                      "arguments or an integer are surely sizes (a name may be either); write "
                      f"`torch.tensor(data, dtype=torch.{dtype}, device=...)` or `torch.empty(...)` by hand")
        return None
    kernel = _into_cuda_only_code(ctx, call)
    if kernel:
        ctx.note(hit, f"not rewritten: the tensor goes into {kernel}, which takes CUDA memory only (a buffer for "
                      "its output or scratch space): made on another device, it would reach that code there. "
                      "Port the kernel first")
        return None
    data = ctx.device_or_note(hit, call)
    if data is None:
        return None
    made = "tensor" if data_form else "empty"
    return ctx.propose(hit, call, "Call", f"Use `torch.{made}(..., dtype=torch.{dtype}, device=...)`",
                       {**data, "dtype": dtype, "made": made}, "safe")


def _into_cuda_only_code(ctx, call: ast.Call) -> str:
    """The CUDA-only call (a compiled extension, a kernel: :func:`.cuda_only.cuda_only_call`) that
    takes the tensor ``call`` makes, as the note names it, or ``""``: directly or through a chained
    ``.fill_(...)``/``.zero_()``/``Variable(...)``, or through the one name it is assigned to in its
    function (or that name's ``.data``) (OpenPCDet's pointnet2 ops: ``output = torch.cuda.IntTensor(B, npoint)`` then
    ``pointnet2.farthest_point_sampling_wrapper(B, N, npoint, xyz, temp, output)``, read set 68)."""
    from .cuda_only import cuda_only_call

    node = call
    parent = ctx.parent(node)
    while isinstance(parent, (ast.Attribute, ast.Call)) and not (isinstance(parent, ast.Call) and node in parent.args):
        node, parent = parent, ctx.parent(parent)  # `torch.cuda.FloatTensor(B, N).fill_(1e10)`
    if isinstance(parent, ast.Call) and node in parent.args and not cuda_only_call(ctx, parent):
        node, parent = parent, ctx.parent(parent)  # `Variable(torch.cuda.FloatTensor(...).zero_())`
    if isinstance(parent, ast.Call) and node in parent.args:
        what = cuda_only_call(ctx, parent)
        return f"{what} (line {parent.lineno})" if what else ""
    if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name)):
        return ""
    name = parent.targets[0].id
    scope = ctx.enclosing_function(parent)
    for n in ctx.walk(scope) if scope is not None else ():
        if isinstance(n, ast.Call) and any(_names(a, name) for a in n.args):
            what = cuda_only_call(ctx, n)
            if what:
                return f"{what} (line {n.lineno})"
    return ""


def _names(arg: ast.expr, name: str) -> bool:
    """Is ``arg`` the name ``name``, or an attribute of it (``grad_features.data``)?"""
    if isinstance(arg, ast.Attribute):
        arg = arg.value
    return isinstance(arg, ast.Name) and arg.id == name


def rewrite_legacy_tensor(rx, original, updated, data):
    import libcst as cst

    from .nodes import attribute, keyword

    torch = rx.dotted("torch", original)
    *given, value = updated.args
    args = [*given, value.with_changes(comma=cst.MaybeSentinel.DEFAULT),
            keyword("dtype", attribute(torch, data["dtype"])), keyword("device", rx.device(original, data))]
    opened = updated.whitespace_before_args
    if isinstance(opened, cst.ParenthesizedWhitespace):
        # `torch.cuda.FloatTensor(` / `[...]` / `)`: one argument per line, with a trailing comma, as
        # ruff format lays out a split call (pytorch3d's tests had `],` then `dtype=..., device=...)`)
        closing = value.whitespace_after_arg
        args = [arg.with_changes(comma=cst.Comma(whitespace_after=closing if arg is args[-1] else opened),
                                 whitespace_after_arg=cst.SimpleWhitespace("")) for arg in args]
    return updated.with_changes(func=attribute(torch, data.get("made", "tensor")), args=args)
