"""Device dispatch: an ``if``/``elif`` chain (or a run of ``if`` statements) with an arm per device.

In a framework that is already device-agnostic (accelerate's ``if is_xpu_available(): ... elif
is_cuda_available(): torch.cuda.empty_cache()``), the CUDA arm is exactly right where it stands: a
device-agnostic rewrite of it would take the place of the other arms, or do nothing. An arm that only
names its device (``device = "mps"``) is a device choice, which the current accelerator makes as well.
"""

from __future__ import annotations

import ast
import re

OTHER_DEVICES = re.compile(r"(?<![a-z])(xpu|npu|mps|hpu|mlu|musa|sdaa|neuron[a-z]*|tpu|xla|privateuse1)(?![a-z])",
                            re.IGNORECASE)
_NEURON = re.compile(r"(?<![a-z])(neuron[a-z]*)(?![a-z])", re.IGNORECASE)
_DEVICE_NAME = re.compile(r"(cpu|cuda|mps|xpu|npu|hpu|mlu|musa|neuron|xla|meta)(:\d+)?")


def picks_a_device(ctx, body) -> bool:
    """``device = torch.device("mps")`` / ``device = "mps"``: a branch that only names its device,
    which the current accelerator names just as well (the same device on that machine)."""
    for stmt in body:
        value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
        if isinstance(value, ast.Call) and ctx.qualname(value.func) == "torch.device" and len(value.args) == 1:
            value = value.args[0]
        if not (isinstance(value, ast.Constant) and isinstance(value.value, str)
                and _DEVICE_NAME.fullmatch(value.value)):
            return False
    return bool(body)


def later_device_branch(ctx, call) -> int:
    """The line of a later ``elif`` of the chain whose test ``call`` is in that tests another
    device and does more than name it (accelerate's ``elif is_xpu_available(): ... MULTI_XPU``,
    and its Neuron branch after it), or 0: a device-agnostic test here would take
    that branch's place."""
    node = call
    for p in ctx.ancestors(call):
        if isinstance(p, ast.If):
            if p.test is not node and not (isinstance(p.test, ast.BoolOp) and any(v is node for v in p.test.values)):
                return 0
            arm = p
            while len(arm.orelse) == 1 and isinstance(arm.orelse[0], ast.If):
                arm = arm.orelse[0]
                tests = [ctx.segment(n.func) for n in ast.walk(arm.test) if isinstance(n, ast.Call)]
                if any(("available" in t or "installed" in t) and OTHER_DEVICES.search(t) for t in tests) and not picks_a_device(ctx, arm.body):
                    return arm.lineno
            return 0
        if not isinstance(p, (ast.BoolOp, ast.UnaryOp)):
            return 0
        node = p
    return 0


def dispatch_branch(ctx, node: ast.AST):
    """``(line, device)`` when ``node`` is in the body of an ``if`` whose CUDA availability test
    stays because a later ``elif`` handles another device with more than its name (trl's ``if
    torch.cuda.is_available(): devices = [torch.cuda.get_device_name(i) ...]`` / ``elif
    torch.xpu.is_available(): ... torch.xpu...``; see :func:`.guards.decided_region`), else None:
    rewritten alone, the body would be churn under a test that still asks for CUDA."""
    child = node
    for p in ctx.ancestors(node):
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return None
        if isinstance(p, ast.If) and any(child is s for s in p.body):
            # `if torch.cuda.is_available():`, or `... and device.type == "cpu":` (torchrl's dreamer env)
            tests = p.test.values if isinstance(p.test, ast.BoolOp) and isinstance(p.test.op, ast.And) else [p.test]
            test = next((t for t in tests if isinstance(t, ast.Call)
                         and ctx.qualname(t.func) == "torch.cuda.is_available"), None)
            if test is not None:
                line = later_device_branch(ctx, test)
                if line:
                    arm = next(a for a in ast.walk(p) if isinstance(a, ast.If) and a.lineno == line)
                    return line, OTHER_DEVICES.search(ctx.segment(arm.test)).group(1)
        if isinstance(p, ast.If) and (child is p.test or any(child is s for s in p.body)
                                      or any(child is s for s in p.orelse)
                                      and not (len(p.orelse) == 1 and isinstance(child, ast.If))):
            other = _other_device_arm(ctx, p, child)
            if other:
                return other
        child = p
    return None


def _other_device_arm(ctx, arm: ast.If, child: ast.AST):
    """``(line, device)`` of another arm of ``arm``'s ``if``/``elif`` chain that tests the Neuron
    device and does more than name it, when ``child`` is in the chain's CUDA arm (its test names
    CUDA) or in its final ``else``: accelerate's ``elif is_neuron_available():
    torch.neuron.manual_seed_all(s) else: torch.cuda.manual_seed_all(s)``, and its
    ``elif is_cuda_available(): torch.cuda.empty_cache()`` before ``elif is_neuron_available():``.
    Trainium has its arm there already; rewritten, the CUDA arm would only add a device probe (which
    initialises CUDA where the original did not) or break another device (``torch.mps`` has no
    ``manual_seed_all``). A chain without a Neuron arm keeps its rewrites: there the CUDA arm, made
    device-agnostic, is what serves Trainium (timm's ``if device.type == "cuda": synchronize``)."""
    in_else = any(child is s for s in arm.orelse)
    if not (in_else or "cuda" in ctx.segment(arm.test).lower()):
        return None
    top = arm
    while isinstance(up := ctx.parent(top), ast.If) and len(up.orelse) == 1 and up.orelse[0] is top:
        top = up
    # the chain, and the `if` statements right beside it (`if is_cuda_available(): return ...` then
    # `if is_mlu_available(): return ...`; `if ... self.device.type == "cuda": ...` then "musa")
    block = ctx.block_of(top) or [top]
    i = next((j for j, stmt in enumerate(block) if stmt is top), 0)
    first, last = i, i
    while first > 0 and isinstance(block[first - 1], ast.If):
        first -= 1
    while last + 1 < len(block) and isinstance(block[last + 1], ast.If):
        last += 1
    for a in block[first:last + 1]:
        while True:
            if a is not arm or in_else:
                found = _NEURON.search(ctx.segment(a.test))
                if found and not picks_a_device(ctx, a.body):
                    return a.lineno, found.group(1)
            if not (len(a.orelse) == 1 and isinstance(a.orelse[0], ast.If)):
                break
            a = a.orelse[0]
    return None


def keyed_table(ctx, node) -> str:
    """Why ``node`` stays (the note, less "not rewritten: ") when it is a key of a dict, as it is or as
    ``torch.device(node)``, beside a key naming another device: a table with an entry per device
    (distributed_shampoo's tests: ``{torch.device("cuda"): NCCL, torch.device("cpu"): GLOO}[device]``).
    With the current device as its key, CUDA's entry would stand for Trainium and, on a CPU-only host,
    collide with the CPU's. Else ``""``."""
    key, parent = node, ctx.parent(node)
    if isinstance(parent, ast.Call) and parent.args and parent.args[0] is node and \
            ctx.qualname(parent.func) == "torch.device":
        key, parent = parent, ctx.parent(parent)
    if not (isinstance(parent, ast.Dict) and any(k is key for k in parent.keys)):
        return ""
    for k in parent.keys:
        if isinstance(k, ast.Call) and k is not key and k.args and ctx.qualname(k.func) == "torch.device":
            k = k.args[0]
        if k is not node and isinstance(k, ast.Constant) and isinstance(k.value, str) and _DEVICE_NAME.fullmatch(k.value):
            return (f"it is a key of a table with an entry per device (line {parent.lineno}); with the current "
                    "device as its key, CUDA's entry would stand for Trainium (and collide with the CPU's on a "
                    "CPU-only host). Give the table an entry for the `neuron` device by hand")
    return ""


def kernel_dispatch(ctx, node: ast.AST):
    """``(line, what)`` when the function around ``node`` sends tensors to its kernels by ``is_cuda``
    and the CUDA arm calls CUDA-only code (mmaction's ``nms``: ``dets_th.is_cuda`` picks
    ``nms_cuda.nms``, else ``nms_cpu.nms``, set 77), else None. A device it names is where those
    tensors go: placed on Trainium, they would not be ``is_cuda`` and would reach the CPU kernel,
    which reads host memory."""
    fn = ctx.enclosing_function(node)
    if fn is None or isinstance(fn, ast.Lambda):
        return None
    known = ctx.__dict__.setdefault("_nrn_kernel_dispatch", {})
    if id(fn) not in known:
        known[id(fn)] = _kernel_arm(ctx, fn)
    return known[id(fn)]


def _kernel_arm(ctx, fn):
    from .cuda_only import cuda_only_node

    for n in ctx.walk(fn):
        if not isinstance(n, ast.If):
            continue
        test, arm = n.test, n.body
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, arm = test.operand, n.orelse
        if not (isinstance(test, ast.Attribute) and test.attr == "is_cuda"):
            continue
        for stmt in arm:
            what = next((w for m in ctx.walk(stmt) if (w := cuda_only_node(ctx, m))), "")
            if what:
                return n.lineno, what
    return None
