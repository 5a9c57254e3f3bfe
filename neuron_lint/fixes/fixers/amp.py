"""CUDA-only mixed precision -> ``torch.autocast`` / ``torch.amp.*`` on the current device.

- ``torch.cuda.amp.autocast(enabled, dtype, cache_enabled)`` -> ``torch.autocast(DEVICE.type, ...)``:
  its positional arguments are named, because ``torch.autocast`` takes the device type first;
- ``torch.cuda.amp.GradScaler(...)`` -> ``torch.amp.GradScaler(DEVICE.type, ...)`` (its other
  parameters keep their order after ``device``);
- ``torch.cuda.amp.custom_fwd`` / ``custom_bwd`` (decorators, bare or called) ->
  ``torch.amp.custom_fwd(device_type=DEVICE.type, ...)``: ``device_type`` is keyword-only and
  required there. A decorator runs when its function is defined, usually when the module is
  imported: in a library module that would probe the device at import, so it is only rewritten in
  scripts, inside functions, or with ``--device neuron``;
- ``torch.autocast("cuda")`` / ``device_type="cuda"`` / ``GradScaler("cuda")`` -> the device type
  (see :mod:`neuron_lint.fixes.device_literal`);
- ``from torch.cuda.amp import autocast, GradScaler``: rewriting a use asks LibCST to drop the
  import once nothing uses the name (so it disappears in the same run); the import finding itself
  is fixed (removed) only when none of its names is used.
"""

from __future__ import annotations

import ast

from ..device_choice import device_data, runs_at_import
from ..device_literal import plan_device_type

_AUTOCAST_POSITIONAL = ("enabled", "dtype", "cache_enabled")
_APIS = {
    "torch.cuda.amp.autocast": "autocast",
    "torch.cuda.amp.autocast_mode.autocast": "autocast",
    "torch.cuda.amp.GradScaler": "GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler": "GradScaler",
    "torch.cuda.amp.custom_fwd": "custom_fwd",
    "torch.cuda.amp.autocast_mode.custom_fwd": "custom_fwd",
    "torch.cuda.amp.custom_bwd": "custom_bwd",
    "torch.cuda.amp.autocast_mode.custom_bwd": "custom_bwd",
}
_TARGETS = {
    "autocast": "torch.autocast",
    "GradScaler": "torch.amp.GradScaler",
    "custom_fwd": "torch.amp.custom_fwd",
    "custom_bwd": "torch.amp.custom_bwd",
}


def _head(node) -> ast.Name | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node if isinstance(node, ast.Name) else None


def _import_of(ctx, name: str) -> list:
    """The ``[module, obj, asname]`` of the import binding ``name`` (for RemoveImportsVisitor), if
    ``name`` is bound by an import of ``torch.cuda...`` other than plain ``import torch``."""
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                if (a.asname or a.name) == name and node.module.startswith("torch.cuda"):
                    return [node.module, a.name, a.asname]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.asname == name and a.name.startswith("torch.cuda"):
                    return [a.name, None, a.asname]
    return []


def _is_decorator(ctx, node) -> bool:
    parent = ctx.parent(node)
    return isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and any(
        node is d for d in parent.decorator_list)


class Amp:
    name = "amp"

    def plan(self, ctx, hit):
        m = hit.match
        if m.kind == "imports":
            return self._plan_import(ctx, hit)
        if m.kind == "calls":  # torch.autocast("cuda") / device_type="cuda" / torch.amp.GradScaler("cuda")
            return plan_device_type(ctx, hit, hit.node)
        api = _APIS.get(hit.subject)
        if api is None:
            return None
        node = hit.node
        head = _head(node)
        imports = _import_of(ctx, head.id) if head is not None else []
        call = ctx.enclosing_call(node)
        if api in ("custom_fwd", "custom_bwd"):
            return self._plan_custom(ctx, hit, node, call, api, imports)
        if call is None:
            ctx.note(hit, f"not rewritten: `{ctx.segment(node)}` is used here without being called; "
                          f"use `{_TARGETS[api]}` with the device type by hand")
            return None
        if any(isinstance(a, ast.Starred) for a in call.args):
            ctx.note(hit, "not rewritten: the call unpacks `*args`, whose order the new API does not share")
            return None
        if api == "autocast" and len(call.args) > len(_AUTOCAST_POSITIONAL):
            return None
        data = device_data(ctx, hit, call)
        if data is None:
            return None
        message = ("Use `torch.autocast` with the current device type" if api == "autocast"
                   else "Use `torch.amp.GradScaler` with the current device type")
        return ctx.propose(hit, call, "Call", message, {**data, "mode": api, "imports": imports})

    def _plan_custom(self, ctx, hit, node, call, api, imports):
        """``@custom_fwd`` / ``@custom_fwd(cast_inputs=...)`` / ``custom_bwd(fn)``."""
        target = call if call is not None else node
        if call is None and not _is_decorator(ctx, node):
            ctx.note(hit, f"not rewritten: `{ctx.segment(node)}` is used here without being called")
            return None
        if call is not None and (any(isinstance(a, ast.Starred) for a in call.args)
                                 or any(k.arg in (None, "device_type") for k in call.keywords)):
            return None
        if not ctx.neuron and runs_at_import(ctx, target) and not ctx.is_script and ctx.device_variable is None:
            ctx.note(hit, f"not rewritten: `torch.amp.{api}` needs the device type when the decorated function is "
                          "defined, here when the module is imported, and a library module must not probe the "
                          "device then. Write `device_type=\"neuron\"` for Trainium (`device_type=\"cuda\"` keeps "
                          "today's behaviour: under Trainium autocast it does nothing), or fix with `--device neuron`")
            return None
        data = device_data(ctx, hit, target)
        if data is None:
            return None
        kind = "Call" if call is not None else type(node).__name__
        return ctx.propose(hit, target, kind, f"Use `torch.amp.{api}` with the current device type",
                           {**data, "mode": api, "imports": imports, "called": call is not None})

    def _plan_import(self, ctx, hit):
        stmt = hit.node
        if not isinstance(stmt, ast.ImportFrom) or stmt.level or not stmt.module:
            return None
        bound = {a.asname or a.name for a in stmt.names}
        if "*" in bound:
            return None
        used = sorted({n.id for n in ast.walk(ctx.tree) if isinstance(n, ast.Name) and n.id in bound})
        if used:
            ctx.note(hit, "the import goes when the uses of " + ", ".join(f"`{u}`" for u in used)
                          + " are rewritten (in the same run of `neuron-lint fix`)")
            return None
        return ctx.propose(hit, stmt, "ImportFrom", "Remove the unused CUDA AMP import",
                           {"mode": "import", "module": stmt.module, "names": [[a.name, a.asname] for a in stmt.names]})

    # ------------------------------------------------------------------ LibCST
    def rewrite(self, rx, original, updated, data):
        import libcst as cst

        from ..device_literal import rewrite_literal
        from ..nodes import keyword, with_keyword

        mode = data.get("mode")
        if mode == "import":
            for name, asname in data.get("names", ()):
                rx.remove_import_if_unused(data["module"], name, asname)
            return updated
        if mode not in _TARGETS:
            return rewrite_literal(rx, original, updated, data)
        func = rx.dotted(_TARGETS[mode], original)
        dev_type = rx.device_type(original, data)
        imports = data.get("imports") or ()
        if imports:
            module, obj, asname = imports
            rx.remove_import_if_unused(module, obj, asname)
        if mode in ("custom_fwd", "custom_bwd"):
            if not data.get("called"):
                return cst.Call(func=func, args=[keyword("device_type", dev_type)])
            args = list(updated.args)
            at = sum(1 for a in args if a.keyword is None and not a.star)
            args.insert(at, keyword("device_type", dev_type))
            return updated.with_changes(func=func, args=_commas(args))
        args = list(updated.args)
        if mode == "autocast":
            positional = [i for i, a in enumerate(args) if a.keyword is None and not a.star]
            if len(positional) > len(_AUTOCAST_POSITIONAL):
                from ..decline import Decline

                raise Decline("`autocast` takes at most three positional arguments")
            for name, i in zip(_AUTOCAST_POSITIONAL, positional):
                args[i] = with_keyword(args[i], name)
        first = cst.Arg(value=dev_type)
        args.insert(0, first)
        return updated.with_changes(func=func, args=_commas(args, updated.whitespace_before_args))


def _commas(args: list, before_args=None) -> list:
    """Every argument but the last followed by a comma (the new ones get ``, ``; when the call
    breaks its arguments over lines, a new first argument gets its own line)."""
    import libcst as cst

    out = []
    for i, a in enumerate(args):
        last = i == len(args) - 1
        if not last and not isinstance(a.comma, cst.Comma):
            after = (before_args if i == 0 and isinstance(before_args, cst.ParenthesizedWhitespace)
                     else cst.SimpleWhitespace(" "))
            a = a.with_changes(comma=cst.Comma(whitespace_after=after))
        out.append(a)
    return out


FIXER = Amp()
