"""``torch.cuda.X`` -> its device-agnostic equivalent (``torch.accelerator.X``, ``torch.Stream``, ...).

The rule's ``[fix.map]`` says, per qualified name, the ``target``, the PyTorch release that
introduced it (``since``; gated by ``--min-torch``), an ``args`` form and an optional ``safety``
that overrides the rule's. ``args`` says which calls carry over:

- ``any``: any arguments (the target takes the same ones);
- ``none``: no arguments;
- ``device``: at most one, the device (positionally or as ``device=``); the target takes it
  positionally only (``torch.accelerator.synchronize(device, /)``), so a keyword becomes positional;
- ``index``: at most one positional device index (``torch.cuda.device(i)``);
- ``stream`` / ``event``: no positional arguments, only the listed keywords.

``torch.cuda.is_available()`` is a device guard: it is rewritten only when everything it decides
is rewritten too (see :func:`neuron_lint.fixes.guard_settle.settle`), so that on Trainium the program
takes the branch meant for the accelerator and on CUDA the same branch as before.
``torch.cuda.manual_seed(_all)(s)`` next to ``torch.manual_seed(s)`` (which seeds every device) is removed, safely.
"""

from __future__ import annotations

import ast
import re

from ..count_uses import count_uses, counts_no_device
from ..cuda_only import dotted, only_described
from ..device_forms import index_of_kept_name
from ..device_holders import held_device_note
from ..duplicate_seeds import SEEDS, duplicate_seed, seed_guard_of
from ..guard_skips import skipped_test
from ..guard_subjects import cuda_rng_note
from ..guards import decided_region
from ..legacy_tensor import legacy_dtype, plan_legacy_tensor, rewrite_legacy_tensor
from ..stream_handles import STREAM_GETTERS, cuda_stream_needed
from .cuda_call import looks_like_index, set_negative

_KEYWORDS = {"stream": frozenset({"priority"}), "event": frozenset({"enable_timing", "blocking", "interprocess"})}
#: Where ``torch.accelerator`` lacks a call before the project's oldest PyTorch (memory statistics
#: need 2.9), the map's ``older`` target (the call on ``torch.get_device_module()``) serves from this
#: release, under the same availability test: ``torch.accelerator.is_available`` is new in 2.6.
OLDER_SINCE = "2.6"
_GUARD_WORDS = re.compile(r"is_available|device|\.is_cuda\b")


def _tests_the_device(ctx, node) -> bool:
    """Does the test ``node`` ask about the device (``torch.cuda.is_available()``, ``x.is_cuda``,
    ``device.type == ...``, a flag set from an availability test)? A flag of the user's options
    (OpenNMT's ``is_cuda = opt.gpu > -1``) and ``torch.version.cuda`` hold on a CPU-only host too."""
    if _GUARD_WORDS.search(ctx.segment(node).replace("version.cuda", "")):
        return True
    flags = {ctx.segment(n) for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute))
             and "cuda" in ctx.segment(n) and isinstance(getattr(n, "ctx", None), ast.Load)}
    if flags and "_nrn_flags" not in ctx.__dict__:  # once per module: the names set from an availability test
        ctx.__dict__["_nrn_flags"] = {ctx.segment(t) for n in ctx.walk(ctx.tree) if isinstance(n, ast.Assign)
                                      and "is_available" in ctx.segment(n.value) for t in n.targets}
    return bool(flags & ctx.__dict__.get("_nrn_flags", set()))


def _guarded(ctx, node) -> bool:
    """Is ``node`` in the body of an ``if`` (the true arm of ``... if ... else``, after an ``and``) that tests
    the device, of a ``with torch.cuda.device(i):`` or of a loop over the device count?"""
    child = node
    for p in ctx.ancestors(node):
        if isinstance(p, ast.BoolOp) and isinstance(p.op, ast.And):
            earlier = p.values[: next((i for i, v in enumerate(p.values) if v is child), 0)]
            if any(_tests_the_device(ctx, v) for v in earlier):
                return True
        if isinstance(p, ast.If) and any(s is child for s in p.body) and _tests_the_device(ctx, p.test):
            return True
        if isinstance(p, ast.IfExp) and p.body is child and _tests_the_device(ctx, p.test):
            return True
        if isinstance(p, ast.With) and any(s is child for s in p.body) and any(
                _enters_a_device(ctx, item.context_expr) for item in p.items):
            return True  # entering `torch.cuda.device(i)` raises on a host without CUDA
        if isinstance(p, ast.For) and any(s is child for s in p.body) and _over_the_devices(ctx, p.iter):
            return True  # `for i in range(torch.cuda.device_count()):` runs no body there
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return False
        child = p
    return False


def _enters_a_device(ctx, expr) -> bool:
    """``torch.cuda.device(i)`` (or ``torch.accelerator.device_index(i)``), ``i`` not None: a ``with`` needs that device."""
    return (isinstance(expr, ast.Call) and _names(ctx, expr.func, "torch.cuda.device", "torch.accelerator.device_index")
            and len(expr.args) == 1 and not expr.keywords
            and not (isinstance(expr.args[0], ast.Constant) and expr.args[0].value in (None, -1)))


def _over_the_devices(ctx, it) -> bool:
    """``range(torch.cuda.device_count())`` (or ``torch.accelerator``'s): empty without a device."""
    return (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
            and len(it.args) == 1 and isinstance(it.args[0], ast.Call) and not it.args[0].args
            and _names(ctx, it.args[0].func, "torch.cuda.device_count", "torch.accelerator.device_count"))


def _names(ctx, func, *wanted: str) -> bool:
    """Is ``func`` one of ``wanted``, by the module's imports or as written (FastChat's inner ``import torch``)?"""
    return ctx.qualname(func) in wanted or ".".join(dotted(func)) in wanted


def _alone_on_its_line(ctx, stmt) -> bool:
    line, col, end_line, end_col = ctx.span(stmt)
    after = ctx.lines.line(end_line)[end_col - 1:].strip()
    return not ctx.lines.line(line)[: col - 1].strip() and (not after or after.startswith("#"))


def _args_fit(call: ast.Call | None, form: str) -> bool:
    if form == "any":
        return True
    if call is None:
        return False
    args, kws = call.args, call.keywords
    if any(isinstance(a, ast.Starred) for a in args) or any(k.arg is None for k in kws):
        return False
    if form == "none":
        return not args and not kws
    if form == "device":
        # a `torch.cuda.device(i)` context object is a device to torch.cuda, not to torch.accelerator
        # (nanotron: `set_device_index(torch.cuda.device(i))` raised ValueError on CUDA)
        given = [*args, *(k.value for k in kws)]
        if any(isinstance(v, ast.Call) and ".".join(dotted(v.func)).endswith("cuda.device") for v in given):
            return False
        return len(args) + len(kws) <= 1 and all(k.arg in ("device", "device_index") for k in kws)
    if form == "index":
        if kws or len(args) > 1:
            return False
        return not args or (isinstance(args[0], ast.Constant) and args[0].value is None) or looks_like_index(args[0])
    return not args and all(k.arg in _KEYWORDS[form] for k in kws)


def _stats_key_read(ctx, call: ast.Call | None) -> str:
    """``memory_stats()["num_alloc_retries"]`` under a CUDA test, directly or through the name it is
    assigned to in the same function (composer's auto-microbatching): the first key read with
    ``[...]``, as written. (Unguarded, the original raises KeyError off CUDA too: torch.cuda's
    memory_stats() is {} there; under a CUDA test the rewritten test would let Trainium's allocator
    reach the read.)"""
    if call is None or not _guarded(ctx, call):
        return ""
    parent = ctx.parent(call)
    if isinstance(parent, ast.Subscript) and parent.value is call:
        return f"`{ctx.segment(parent.slice)}`"
    if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name)):
        return ""
    name = parent.targets[0].id
    scope = ctx.enclosing_function(call) or ctx.tree
    for n in ctx.walk(scope):
        if (isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == name
                and isinstance(n.ctx, ast.Load) and isinstance(n.slice, ast.Constant)):
            return f"`{ctx.segment(n)}`"
    return ""


def _as_guard(ctx, hit, call, target: str, data: dict, negated: bool = False, uses=()) -> tuple[bool, object]:
    """A device test (``is_available()``, a device count compared with a number) is rewritten only
    with everything it decides: ``(True, plan or None)`` when that settles it, else ``(False, None)``
    with the decided region put in ``data``. ``uses``: what decides code in its place, each with its
    negation (a device count's loop, or the uses of the name it is kept in: :func:`.count_uses.count_uses`)."""
    region = []
    for at, flipped in uses or [(call, negated)]:
        more, why = decided_region(ctx, at, negated=flipped)
        if more is None:
            ctx.note(hit, f"not rewritten: {why}" if at is call else f"not rewritten: line {at.lineno}: {why}")
            return True, None
        region += more
    data["region"] = region
    if skipped_test(ctx, call) is not None:
        # identical on CUDA; on Trainium the test now runs, and what it needs may be out of sight
        return True, ctx.propose(hit, hit.node, "Attribute" if isinstance(hit.node, ast.Attribute) else "Name",
                                 f"Use `{target}` (the test it skips then runs on Trainium too)", data, "unsafe")
    return False, None


def _device_idiom_plan(ctx, hit, call):
    """``"cuda" if torch.cuda.is_available() else "cpu"`` where no rule reports the ``"cuda"`` (it is
    stored in a name that does not look like a device, passed as ``default=``...): the guard and
    the string it chooses are one rewrite, as NRN202 does it."""
    from ..device_forms import literal_kind
    from ..device_idiom import device_call_arm, guarded_device_call, plan_guard

    guard, child = ctx.parent(call), call
    if isinstance(guard, ast.UnaryOp) and isinstance(guard.op, ast.Not):
        guard, child = ctx.parent(guard), guard
    if not (isinstance(guard, ast.IfExp) and guard.test is child):
        return None
    literal = guard.orelse if child is not call else guard.body
    inner = device_call_arm(ctx, literal) if child is call else None
    if inner is not None and guarded_device_call(ctx, inner) is guard:
        literal = inner  # `torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")`
    kind = literal_kind(literal)
    if kind is None and isinstance(literal, (ast.List, ast.Tuple, ast.BinOp)):
        from ..device_lists import plan_device_list

        return plan_device_list(ctx, hit, guard, literal, negated=child is not call)
    if kind not in ("plain", "indexed") or id(literal) in ctx.flagged:
        return None
    return plan_guard(ctx, hit, literal, guard, kind, "Use the current accelerator instead of CUDA",
                      fixer="device_string")


def _use_note(ctx, hit, call, target: str) -> str:
    """Why the way ``call``'s result is used keeps it as it is (the note), or ``""``."""
    if hit.subject in STREAM_GETTERS and call is not None:
        why = cuda_stream_needed(ctx, call)
        if why:
            return (f"not rewritten: {why}, and `{target}` returns a generic `torch.Stream`, which is "
                    "not a `torch.cuda.Stream` even on CUDA")
    key = _stats_key_read(ctx, call) if hit.subject == "torch.cuda.memory_stats" else ""
    if key:
        return (f"not rewritten: under a CUDA test the statistics are read by key ({key}), a key of "
                "CUDA's caching allocator; another device's allocator may not report it (a KeyError "
                "there). Read it with `.get(...)` first")
    held = hit.rule.fix.map[hit.subject].get("args") == "index" and call is not None and call.args and \
        held_device_note(ctx, call.args[0], target)  # Amphion's `args.local_rank`, a device
    if held:
        return held
    named = index_of_kept_name(ctx, call)
    if named:
        return (f"not rewritten: it is the index of `{named}`, a CUDA device name that stays as it is; "
                "rewritten alone, Trainium would get a CUDA device named by its own index. Port the "
                "name and its index together")
    beside = _ipc_collect_beside(ctx, call) if hit.subject == "torch.cuda.empty_cache" else None
    if beside is not None:
        return (f"not rewritten: `torch.cuda.ipc_collect()` beside it (line {beside.lineno}) frees CUDA's "
                "memory with it and has no device-agnostic form (it raises where CUDA is missing); "
                "rewritten alone, the pair would still fail on Trainium. Give other devices their own "
                "branch by hand")
    return ""


def _ipc_collect_beside(ctx, call) -> ast.stmt | None:
    """The ``torch.cuda.ipc_collect()`` statement right before or after the one of ``call`` (the
    ``torch_gc()`` of ChatGLM's and FastChat's servers, copied into many projects), or None."""
    stmt = ctx.parent(call) if call is not None else None
    block = ctx.block_of(stmt) if isinstance(stmt, ast.Expr) and stmt.value is call else None
    i = next((j for j, s in enumerate(block) if s is stmt), None) if block else None
    for other in (block[i - 1] if i else None, block[i + 1] if i is not None and i + 1 < len(block) else None):
        if (isinstance(other, ast.Expr) and isinstance(other.value, ast.Call)
                and ctx.qualname(other.value.func) == "torch.cuda.ipc_collect"):
            return other
    return None


class CudaApi:
    name = "cuda_api"

    def plan(self, ctx, hit):
        dtype = legacy_dtype(hit.subject)
        if dtype is not None:
            return plan_legacy_tensor(ctx, hit, dtype)
        entry = hit.rule.fix.map.get(hit.subject)
        if not isinstance(entry, dict):
            return None
        target, since = entry["target"], entry.get("since", "2.6")
        call = ctx.enclosing_call(hit.node)
        if hit.subject in SEEDS and call is not None:
            stmt = duplicate_seed(ctx, call)
            if stmt is not None:
                return ctx.propose(hit, stmt, "If" if isinstance(stmt, ast.If) else "Expr",
                                   "Remove: `torch.manual_seed` next to it already seeds every device",
                                   {"remove": True}, applicability="safe")
        safety = entry.get("safety")
        if not ctx.allows(since):
            older = entry.get("older")
            if older is None or not ctx.allows(OLDER_SINCE):
                ctx.note(hit, f"not rewritten: `{target}` needs PyTorch {since} and --min-torch is "
                              f"{ctx.settings.min_torch}; pass --min-torch {since} (TorchNeuron itself needs 2.13) "
                              "to get the rewrite")
                return None
            # the call on the current device's module: `torch.cuda` on CUDA, pre-release `torch.neuron`'s on Trainium
            target, safety = older, "unsafe"
        if entry.get("use") == "description" and call is not None and not only_described(ctx, call):
            ctx.note(hit, f"not rewritten: the result is read for more than its name and total memory "
                          f"(compute capability and the like are CUDA's own), which `{target}` may not offer")
            return None
        kept = _use_note(ctx, hit, call, target)
        if kept:
            ctx.note(hit, kept)
            return None
        form = entry.get("args", "any")
        if not _args_fit(call, form):
            ctx.note(hit, f"not rewritten: these arguments do not carry over to `{target}` unchanged")
            return None
        negative = set_negative(ctx, call.args[0]) if form == "index" and call is not None and call.args else None
        if negative is not None:
            ctx.note(hit, f"not rewritten: `{ast.unparse(call.args[0])}` is set to a negative index on line "
                          f"{negative.lineno}; `torch.cuda.device(-1)` does nothing, while `{target}(-1)` raises "
                          "on a host without an accelerator. Pass `None` for no device there first")
            return None
        data = {"target": target}
        if hit.subject == "torch.cuda.is_available":
            guard = seed_guard_of(ctx, call) if call is not None else None
            if guard is not None:  # removed with the duplicate seed it guards: the same fix
                return ctx.propose(hit, guard, "If", "Remove: `torch.manual_seed` next to it already seeds every device",
                                   {"remove": True}, applicability="safe")
            idiom = _device_idiom_plan(ctx, hit, call)
            if idiom is not None or id(hit) in ctx.notes:
                return idiom
            settled, plan = _as_guard(ctx, hit, call, target, data)
            if settled:
                return plan
        if hit.subject == "torch.cuda.device_count" and call is not None and isinstance(ctx.parent(call), ast.Compare):
            # `if torch.cuda.device_count() >= 2:`, `skipUnless(torch.cuda.device_count() > 1, ...)`: a
            # device guard like `is_available()` (on Trainium it now counts NeuronCores), rewritten only
            # with everything it decides.
            settled, plan = _as_guard(ctx, hit, call, target, data, negated=counts_no_device(ctx.parent(call), call))
            if settled:
                return plan
        if hit.subject == "torch.cuda.device_count" and call is not None and (uses := count_uses(ctx, call)):
            # `for i in range(torch.cuda.device_count()):` runs its body once per device: on Trainium
            # once per NeuronCore, so the body goes with it (fairscale's OSS asks each for its capability);
            # so do the loops and tests of a name the count is kept in
            settled, plan = _as_guard(ctx, hit, call, target, data, uses=uses)
            if settled:
                return plan
        if hit.subject == "torch.cuda.device_count" and call is not None and (rng := cuda_rng_note(ctx, call)):
            return ctx.note(hit, rng)
        node, kind = hit.node, "Attribute" if isinstance(hit.node, ast.Attribute) else "Name"
        if form == "device" and call is not None and call.keywords:
            node, kind = call, "Call"  # the target takes the device positionally only
        fallback = entry.get("off_accelerator")
        if fallback == "guard" and not (call is not None and _guarded(ctx, call)):
            # torch.cuda answers on a CPU-only host, the target raises there: only under a device test.
            ctx.note(hit, f"not rewritten: `{target}` raises on a host without an accelerator; "
                          "put it under `if torch.accelerator.is_available():` first")
            return None
        if fallback not in (None, "guard") and call is not None and not _guarded(ctx, call):
            # torch.cuda's memory calls do nothing on a host without CUDA; torch.accelerator's raise there.
            stmt = ctx.parent(call)
            if isinstance(stmt, ast.Expr) and _alone_on_its_line(ctx, stmt):
                node, kind = stmt, "SimpleStatementLine"
                data["guard"] = "statement"
            else:
                node, kind = call, "Call"
                data["guard"] = fallback
        return ctx.propose(hit, node, kind, f"Use `{target}`", data, safety)

    def rewrite(self, rx, original, updated, data):
        import libcst as cst

        if data.get("remove"):
            return cst.RemoveFromParent()
        if "dtype" in data:
            return rewrite_legacy_tensor(rx, original, updated, data)
        guard = data.get("guard")
        if isinstance(updated, cst.SimpleStatementLine):  # `if torch.accelerator.is_available(): <call>`
            call = updated.body[0].value
            new_call = self._call(rx, original.body[0].value, call, data)
            test = cst.Call(func=rx.dotted("torch.accelerator.is_available", original))
            line = updated.with_changes(body=[updated.body[0].with_changes(value=new_call)], leading_lines=[])
            return cst.If(test=test, body=cst.IndentedBlock(body=[line]), leading_lines=updated.leading_lines)
        if guard is not None and isinstance(updated, cst.Call):
            new_call = self._call(rx, original, updated, data)
            parent = rx.parent(original)
            # parentheses only where the conditional is part of a larger expression (as `ruff format` keeps them)
            whole = isinstance(parent, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return, cst.Arg, cst.Element))
            template = "{call} if {test}() else " + guard if whole else "({call} if {test}() else " + guard + ")"
            return rx.expression(template, call=new_call, test=rx.dotted("torch.accelerator.is_available", original))
        if isinstance(updated, cst.Call):
            return self._call(rx, original, updated, data)
        return self._target(rx, original, updated, data)

    def _call(self, rx, original, updated, data):
        import libcst as cst

        if isinstance(updated, cst.Call):  # `synchronize(device=d)` -> `synchronize(d)`
            args = [a.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT) for a in updated.args]
            return updated.with_changes(func=self._target(rx, original.func, updated.func, data), args=args)
        return self._target(rx, original, updated, data)

    @staticmethod
    def _target(rx, original, updated, data):
        import libcst as cst

        from ..nodes import attribute

        target = data["target"]
        if target.startswith("torch.get_device_module()."):
            head = rx.expression("{t}.get_device_module()", t=rx.dotted("torch", original))
            new = attribute(head, target.rsplit(".", 1)[1])
        else:
            new = rx.dotted(target, original)
        if isinstance(updated, cst.Name):
            _forget_import(rx, original)
        return new


def _forget_import(rx, name) -> None:
    """``from torch.cuda import synchronize``: drop the import once its last use is rewritten."""
    scope = rx.scope(name)
    if scope is None:
        return
    for access in scope.accesses[name.value]:
        for assignment in access.referents:
            node = getattr(assignment, "node", None)
            import libcst as cst

            if isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar):
                module = rx.code(node.module) if node.module is not None else ""
                for alias in node.names:
                    bound = alias.asname.name.value if alias.asname else alias.name.value
                    if bound == name.value:
                        rx.remove_import_if_unused(module, alias.name.value, alias.asname.name.value if alias.asname else None)
            return


FIXER = CudaApi()
