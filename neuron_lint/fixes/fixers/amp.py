"""CUDA-only mixed precision -> ``torch.autocast`` / ``torch.amp.*`` on the current device.

- ``torch.cuda.amp.autocast(enabled, dtype, cache_enabled)`` -> ``torch.autocast(DEVICE.type, ...)``:
  its positional arguments are named, float16 spelled out (float16 goes with its loss scalers: :mod:`..loss_scalers`);
- ``torch.cuda.amp.GradScaler(...)`` -> ``torch.amp.GradScaler(DEVICE.type, ...)`` (its other parameters keep their order);
- ``torch.cuda.amp.custom_fwd`` / ``custom_bwd`` (decorators, bare or called) ->
  ``torch.amp.custom_fwd(device_type=DEVICE.type, ...)``: ``device_type`` is keyword-only and
  required there. A decorator runs when its function is defined, usually when the module is
  imported: in a library module that would probe the device at import, so it is only rewritten in
  scripts, inside functions, or with ``--device neuron``;
- ``torch.autocast("cuda")`` / ``device_type="cuda"`` / ``GradScaler("cuda")`` -> the device type
  (see :mod:`neuron_lint.fixes.device_literal`). As a decorator in a library module that is left
  (it runs at import), except ``@autocast("cuda", enabled=False)``: "no autocast in this function"
  on any device, so the decorator goes and the body goes into ``with autocast(<device type>,
  enabled=False):``, which asks for the device at call time (innermost decorator of a plain
  function only: a generator's body was never covered by the decorator);
- ``from torch.cuda.amp import autocast, GradScaler``: rewriting a use asks LibCST to drop the import once
  nothing uses the name (so it goes in the same run); the import's own finding is fixed only when none is used.
"""

from __future__ import annotations

import ast

from ..amp_enabled import off_on_cpu
from ..device_choice import device_data, runs_at_import
from ..device_literal import plan_device_type
from ..keyword_args import with_commas
from ..loss_scalers import scaled_with as _scaled_with
from ..loss_scalers import handed_scaler_note

_AUTOCAST_POSITIONAL = ("enabled", "dtype", "cache_enabled")
_KWARGS_NOTE = ("not rewritten: the call passes `**kwargs`, which may hold `enabled`; the rewrite has to pass "
                "`enabled=<device type> != \"cpu\"` (the CUDA object is off on a host without CUDA, the CPU one "
                "would not be), so write it by hand")
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
    for node in ctx.walk(ctx.tree):
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


#: ``torch.autocast``'s parameters, in order.
_AUTOCAST_PARAMS = ("device_type", "dtype", "enabled", "cache_enabled")


def _disabling_decorator(ctx, node):
    """``(call, function)`` when ``node`` is the ``"cuda"`` device type of ``@torch.autocast("cuda",
    enabled=False)`` (``torch.amp.autocast``, ``from torch.amp import autocast``) decorating a function."""
    parent = ctx.parent(node)
    call = ctx.parent(parent) if isinstance(parent, ast.keyword) else parent
    fn = ctx.parent(call)
    if not (isinstance(call, ast.Call) and isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and any(d is call for d in fn.decorator_list)):
        return None
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    given = dict(zip(_AUTOCAST_PARAMS, call.args)) | {k.arg: k.value for k in call.keywords}
    enabled = given.get("enabled")
    if not (given.get("device_type") is node and isinstance(node, ast.Constant) and node.value == "cuda"
            and isinstance(enabled, ast.Constant) and enabled.value is False):
        return None
    return call, fn


def _own_nodes(fn):
    """The nodes of ``fn``'s body, not those of functions, lambdas or classes defined in it."""
    todo = list(fn.body)
    while todo:
        n = todo.pop()
        yield n
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(n))


def _plan_disabling_decorator(ctx, hit, call, fn):
    """``@autocast("cuda", enabled=False)`` on a function of a library module: "no autocast in this
    function". The decorator runs at import, where a library may not ask for the device, so the
    function's body goes into ``with autocast(<current device type>, enabled=False):`` instead, which
    asks at call time: on CUDA the same autocast state as before, on Trainium Neuron autocast is off
    there (the decorator left it on), on a CPU-only host CPU autocast."""
    why = ""
    if not isinstance(fn, ast.FunctionDef):
        why = "it decorates a class or an async function"
    elif fn.decorator_list[-1] is not call:
        why = "other decorators sit between it and the function; move it next to `def` first"
    elif any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in _own_nodes(fn)):
        why = "the function is a generator (the decorator does not cover its body; a `with` would)"
    elif fn.body[0].lineno == fn.lineno:
        why = "the function's body shares the `def` line"
    if why:
        ctx.note(hit, f"{ctx.notes[id(hit)]}. The decorator only disables autocast, which could also be written "
                      f"inside the function at call time, but not here: {why}")
        return None
    data = device_data(ctx, hit, fn.body[0])  # nothing of the function is assigned before it
    if data is None:
        return None
    ctx.notes.pop(id(hit), None)
    device = "keyword" if any(k.arg == "device_type" for k in call.keywords) else "positional"
    return ctx.propose(hit, fn, "FunctionDef", "Disable autocast on the current device inside the function "
                       "(`with ...(enabled=False):` runs at call time; a decorator runs at import)",
                       {**data, "mode": "disabling_decorator", "where": device})


def _with_the_call(ctx, hit, fix):
    """``torch.autocast("cuda", ...)`` / ``GradScaler("cuda")``: the device type and the ``enabled``
    that keeps it off on a CPU-only host (see :func:`.amp_enabled.off_on_cpu`) are one rewrite of the call."""
    if fix is None:
        return None
    data = dict(fix.data)
    parent = ctx.parent(hit.node)
    call = ctx.parent(parent) if isinstance(parent, ast.keyword) else parent
    if data.get("mode") != "literal" or not isinstance(call, ast.Call) or call.func is hit.node:
        return fix
    name = ctx.qualname(call.func)
    scaler = name.rsplit(".", 1)[-1] == "GradScaler"
    if not (scaler or name.rsplit(".", 1)[-1] == "autocast"):
        return fix
    if any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
        ctx.note(hit, _KWARGS_NOTE)
        return None
    where = ["keyword", parent.arg] if isinstance(parent, ast.keyword) else ["position", call.args.index(hit.node)]
    tied = {} if scaler else _scaled_with(ctx, call)
    return ctx.propose(hit, call, "Call", fix.message, {**tied, "mode": "literal_call", "literal": data, "where": where,
                                                        "enabled_at": 5 if scaler else 2},
                       applicability=fix.applicability)


class Amp:
    name = "amp"

    def plan(self, ctx, hit):
        m = hit.match
        if m.kind == "imports":
            return self._plan_import(ctx, hit)
        if m.kind == "matcher":  # torch.amp.GradScaler() / GradScaler(enabled=...): CUDA's by default
            call = ctx.parent(hit.node)
            data = device_data(ctx, hit, call)
            return data and ctx.propose(hit, call, "Call", "Give the scaler the current device type",
                                        {**data, "mode": "default_scaler"})
        if m.kind == "calls":  # torch.autocast("cuda") / device_type="cuda" / torch.amp.GradScaler("cuda")
            fix = plan_device_type(ctx, hit, hit.node)
            if fix is None and id(hit) in ctx.notes:
                decorated = _disabling_decorator(ctx, hit.node)
                if decorated is not None:
                    return _plan_disabling_decorator(ctx, hit, *decorated) or fix
            return _with_the_call(ctx, hit, fix)
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
        if api in ("autocast", "GradScaler") and any(k.arg is None for k in call.keywords):
            ctx.note(hit, _KWARGS_NOTE)
            return None
        data = device_data(ctx, hit, call)
        if data is None:
            return None
        message = ("Use `torch.autocast` with the current device type" if api == "autocast"
                   else "Use `torch.amp.GradScaler` with the current device type")
        if api == "autocast":
            tied = _scaled_with(ctx, call)
            if not tied and (handed := handed_scaler_note(ctx, call)):
                return ctx.note(hit, handed)  # (None: no plan)
            data = {**data, **tied}
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
        used = sorted({n.id for n in ctx.walk(ctx.tree) if isinstance(n, ast.Name) and n.id in bound})
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
        if mode == "disabling_decorator":
            return _rewrite_disabling_decorator(rx, original, updated, data)
        if mode == "literal_call":
            return _rewrite_literal_call(rx, original, updated, data)
        if mode == "default_scaler":  # the device type first, and off on a CPU-only host as CUDA's was
            dev_type = rx.device_type(original, data)
            args = off_on_cpu([cst.Arg(value=dev_type), *updated.args], dev_type,
                               rx.on_an_accelerator(dev_type, original), 5)
            return updated.with_changes(args=with_commas(args, updated.whitespace_before_args))
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
            return updated.with_changes(func=func, args=with_commas(args))
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
        if mode == "autocast":
            args = _device_dtype(rx, args, dev_type)
            args = _cuda_default_dtype(rx, args, original)
        args = off_on_cpu(args, dev_type, rx.on_an_accelerator(dev_type, original), 5 if mode == "GradScaler" else None)
        return updated.with_changes(func=func, args=with_commas(args, updated.whitespace_before_args))


def _rewrite_literal_call(rx, original, updated, data):
    """``torch.autocast("cuda", ...)`` -> ``torch.autocast(<device type>, ..., enabled=<device type> != "cpu")``."""
    from ..decline import Decline
    from ..device_literal import rewrite_literal
    from ..nodes import quote_of

    how, which = data["where"]
    args = list(updated.args)
    if how == "keyword":
        at = next((i for i, a in enumerate(args) if a.keyword is not None and a.keyword.value == which), None)
    else:
        positional = [i for i, a in enumerate(args) if a.keyword is None and not a.star]
        at = positional[which] if which < len(positional) else None
    if at is None:
        raise Decline("the call's device type is not where it was planned")
    literal = dict(data["literal"])
    new_type = rewrite_literal(rx, original.args[at].value, args[at].value, literal)
    args[at] = args[at].with_changes(value=new_type)
    if data["enabled_at"] == 2:  # autocast, not GradScaler
        args = _device_dtype(rx, args, new_type)
    off = rx.on_an_accelerator(new_type, original, quote_of(original.args[at].value))
    args = off_on_cpu(args, new_type, off, data["enabled_at"])
    return updated.with_changes(args=with_commas(args, updated.whitespace_before_args))


def _rewrite_disabling_decorator(rx, original, updated, data):
    """Drop the innermost decorator ``@autocast("cuda", enabled=False)`` and wrap the body (after its
    docstring) in ``with autocast(<device type>, enabled=False):``."""
    import libcst as cst

    from ..decline import Decline

    if not updated.decorators or not isinstance(updated.body, cst.IndentedBlock) or not original.body.body:
        raise Decline("the function is not the planned one any more")
    decorator = updated.decorators[-1]
    call = decorator.decorator
    if not isinstance(call, cst.Call):
        raise Decline("the decorator is not the planned call")
    args = list(call.args)
    if data["where"] == "keyword":
        at = next((i for i, a in enumerate(args) if a.keyword is not None and a.keyword.value == "device_type"), None)
    else:
        at = 0 if args and args[0].keyword is None else None
    if at is None or not isinstance(args[at].value, cst.SimpleString) or args[at].value.evaluated_value != "cuda":
        raise Decline("the decorator's device type is not the planned \"cuda\"")
    # the first statement: the `with` comes before anything the function assigns (a local `device`)
    args[at] = args[at].with_changes(value=rx.device_type(original.body.body[0], data))
    statements = list(updated.body.body)
    head = []
    first = statements[0]
    if (isinstance(first, cst.SimpleStatementLine) and len(first.body) == 1 and isinstance(first.body[0], cst.Expr)
            and isinstance(first.body[0].value, (cst.SimpleString, cst.ConcatenatedString))):
        head.append(statements.pop(0))  # the docstring stays the function's docstring
    if not statements:
        raise Decline("the function has nothing but a docstring")
    # The blank lines above the first statement stay above the `with`; its comments go in with it.
    lines = list(statements[0].leading_lines)
    blank = 0
    while blank < len(lines) and lines[blank].comment is None:
        blank += 1
    statements[0] = statements[0].with_changes(leading_lines=lines[blank:])
    block = cst.With(items=[cst.WithItem(item=call.with_changes(args=args))], body=cst.IndentedBlock(body=statements),
                     leading_lines=lines[:blank])
    return updated.with_changes(
        decorators=updated.decorators[:-1],
        lines_after_decorators=[*decorator.leading_lines, *updated.lines_after_decorators],
        body=updated.body.with_changes(body=[*head, block]),
    )


def _device_dtype(rx, args: list, dev_type) -> list:
    """``dtype=torch.get_autocast_gpu_dtype()`` (CUDA's autocast dtype, whatever the device) becomes
    ``dtype=torch.get_autocast_dtype(<device type>)``: the same dtype on CUDA, the device's own on
    Trainium (generative-models' ``autocast`` wrapper passed CUDA's float16 to the Neuron autocast)."""
    import libcst as cst

    torch = rx.module.torch or "torch"
    for n, a in enumerate(args):
        v = a.value
        if (a.keyword is not None and a.keyword.value == "dtype" and isinstance(v, cst.Call) and not v.args
                and isinstance(v.func, cst.Attribute) and v.func.attr.value == "get_autocast_gpu_dtype"
                and isinstance(v.func.value, cst.Name) and v.func.value.value == torch):
            new = v.with_changes(func=v.func.with_changes(attr=cst.Name("get_autocast_dtype")),
                                 args=[cst.Arg(value=dev_type.deep_clone())])
            args[n] = a.with_changes(value=new)
    return args


def _cuda_default_dtype(rx, args: list, original) -> list:
    """``dtype=torch.float16`` (CUDA autocast's own default; ``torch.autocast`` would take the dtype of one
    around it) unless the call gives a dtype, may (``**kwargs``) or is off (PixArt's attention)."""
    import libcst as cst

    from ..nodes import keyword

    if any(a.star == "**" or (a.keyword is not None and a.keyword.value == "dtype") for a in args):
        return args
    if any(a.keyword is not None and a.keyword.value == "enabled" and isinstance(a.value, cst.Name)
           and a.value.value == "False" for a in args):
        return args
    return [args[0], keyword("dtype", rx.dotted("torch.float16", original)), *args[1:]]


FIXER = Amp()
