"""``x.cuda()`` / ``model.cuda(i)`` / ``x.cuda(non_blocking=True)`` -> ``x.to(<current device>)``."""

from __future__ import annotations

import ast

_INDEX_WORDS = ("rank", "idx", "index", "gpu", "_id", "ordinal")


def looks_like_index(node) -> bool:
    """An expression that is evidently a device index (``local_rank``, ``args.gpu``), not a device object."""
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, (ast.Name, ast.Attribute)):
        last = (node.id if isinstance(node, ast.Name) else node.attr).lower()
        return last != "device" and (last == "i" or any(w in last for w in _INDEX_WORDS))
    return False


class CudaCall:
    name = "cuda_call"

    def plan(self, ctx, hit):
        call = hit.call
        if call is None or not isinstance(call.func, ast.Attribute):
            return None
        args, kws = call.args, call.keywords
        if len(args) > 2 or any(isinstance(a, ast.Starred) for a in args) or any(k.arg is None for k in kws):
            return None
        index = args[0] if args else None
        for k in kws:
            if k.arg == "device":
                if args:
                    return None
                index = k.value
            elif k.arg not in ("non_blocking", "memory_format"):
                return None
        if index is not None and not (isinstance(index, ast.Constant) and index.value is None) and not looks_like_index(index):
            ctx.note(hit, "not rewritten: the argument may be a device object rather than an index; write `.to(device)` by hand")
            return None
        data = ctx.device_or_note(hit, call)
        if data is None:
            return None
        return ctx.propose(hit, call, "Call", "Move to the current accelerator with `.to(...)`", data)

    def rewrite(self, rx, original, updated, data):
        import libcst as cst

        from ..nodes import (
            device_string_with_index,
            is_none,
            quote_of,
            renamed_method,
            with_keyword,
        )

        args = list(updated.args)
        index_at = next((i for i, a in enumerate(args) if a.keyword is None or a.keyword.value == "device"), None)
        if index_at is not None and args[index_at].keyword is not None and args[index_at].keyword.value != "device":
            index_at = None
        if index_at is None or is_none(args[index_at].value):
            target = rx.device(original, data)
        else:
            value = args[index_at].value
            index = value.value if isinstance(value, cst.Integer) else value
            target = device_string_with_index(rx.device_type(original, data), index, quote_of(value))
        if index_at is None:
            args.insert(0, cst.Arg(value=target))
        else:
            args[index_at] = args[index_at].with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT, value=target)
        # `.cuda(i, True)`: the second positional argument is non_blocking, which `.to` takes by keyword.
        if len(args) > 1 and args[1].keyword is None:
            args[1] = with_keyword(args[1], "non_blocking")
        return renamed_method(updated, "to").with_changes(args=args)


FIXER = CudaCall()
