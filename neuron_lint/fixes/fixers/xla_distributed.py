"""NRN706: PyTorch/XLA distributed calls -> ``torch.distributed`` under torchrun.

See the rule's ``[fix] note`` for the list. Ranks come from the environment torchrun sets, with
the single-process defaults (``RANK`` 0, ``WORLD_SIZE`` 1) so a run without a launcher still works,
as the XLA calls did. Rank semantics are kept: ``is_master_ordinal()`` is the local rank 0,
``master_print`` the global one.
"""

from __future__ import annotations

import ast

from ..plan import dist_alias
from ..xla_common import (
    calls_init_process_group,
    dist_func,
    drop_import,
    env_int,
    fits,
    import_of,
    string_quote,
    wraps_model,
)

_ENV_LEN = {"RANK": len('int(os.environ.get("RANK", 0))'), "LOCAL_RANK": len('int(os.environ.get("LOCAL_RANK", 0))'),
            "WORLD_SIZE": len('int(os.environ.get("WORLD_SIZE", 1))')}

XM = "torch_xla.core.xla_model."
XR = "torch_xla.runtime."
_ENV = {
    XM + "get_ordinal": ("RANK", 0), XR + "global_ordinal": ("RANK", 0), XR + "process_index": ("RANK", 0),
    XM + "get_local_ordinal": ("LOCAL_RANK", 0), XR + "local_ordinal": ("LOCAL_RANK", 0),
    XM + "xrt_world_size": ("WORLD_SIZE", 1), XM + "world_size": ("WORLD_SIZE", 1), XR + "world_size": ("WORLD_SIZE", 1),
    XR + "process_count": ("WORLD_SIZE", 1),
}
_SPAWN = {"torch_xla.distributed.xla_multiprocessing.spawn": "RANK", "torch_xla.launch": "LOCAL_RANK",
          "torch_xla.torch_xla.launch": "LOCAL_RANK"}
#: ast parents under which a comparison needs no parentheses
_BARE = (ast.If, ast.While, ast.Assign, ast.AnnAssign, ast.Return, ast.keyword, ast.BoolOp, ast.IfExp, ast.Assert)


def _statement_call(ctx, hit):
    call = ctx.enclosing_call(hit.node)
    stmt = ctx.parent(call) if call is not None else None
    if isinstance(stmt, ast.Expr) and stmt.value is call:
        return call, stmt
    return call, None


class XlaDistributed:
    name = "xla_distributed"

    def plan(self, ctx, hit):
        if hit.match.kind == "matcher":
            return self._plan_backend(ctx, hit)
        q = hit.subject
        call = ctx.enclosing_call(hit.node)
        imp = import_of(ctx, hit.node)
        if call is None:
            ctx.note(hit, "not rewritten: the function is not called here")
            return None
        if q in _ENV:
            if call.args or call.keywords:
                ctx.note(hit, "not rewritten: the call has arguments")
                return None
            var, default = _ENV[q]
            if not fits(ctx, hit, call, _ENV_LEN[var]):
                return None
            return ctx.propose(hit, call, "Call", f"Read `{var}` from the environment (set by torchrun)",
                               {"mode": "env", "var": var, "default": default, "imp": imp,
                                "quote": string_quote(ctx, call)})
        if q == XM + "is_master_ordinal":
            local = True
            for k in call.keywords:
                if k.arg == "local" and isinstance(k.value, ast.Constant) and isinstance(k.value.value, bool):
                    local = k.value.value
                else:
                    ctx.note(hit, "not rewritten: an argument other than a literal `local=`")
                    return None
            if call.args:
                ctx.note(hit, "not rewritten: positional arguments")
                return None
            var = "LOCAL_RANK" if local else "RANK"
            if not fits(ctx, hit, call, _ENV_LEN[var] + 7):
                return None
            parens = not isinstance(ctx.parent(call), _BARE) and not (
                isinstance(ctx.parent(call), ast.UnaryOp) and isinstance(ctx.parent(call).op, ast.Not))
            return ctx.propose(hit, call, "Call", f"`{var} == 0` (is_master_ordinal defaults to the local rank)",
                               {"mode": "master", "var": var, "parens": parens, "imp": imp,
                                "quote": string_quote(ctx, call)})
        if q == XM + "master_print":
            call, stmt = _statement_call(ctx, hit)
            if stmt is None or len(call.args) != 1 or call.keywords or isinstance(call.args[0], ast.Starred):
                ctx.note(hit, "not rewritten: only `xm.master_print(value)` as a statement of its own")
                return None
            if any(s is not stmt and s.lineno == stmt.lineno for s in _block(ctx, stmt)):
                ctx.note(hit, "not rewritten: other statements share its line")
                return None
            if not fits(ctx, hit, call, len(ctx.segment(call.args[0])) + 7, indent=4):
                return None
            return ctx.propose(hit, stmt, "SimpleStatementLine", "Print on the global rank 0",
                               {"mode": "print", "imp": imp})
        if q == XM + "rendezvous":
            call, stmt = _statement_call(ctx, hit)
            if stmt is None or len(call.args) > 1 or call.keywords:
                ctx.note(hit, "not rewritten: a rendezvous that exchanges a payload needs `dist.all_gather_object`")
                return None
            applicability = None if calls_init_process_group(ctx) else "unsafe"
            if applicability:
                ctx.note(hit, "`dist.barrier()` needs an initialised process group, and this module does not call "
                              "`init_process_group`")
            return ctx.propose(hit, call, "Call", "Use `dist.barrier()`",
                               {"mode": "barrier", "dist": dist_alias(ctx), "imp": imp}, applicability)
        if q == XM + "optimizer_step":
            return self._plan_step(ctx, hit, imp)
        if q in _SPAWN:
            return self._plan_spawn(ctx, hit, q, imp)
        ctx.note(hit, "not rewritten: port the collective by hand (see the suggestion)")
        return None

    def _plan_step(self, ctx, hit, imp):
        call, stmt = _statement_call(ctx, hit)
        if stmt is None or not call.args or isinstance(call.args[0], ast.Starred) or len(call.args) > 1:
            ctx.note(hit, "not rewritten: only `xm.optimizer_step(optimizer)` as a statement of its own")
            return None
        kwargs = None
        for k in call.keywords:
            if k.arg == "optimizer_args":
                kwargs = True
            elif k.arg == "barrier":
                continue
            else:
                ctx.note(hit, f"not rewritten: `{k.arg}=` has no direct native counterpart")
                return None
        wrapper = wraps_model(ctx)
        applicability = None
        message = f"`optimizer.step()`: {wrapper} averages the gradients during backward"
        if wrapper is None:
            applicability = "unsafe"
            message = ("`optimizer.step()` without the gradient all-reduce `xm.optimizer_step` did: wrap the model in "
                       "DDP/FSDP, or before `step()` run `for p in model.parameters(): dist.all_reduce(p.grad); "
                       "p.grad /= dist.get_world_size()` (each rank otherwise trains alone)")
            ctx.note(hit, "the module wraps no model in DistributedDataParallel/FSDP: " + message)
        return ctx.propose(hit, call, "Call", message, {"mode": "step", "kwargs": bool(kwargs), "imp": imp}, applicability)

    def _plan_spawn(self, ctx, hit, q, imp):
        call, stmt = _statement_call(ctx, hit)
        if stmt is None or not call.args or isinstance(call.args[0], ast.Starred):
            ctx.note(hit, "not rewritten: only a `spawn(fn, args=(...))` statement")
            return None
        args = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "args"), None)
        for k in call.keywords:
            if k.arg not in ("args", "nprocs", "start_method", "join", "daemon"):
                ctx.note(hit, f"not rewritten: `{k.arg}=`")
                return None
        if len(call.args) > 2:
            ctx.note(hit, "not rewritten: positional arguments after `args`")
            return None
        var = _SPAWN[q]
        if not fits(ctx, hit, call, len(ctx.segment(call)) + 30):
            return None
        return ctx.propose(hit, call, "Call",
                           f"Call the worker directly with `{var}`; launch with `torchrun --nproc_per_node=<NeuronCores>`",
                           {"mode": "spawn", "var": var, "imp": imp,
                            "tuple": isinstance(args, ast.Tuple), "has_args": args is not None},
                           "unsafe")

    def _plan_backend(self, ctx, hit):
        node = hit.node
        if node.value.startswith("xla://"):
            return ctx.propose(hit, node, "SimpleString", "Initialise from the environment torchrun sets", {"mode": "env_init"})
        if ctx.neuron:
            return ctx.propose(hit, node, "SimpleString", "Use the `neuron` process-group backend", {"mode": "neuron"})
        if not ctx.allows("2.6"):
            ctx.note(hit, "not rewritten: `get_default_backend_for_device` needs PyTorch 2.6 (--min-torch)")
            return None
        data = ctx.device_or_note(hit, node)
        if data is None:
            return None
        if not fits(ctx, hit, node, len("dist.get_default_backend_for_device(DEVICE)")):
            return None
        return ctx.propose(hit, node, "SimpleString", "Use the backend registered for the current device",
                           {**data, "mode": "backend", "dist": dist_alias(ctx)})

    # ------------------------------------------------------------------ LibCST
    def rewrite(self, rx, original, updated, data):
        import libcst as cst
        from libcst.helpers import parse_template_statement

        from ..nodes import attribute, quote_of, string

        mode = data.get("mode")
        drop_import(rx, data)
        if mode == "env_init":
            return string("env://", quote_of(updated))
        if mode == "neuron":
            return string("neuron", quote_of(updated))
        if mode == "backend":
            return cst.Call(func=dist_func(rx, data, "get_default_backend_for_device", original),
                            args=[cst.Arg(rx.device(original, data))])
        if mode == "env":
            return env_int(rx, data["var"], data["default"], data.get("quote") or '"')
        if mode == "master":
            cmp = rx.expression("{v} == 0", v=env_int(rx, data["var"], 0, data.get("quote") or '"'))
            if data.get("parens"):
                cmp = cmp.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            return cmp
        if mode == "print":
            value = updated.body[0].value.args[0].value
            module = rx.module.tree
            stmt = parse_template_statement(
                "if {rank} == 0:\n" + module.default_indent + "print({value})\n",
                config=module.config_for_parsing, rank=env_int(rx, "RANK", 0), value=value,
            )
            return stmt.with_changes(leading_lines=updated.leading_lines)
        if mode == "barrier":
            return cst.Call(func=dist_func(rx, data, "barrier", original))
        if mode == "step":
            opt = updated.args[0].value
            args = []
            for a in updated.args[1:]:
                if a.keyword is not None and a.keyword.value == "optimizer_args":
                    args.append(cst.Arg(value=a.value, star="**"))
            return cst.Call(func=attribute(opt, "step"), args=args)
        if mode == "spawn":
            fn = updated.args[0].value
            new_args = [cst.Arg(env_int(rx, data["var"], 0))]
            if data.get("has_args"):
                src = updated.args[1].value if len(updated.args) > 1 and updated.args[1].keyword is None else next(
                    a.value for a in updated.args if a.keyword is not None and a.keyword.value == "args")
                if data.get("tuple") and isinstance(src, cst.Tuple):
                    new_args += [cst.Arg(e.value) for e in src.elements]
                else:
                    new_args.append(cst.Arg(value=src, star="*"))
            for i in range(len(new_args) - 1):
                new_args[i] = new_args[i].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            new_args[-1] = new_args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return cst.Call(func=fn, args=new_args)
        from ..decline import Decline

        raise Decline(f"unknown mode {mode}")


def _block(ctx, stmt):
    return ctx.block_of(stmt) or [stmt]


FIXER = XlaDistributed()
