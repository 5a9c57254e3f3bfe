"""The code a CUDA test that stays decides stays too.

When a ``torch.cuda.is_available()`` check or a ``device.type == "cuda"`` comparison keeps its CUDA
spelling (its finding has a note and no fix: the project's own operators need the CPU path, a later
branch serves another device, the branch names GPU machinery...), the body of its ``if`` (the arm of
its ``a if test else b``, what follows its ``assert`` or its ``if not ...: return``, the ``if`` of a flag
set from it) runs on CUDA only. A rewrite there changes
nothing on CUDA, never runs on Trainium, and where it does something different (mmengine's bfloat16
check asked of the CPU module, fairseq's LM moved while its test kept it on the CPU) it is wrong.
Those fixes are dropped with a note: the test and its code are ported together or not at all. Where
an availability check's code places something on CUDA, that stays on the CPU on Trainium, and so
does every other placement of its class (or function): moved to the accelerator, they would meet it
there on another device (fairseq's LM in OFA, read set 65: the model kept on the CPU, its inputs
sent to neuron). Where its code wraps the model in DistributedDataParallel, the process group its
class sets up (the NCCL backend, the rank's ``set_device``) stays too. A test another fix rewrites
together with its choice is not one that stays.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace

#: The findings whose kept test keeps its code: availability checks and CUDA comparisons.
TEST_CODES = ("NRN203", "NRN211")


def keep_decided(ctx, findings: list, nodes: list, walked_only: set) -> list:
    """``findings`` (with the ast ``nodes`` they were found at) less the fixes of CUDA-specific code
    that a kept CUDA test decides."""
    areas, scopes, wrapping = [], [], []
    # the spans other fixes rewrite whole (a choice rewritten with its test: nanoGPT's
    # `'cuda' if 'cuda' in device else 'cpu'`, whose `in` has no rewrite of its own)
    rewritten = [g.fix.target for g in findings if g.fix is not None and len(g.fix.target) >= 4]
    for f, node in zip(findings, nodes):
        if f.fix is not None or not f.fix_note or id(f) in walked_only or f.code not in TEST_CODES:
            continue
        if f.code == "NRN203" and not f.message.startswith("`torch.cuda.is_available`"):
            continue
        if any(_within(f, t) for t in rewritten):
            continue
        arm = _cuda_arm(ctx, node)
        skipped = None if arm is not None else _skipped_unless(ctx, node)
        # a skipped test is a whole of its own (the other tests of its class are not beside it), and
        # past a failed assert nothing runs: neither holds the other placements of its scope
        whole = skipped is None and not _asserted(ctx, node)
        for arm in [arm] if arm is not None else [skipped] if skipped is not None else _flag_arms(ctx, node):
            first, last = ctx.span(arm[0]), ctx.span(arm[-1])
            area = (first[0], first[1], last[2], last[3], f.line, ctx.segment(node).splitlines()[0][:60])
            areas.append(area)
            if f.code == "NRN203" and whole and any(g.code in _PLACING and _within(g, area) for g in findings):
                # what an availability check places stays on the CPU on Trainium: so does every placement
                # of its class (or function)
                scope = _scope(ctx, node)
                if scope is not None:
                    scopes.append((*scope, f.line, area[5]))
            if f.code == "NRN203" and whole and any(_wraps_ddp(g) and _within(g, area) for g in findings):
                # it decides where the model is wrapped in DistributedDataParallel: the process group of
                # its class (or function) is set up for CUDA with it (se3_diffusion's Experiment, set 88)
                scope = _scope(ctx, node)
                if scope is not None:
                    wrapping.append((*scope, f.line, area[5]))
    areas += _tensor_type_tests(ctx)
    kept_calls = _kept_cuda_calls(ctx, findings, nodes)
    if not areas and not kept_calls:
        return findings
    def held(f, spans):
        return next((s for s in spans if _within(f, s)), None)

    out = []
    for f, node in zip(findings, nodes):
        inside = f.fix is not None and f.code.startswith("NRN2") and next((a for a in areas if _within(f, a)), None)
        stored = f.fix is not None and not inside and areas and _stored_for(ctx, f, node, areas)
        argument = f.fix is not None and f.code.startswith("NRN2") and held(f, kept_calls)
        beside = f.fix is not None and not inside and f.code in _PLACING and held(f, scopes)
        group = f.fix is not None and not inside and not beside and _sets_up_group(f) and held(f, wrapping)
        if inside:
            f = replace(f, fix=None, fix_note=(
                f"not rewritten: it runs only where `{inside[5]}` (line {inside[4]}) holds, and that test stays as it "
                "is: rewritten alone, it would change nothing on CUDA and never run on Trainium. Port the test and "
                "this code together"))
        elif argument:
            f = replace(f, fix=None, fix_note=(
                f"not rewritten: it is an argument of `{argument[5]}` (line {argument[4]}), which has no "
                "device-agnostic form and stays: rewritten alone, it changes nothing on CUDA, and on Trainium "
                "that call still fails. Port the call and its arguments together"))
        elif stored:
            area, name = stored
            f = replace(f, fix=None, fix_note=(
                f"not rewritten: it is stored in `{name}`, read only where `{area[5]}` (line {area[4]}) holds, and that "
                "test stays as it is: rewritten alone, it would change nothing on CUDA and never reach Trainium. Port "
                "the test and this value together"))
        elif beside:
            f = replace(f, fix=None, fix_note=(
                f"not rewritten: `{beside[5]}` (line {beside[4]}) stays as it is, so on Trainium what it places stays on "
                "the CPU; moved to the accelerator, this would meet it there on another device. Port them together"))
        elif group:
            f = replace(f, fix=None, fix_note=(
                f"not rewritten: `{group[5]}` (line {group[4]}) stays as it is, and it decides where the model is "
                "wrapped in DistributedDataParallel; with the process group set up for the accelerator alone, "
                "Trainium's ranks would each train a copy of their own, unwrapped. Port them together"))
        out.append(f)
    return out


def _kept_cuda_calls(ctx, findings: list, nodes: list) -> list[tuple]:
    """The argument areas of the CUDA calls that stay for want of a device-agnostic form (NRN204):
    Metric3D's ``torch.cuda.get_device_properties(torch.cuda.current_device()).major`` (read set
    116), whose inner call, rewritten alone, would never reach Trainium."""
    out = []
    for f, node in zip(findings, nodes):
        if f.code != "NRN204" or f.fix is not None or node is None:
            continue
        call = ctx.parent(node)
        if not (isinstance(call, ast.Call) and call.func is node and (call.args or call.keywords)):
            continue
        spans = [ctx.span(a) for a in (*call.args, *(k.value for k in call.keywords))]
        first, last = min(spans), max(spans, key=lambda s: (s[2], s[3]))
        out.append((first[0], first[1], last[2], last[3], f.line, ctx.segment(node)[:60]))
    return out


def _stored_for(ctx, f, node, areas: list) -> tuple | None:
    """``(area, name)``: the area of a kept test where the device string at ``node``, stored in a name
    by a statement of its own, is read, when it is read nowhere else: seed-vc's ``cuda_target = f"cuda:{args.gpu}" if
    args.gpu else "cuda"`` before ``if torch.cuda.is_available(): device = torch.device(cuda_target)``,
    kept for the project's CUDA operators (read set 115). Rewritten alone, the name would never reach
    Trainium."""
    if f.code not in _STORED or node is None:
        return None
    stmt = ctx.parent(node)
    while stmt is not None and not isinstance(stmt, ast.stmt):
        stmt = ctx.parent(stmt)
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
        return None
    name = stmt.targets[0].id
    reads = [n for n in ctx.walk(ctx.enclosing_function(stmt) or ctx.tree)
             if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
    if not reads:
        return None
    held = set()
    for n in reads:
        line, col = n.lineno, n.col_offset
        area = next((a for a in areas if (a[0], a[1]) <= (line, col) <= (a[2], a[3])), None)
        if area is None:
            return None
        held.add(area)
    return (next(iter(held)), name) if len(held) == 1 else None


#: The device strings whose value may be stored in a name for the code a kept test decides.
_STORED = ("NRN202", "NRN213")


def _wraps_ddp(f) -> bool:
    """Is ``f`` the CUDA ``device_ids`` of a ``DistributedDataParallel`` wrap?"""
    return f.code == "NRN206" and f.message.startswith("`device_ids`")


def _sets_up_group(f) -> bool:
    """Is ``f`` part of a process group's setup for CUDA: its NCCL backend or the rank's ``set_device``?"""
    return (f.code in ("NRN206", "NRN213") and "nccl" in f.message.lower()) or (
        f.code == "NRN203" and f.message.startswith("`torch.cuda.set_device`"))


#: How a module names a CUDA tensor type: ``torch.cuda.FloatTensor``, or ``torch.cuda`` imported from.
_CUDA_TENSOR_TYPE = re.compile(r"cuda\.\w*Tensor\b|from\s+torch\.cuda\s+import|import\s+torch\.cuda\s+as")


def _tensor_type_tests(ctx) -> list[tuple]:
    """The areas of ``if isinstance(x, torch.cuda.FloatTensor):`` bodies (MedicalNet's shortcut, set
    80): a test no rule rewrites, true of CUDA tensors only, so what it decides is CUDA's alone."""
    if "isinstance" not in ctx.text or not _CUDA_TENSOR_TYPE.search(ctx.text):
        return []  # (asked of every module with fixes: most name no CUDA tensor type)
    areas = []
    for n in ctx.walk(ctx.tree):
        if not (isinstance(n, ast.If) and n.body and isinstance(n.test, ast.Call)
                and getattr(n.test.func, "id", "") == "isinstance" and len(n.test.args) == 2):
            continue
        kinds = n.test.args[1].elts if isinstance(n.test.args[1], ast.Tuple) else [n.test.args[1]]
        if kinds and all((ctx.qualname(k) or "").startswith("torch.cuda.") for k in kinds):
            first, last = ctx.span(n.body[0]), ctx.span(n.body[-1])
            areas.append((first[0], first[1], last[2], last[3], n.lineno, ctx.segment(n.test)[:60]))
    return areas


#: Placements: `.cuda()`, a CUDA device.
_PLACING = ("NRN201", "NRN202")


def _within(f, area) -> bool:
    return (area[0], area[1]) <= (f.line, f.col) and (f.end_line, f.end_col) <= (area[2], area[3])


def _scope(ctx, node: ast.AST) -> tuple | None:
    """The span of the outermost class around ``node``, else of its function, else of the module
    (MoleculeSTM's retrieval scripts, read set 90: the model kept on the CPU under a kept check in the
    `__main__` block, its inputs sent to neuron by the device defined above it and by a function's
    `.cuda()`)."""
    around = [p for p in ctx.ancestors(node) if isinstance(p, ast.ClassDef)] or [
        p for p in ctx.ancestors(node) if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef))][:1]
    if around:
        return ctx.span(around[-1])
    body = ctx.tree.body
    return (body[0].lineno, 0, body[-1].end_lineno or body[-1].lineno, 10**9) if body else None


def _cuda_arm(ctx, node: ast.AST) -> list | None:
    """The statements (or the expression, in a list) that run when the test at ``node`` holds: the body
    of the ``if`` it is the test of (alone or in an ``and``), or the first arm of a conditional
    expression; for a negated test (alone or in an ``or``), the ``else`` or the second arm; None for
    any other place (a skip, a flag: :func:`_skipped_unless`, :func:`_flag_arms`)."""
    child = node
    parent = ctx.parent(child)
    if isinstance(parent, ast.Call) and parent.func is child:  # `torch.cuda.is_available` -> its call
        child, parent = parent, ctx.parent(parent)
    # a negated test (`if args.use_cpu or not torch.cuda.is_available(): cpu` / `else: cuda`, DGL-LifeSci's
    # JTVAE scripts, read set 90) decides its `else`, through an `or`; a plain one its body, through an `and`
    negated = isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not)
    if negated:
        child, parent = parent, ctx.parent(parent)
    if isinstance(parent, ast.BoolOp) and isinstance(parent.op, ast.Or if negated else ast.And):
        child, parent = parent, ctx.parent(parent)
    if isinstance(parent, ast.If) and parent.test is child:
        arm = parent.orelse if negated else parent.body
        if negated and isinstance(parent.body[-1], _EXITS):
            # `if not torch.cuda.is_available(): return` (VAR's `dist.initialize`, read set 96): what
            # follows in its block runs only where CUDA is
            arm = [*arm, *_after(ctx, parent)]
        return list(arm) if arm else None
    if isinstance(parent, ast.IfExp) and parent.test is child:
        return [parent.orelse if negated else parent.body]
    if isinstance(parent, ast.Assert) and parent.test is child and not negated:
        # `assert torch.cuda.is_available(), "CUDA is required for AMP training!"` (detrex's and OneFormer's
        # AMP trainers, read set 93): what follows in its block runs only where it holds
        return _after(ctx, parent) or None
    return None


_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def _after(ctx, stmt: ast.stmt) -> list:
    """The statements after ``stmt`` in its block."""
    block = ctx.block_of(stmt) or []
    return block[next((i for i, s in enumerate(block) if s is stmt), len(block)) + 1:]


def _asserted(ctx, node: ast.AST) -> bool:
    """Is the test at ``node`` (``torch.cuda.is_available``) what an ``assert`` checks?"""
    parent = ctx.parent(node)
    if isinstance(parent, ast.Call) and parent.func is node:
        parent = ctx.parent(parent)
    return isinstance(parent, ast.Assert)


_SKIP_IF = frozenset({"skipif", "skipIf"})


def _skipped_unless(ctx, node: ast.AST) -> list | None:
    """The body of the test function a skip decorator runs only where the availability check at
    ``node`` holds: ``@pytest.mark.skipif(not torch.cuda.is_available(), ...)``, ``@unittest.skipUnless(
    torch.cuda.is_available(), ...)`` (mmdetection3d's NMS tests, read set 71); else None."""
    test, parent = node, ctx.parent(node)
    if isinstance(parent, ast.Call) and parent.func is test:  # `torch.cuda.is_available` -> its call
        test, parent = parent, ctx.parent(parent)
    negated = isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not)
    if negated:
        test, parent = parent, ctx.parent(parent)
    if not (isinstance(parent, ast.Call) and parent.args and parent.args[0] is test):
        return None
    name = getattr(parent.func, "attr", getattr(parent.func, "id", ""))
    if not (name in _SKIP_IF and negated or name == "skipUnless" and not negated):
        return None
    fn = ctx.parent(parent)
    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and parent in fn.decorator_list and fn.body:
        return list(fn.body)
    return None


def _flag_arms(ctx, node: ast.AST) -> list[list]:
    """The bodies of the ``if flag:`` (alone or in an ``and``) of the function (or module) where the
    test at ``node`` is stored in a flag assigned once there: vilbert's notebook, ``cuda =
    torch.cuda.is_available()`` then ``if cuda: model = model.cuda(0)`` (read set 69); PSMNet's
    ``args.cuda = not args.no_cuda and torch.cuda.is_available()`` then ``if args.cuda:`` (set 98: true
    only where the test is)."""
    call = ctx.parent(node)
    if not (isinstance(call, ast.Call) and call.func is node):
        return []
    value = stmt = ctx.parent(call)
    if isinstance(stmt, ast.BoolOp) and isinstance(stmt.op, ast.And) and call in stmt.values:
        value, stmt = stmt, ctx.parent(stmt)
    else:
        value = call
    if not (isinstance(stmt, ast.Assign) and stmt.value is value and len(stmt.targets) == 1
            and _flag_key(stmt.targets[0])):
        return []
    flag = _flag_key(stmt.targets[0])
    scope = ctx.enclosing_function(stmt) or ctx.tree
    walked = ctx.walk(scope)
    if sum(1 for n in walked if isinstance(getattr(n, "ctx", None), ast.Store) and _flag_key(n) == flag) != 1:
        return []
    arms = []
    for n in walked:
        test = n.test if isinstance(n, ast.If) else None
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            test = test.values[0]
        if test is not None and _flag_key(test) == flag and n.body:
            arms.append(list(n.body))
    return arms


def _flag_key(node: ast.AST) -> str:
    """``name`` or ``name.attr`` as a flag is written (``cuda``, ``args.cuda``), else ``""``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return ""
