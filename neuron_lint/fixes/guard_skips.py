"""The skips of CUDA-only tests (``@skipIf(not torch.cuda.is_available(), ...)``,
``@pytest.mark.skipif``) and the errors raised without CUDA: which test a guard skips, and what its
reason, another skip's or the error's message says needs CUDA (used by :mod:`.guards`)."""

from __future__ import annotations

import ast
import re


def skip_call(ctx, guard) -> ast.Call | None:
    """The skip decorator call (``@skipIf``, ``@skipUnless``, ``@pytest.mark.skipif``) of a test
    function or class that has ``guard`` in its condition, or None."""
    child = guard
    for p in ctx.ancestors(guard):
        if isinstance(p, ast.Call) and is_skip(p) and p.args and (p.args[0] is child):
            decorated = ctx.parent(p)
            ok = isinstance(decorated, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            return p if ok else None
        if not isinstance(p, (ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Call)):
            return None
        child = p
    return None


def skipped_test(ctx, guard) -> ast.AST | None:
    """The test function or class whose skip decorator has ``guard`` in its condition, or None."""
    skip = skip_call(ctx, guard)
    return ctx.parent(skip) if skip is not None else None


#: What a skip's reason may say and still mean only "there is no GPU here".
GENERIC_SKIP_WORDS = re.compile(
    r"\b(cuda|gpus?|accelerators?|devices?|is|are|not|no|available|unavailable|required|requires?|needs?|"
    r"access|this|test|tests|a|an|the|to|run|only|machine|host|found|present|detected|with|without|"
    r"skip|skipping|skipped)\b|[^a-z]+")
#: ... and what an error raised without CUDA may add and still mean only that.
_GENERIC_ERROR_WORDS = re.compile(
    r"\b(script|program|code|example|demo|model|training|train|inference|please|must|be|can|cannot|t|use|"
    r"using|on|for|you|your|need|it|at|least|one|supported|support|enabled?|error|sorry|we|only|runs?|"
    # what Trainium has as well: "for now i think we need CUDA for DDP" (build-nanogpt)
    r"now|i|think|ddp|distributed|data|parallel|currently|yet|still|so|far|moment|make|sure|have|has|do|does|"
    r"should|will|would|working|works?|properly|correctly|system|environment|process|rank|node)\b")


def raised_reason(ctx, guard) -> str:
    """The message of the error an ``if not torch.cuda.is_available(): raise ...`` or an ``assert
    torch.cuda.is_available(), ...`` raises when it names what needs CUDA beyond "a GPU"
    (ClassyVision's "AMP is required but CUDA is not supported, cannot enable AMP", whose Apex and CUDA
    autocast are in other methods; accelerate's "Megatron requires CUDA."), else ``""``. A script's
    plain "CUDA is required" check is what a port relaxes."""
    test = ctx.parent(guard)
    if isinstance(test, ast.Assert) and test.test is guard:
        message = test.msg.value if isinstance(test.msg, ast.Constant) else ""
    elif _negated(test, guard):
        # `if not torch.cuda.is_available(): raise ...`, also `... is False:` with an early return
        # first (OpenNMT's SRU check: `if not abort: return False`, then "requires pytorch built with cuda")
        stmt, condition = ctx.parent(test), test
        if isinstance(stmt, ast.BoolOp) and isinstance(stmt.op, ast.And):
            # `if not torch.cuda.is_available() and use_cuda_graph: raise ...` (torchmd-net's
            # calculator, read set 88): raised without CUDA when the option asks for it
            stmt, condition = ctx.parent(stmt), stmt
        raised = stmt.body[-1] if isinstance(stmt, ast.If) and stmt.test is condition else None
        if not (isinstance(raised, ast.Raise) and isinstance(raised.exc, ast.Call) and all(
                isinstance(s, ast.If) and all(isinstance(b, ast.Return) for b in s.body) for s in stmt.body[:-1])):
            return ""
        args = raised.exc.args
        message = args[0].value if args and isinstance(args[0], ast.Constant) else ""
    else:
        return ""
    if not isinstance(message, str):
        return ""
    rest = _GENERIC_ERROR_WORDS.sub(" ", GENERIC_SKIP_WORDS.sub(" ", message.lower()))
    if isinstance(test, ast.Assert):
        # an assertion is a script's own precondition, most often "needs a GPU" in other words
        # ("Sampling with DDP requires at least one GPU. sample.py supports CPU-only usage"): it
        # stays only where it names CUDA-only software
        return message if _CUDA_ONLY_SOFTWARE.search(rest) else ""
    return message if rest.strip() else ""


def _negated(test, guard) -> bool:
    """Is ``test`` ``not guard``, ``guard is False`` or ``guard == False``?"""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return True
    return (isinstance(test, ast.Compare) and test.left is guard and len(test.ops) == 1
            and isinstance(test.ops[0], (ast.Is, ast.Eq)) and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is False)


#: What an assertion may name that needs CUDA whatever the device: CUDA-only software.
_CUDA_ONLY_SOFTWARE = re.compile(
    r"\b(megatron|apex|bitsandbytes|xformers|flash|triton|tensorrt|nccl|cudnn|cublas|deepspeed|fused|kernels?|"
    r"extensions?|cupy|nvml|amp|fp8|transformer engine)\b")


def skip_reason(skip: ast.Call) -> str:
    first = 1 if _called(skip) in _SKIP_DECORATORS else 0
    values = list(skip.args[first:first + 1]) + [k.value for k in skip.keywords if k.arg in ("reason", "msg")]
    for v in values:
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            return v.value
    return ""


_SKIP_DECORATORS = ("skipIf", "skipUnless", "skipif")


def is_skip(call: ast.Call) -> bool:
    return _called(call) in _SKIP_DECORATORS


def _called(call: ast.Call) -> str:
    """The last name of what ``call`` calls: ``skipIf`` of ``unittest.skipIf(...)``."""
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


class _Reason(str):
    lineno: int = 0


def named_skip_elsewhere(ctx, skip: ast.Call) -> _Reason | None:
    """The reason of another skip in the module that tests CUDA and says what needs it (``"Deformable
    not supported for cpu"``), or None."""
    found = ctx.__dict__.get("_named_cuda_skips")
    if found is None:
        found = []
        for n in ctx.walk(ctx.tree):
            if isinstance(n, ast.Call) and is_skip(n) and n.args and any(
                    isinstance(m, ast.Attribute) and (ctx.qualname(m) or "").startswith("torch.cuda.")
                    for m in ast.walk(n.args[0])):
                reason = skip_reason(n)
                if GENERIC_SKIP_WORDS.sub(" ", reason.lower()).strip():
                    r = _Reason(reason)
                    r.lineno = n.lineno
                    found.append((n, r))
        ctx.__dict__["_named_cuda_skips"] = found
    return next((r for n, r in found if n is not skip), None)


#: Calls that end the test or the program where they stand (pytest's raise an exception).
_STOPPING_CALLS = frozenset({"skip", "skipTest", "exit", "_exit", "fail"})


def stops(stmt: ast.stmt) -> bool:
    """Is ``stmt`` a call that does not return: ``pytest.skip(...)``, ``self.skipTest(...)``, ``sys.exit()``?"""
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and _called(stmt.value) in _STOPPING_CALLS


def only_stops(body) -> bool:
    """A branch that only leaves (``return``, ``raise``, a skip or an exit call), with nothing to set up."""
    for stmt in body:
        if isinstance(stmt, (ast.Return, ast.Raise, ast.Continue, ast.Break, ast.Pass)):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            func = stmt.value.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("skip", "skipTest", "exit", "warn", "warning", "print", "info"):
                continue
        return False
    return True


def skip_statement(ctx, guard) -> ast.Call | None:
    """The ``pytest.skip(...)`` (``self.skipTest(...)``) of ``if not torch.cuda.is_available(): ...``
    holding ``guard``: a skip like a decorator's, or None."""
    test = ctx.parent(guard)
    stmt = ctx.parent(test) if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) else None
    if not (isinstance(stmt, ast.If) and stmt.test is test and stmt.body and stops(stmt.body[-1])):
        return None
    function = ctx.enclosing_function(stmt)
    if function is None or not function.name.startswith("test"):  # a helper's skip decides other tests
        return None
    call = stmt.body[-1].value
    return call if _called(call) in ("skip", "skipTest") else None


_GRADCHECKS = frozenset({"gradcheck", "gradgradcheck"})
_FLOAT64 = frozenset({"torch.float64", "torch.double"})


def float64_test(ctx, walked) -> str:
    """``gradcheck`` or a float64 dtype among the nodes of a skipped test, as the note names it, or ``""``."""
    for n in walked:
        if isinstance(n, ast.Call):
            func = n.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in _GRADCHECKS:
                return f"`{name}` (line {n.lineno})"
            if name == "double" and isinstance(func, ast.Attribute) and not n.args:
                return f"`.double()` (line {n.lineno})"
        elif isinstance(n, ast.Attribute) and ctx.qualname(n) in _FLOAT64:
            return f"`{ctx.qualname(n)}` (line {n.lineno})"
    return ""


#: Statements that leave their block.
LEAVING = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def after_stopping_else(ctx, guard: ast.If) -> list:
    """What follows the ``if``/``elif`` chain of ``guard`` in its block, when its ``else`` only leaves
    (``sys.exit``, ``raise``, ``return``): the code after it runs only where the test held (or an
    earlier arm did). DINO's ``init_distributed_mode``: ``elif torch.cuda.is_available(): ...``
    ``else: sys.exit(1)``, then ``init_process_group(backend="nccl")`` (InternVideo, read set 109)."""
    last = guard.orelse[-1] if guard.orelse else None
    if last is None or not (isinstance(last, LEAVING) or stops(last)):
        return []
    top = guard
    while isinstance(up := ctx.parent(top), ast.If) and len(up.orelse) == 1 and up.orelse[0] is top:
        top = up  # the `if` whose `elif` this is
    block = ctx.block_of(top) or []
    i = next((j for j, s in enumerate(block) if s is top), len(block))
    return block[i + 1:]
