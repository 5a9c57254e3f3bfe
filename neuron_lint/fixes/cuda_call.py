"""``x.cuda()`` / ``model.cuda(i)`` / ``x.cuda(non_blocking=True)`` -> ``.to(<current device>)``."""

from __future__ import annotations

import ast

from . import fixer

_INDEX_WORDS = ("rank", "idx", "index", "gpu", "_id", "ordinal")


def looks_like_index(ctx, node) -> bool:
    """An expression that is evidently a device index (``local_rank``, ``args.gpu``), not a device object."""
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, (ast.Name, ast.Attribute)):
        last = node.id if isinstance(node, ast.Name) else node.attr
        last = last.lower()
        return last != "device" and (last == "i" or any(w in last for w in _INDEX_WORDS))
    return False


def indexed_device(ctx, index_node) -> str | None:
    """The device with an index, as a string expression: ``f"{DEVICE.type}:{rank}"``."""
    dev = ctx.device
    if isinstance(index_node, ast.Constant):
        text = str(index_node.value)
        return f'"neuron:{text}"' if dev.neuron else f'f"{{{dev.type_expr()}}}:{text}"'
    src = ctx.segment(index_node)
    if any(c in src for c in "'\"\\{}:!\n\r") or not looks_like_index(ctx, index_node):
        return None
    return f'f"neuron:{{{src}}}"' if dev.neuron else f'f"{{{dev.type_expr()}}}:{{{src}}}"'


@fixer("cuda_call")
def fix_cuda_call(ctx, hit):
    call = hit.call
    if call is None or not isinstance(call.func, ast.Attribute):
        return None
    dev = ctx.device
    if not dev.usable_at(call):
        ctx.note(hit, f"not rewritten: {dev.why_not()}")
        return None
    args, kws = call.args, call.keywords
    if len(args) > 2 or any(isinstance(a, ast.Starred) for a in args) or any(k.arg is None for k in kws):
        return None
    index_node = args[0] if args else None
    index_site = index_node
    for k in kws:
        if k.arg == "device":
            if args or kws[0] is not k:
                return None
            index_node, index_site = k.value, k
    edits = []
    # `cuda` -> `to`
    _, _, end_line, end_col = ctx.span(call.func)
    name_end = ctx.offset(end_line, end_col)
    edits.append(ctx.edit_at(name_end - len("cuda"), name_end, "to"))
    if index_node is None or (isinstance(index_node, ast.Constant) and index_node.value is None):
        target = dev.expr()
        if index_site is not None:
            edits.append(ctx.replace(index_site, target))
        else:
            at = ctx.after_open_paren(call)
            edits.append(ctx.edit_at(at, at, target + (", " if args or kws else "")))
    else:
        target = indexed_device(ctx, index_node)
        if target is None:
            ctx.note(hit, "not rewritten: the argument may be a device object rather than an index; write `.to(device)` by hand")
            return None
        edits.append(ctx.replace(index_site, target))
    if len(args) == 2:
        edits.append(ctx.insert_before(args[1], "non_blocking="))
    edits += dev.preamble()
    return ctx.make_fix(hit, edits, "Move to the current accelerator with `.to(...)`")
