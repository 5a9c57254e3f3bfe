"""``x.is_cuda`` -> ``x.device.type not in ("cpu", "meta")`` (is the tensor on an accelerator?).

The rewrite is False for CPU tensors everywhere (a CPU-only host included) and True for CUDA
tensors on a GPU and for ``neuron`` tensors on Trainium. On a CUDA machine it gives the same
answer as ``is_cuda`` for CPU, CUDA and meta tensors; it differs only for tensors of another
accelerator (``xpu``, ``mps``, a PrivateUse1 device), which is the point. It stays unsafe:
neuron-lint cannot see that ``x`` is a tensor (``PackedSequence`` has ``is_cuda`` but no ``device``).

A device guard is rewritten only together with everything it decides. On Trainium the rewritten
test lets ``neuron`` tensors into the code it guards (the body of ``if x.is_cuda:``, what follows
``if not x.is_cuda: raise ...`` or ``assert x.is_cuda``). When that code calls CUDA-only code -- a
compiled extension (``_C.deform_conv_forward``), a kernel launch (``kernel[grid](...)``), a
custom op, raw pointers -- nothing is rewritten: ``is_cuda`` is the right question there. CUDA
APIs in that code (``torch.cuda.*``, ``.cuda()``, ``"cuda"``) are handed to
:func:`neuron_lint.fixes.guard_settle.settle` as the plan's ``region``: the fix stays only when this
fix run rewrites each of them too. A value that decides nothing device-specific
(``pin_memory=not x.is_cuda``, ``non_blocking=...``, a printed value) is rewritten as it is.
"""

from __future__ import annotations

import ast
import re

from ..callees import cuda_only_callee
from ..cuda_only import cuda_only_call as _cuda_only_call
from ..cuda_only import dotted as _dotted
from ..name_words import cuda_keyed, name_words
from ..own_extension import CPU_CUDA_LIBRARIES

#: Where the value only asks "is it on an accelerator?" and decides no code.
_HARMLESS_KEYWORDS = frozenset({"pin_memory", "non_blocking"})
_DISPLAY_CALLS = frozenset({"print", "repr", "str", "format", "debug", "info", "warning", "warn", "error",
                            "log", "write"})
_TERMINATORS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
#: Parents in which the rewritten comparison needs no parentheses.
_LOOSE = (ast.If, ast.While, ast.IfExp, ast.Assert, ast.BoolOp, ast.Call, ast.keyword, ast.Assign, ast.AnnAssign,
          ast.Return, ast.comprehension, ast.List, ast.Tuple, ast.Set, ast.Expr, ast.Dict, ast.Lambda)
def _cuda_api_sites(ctx, n) -> bool:
    """torch's own CUDA API: names under ``torch.cuda``, ``.cuda()``, ``"cuda"``/``"nccl"`` strings."""
    if isinstance(n, ast.Attribute):
        if n.attr == "cuda" and ctx.qualname(n) is None:
            return True
        q = ctx.qualname(n)
        return bool(q) and (q == "torch.cuda" or q.startswith("torch.cuda.")) and not isinstance(ctx.parent(n), ast.Attribute)
    return isinstance(n, ast.Constant) and isinstance(n.value, str) and (
        n.value.split(":")[0] in ("cuda", "nccl") or cuda_keyed(n.value, isinstance(ctx.parent(n), ast.Compare)))


def _block_after(ctx, stmt) -> list:
    parent = ctx.parent(stmt)
    for name in ("body", "orelse", "finalbody"):
        block = getattr(parent, name, None)
        if isinstance(block, list):
            for i, s in enumerate(block):
                if s is stmt:
                    return block[i + 1:]
    return []


def _decided(ctx, expr, depth: int = 0) -> tuple[list | None, str]:
    """The code that now runs for ``neuron`` tensors where it did not before, or (None, why not).

    ``polarity``: True while the value read is the test itself, False under ``not``, None when it
    went through a comparison (either branch may be the one taken).
    """
    polarity: bool | None = True
    child, parent = expr, ctx.parent(expr)
    region: list = []
    while parent is not None:
        if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
            polarity = None if polarity is None else not polarity
        elif isinstance(parent, ast.BoolOp):
            region += [v for v in parent.values if v is not child]
        elif isinstance(parent, ast.Compare):
            polarity = None
        elif isinstance(parent, (ast.If, ast.While)) and parent.test is child:
            rest = list(parent.orelse)
            if parent.body and isinstance(parent.body[-1], _TERMINATORS):
                rest += _block_after(ctx, parent)
            if polarity is True:
                return region + list(parent.body), ""
            if polarity is False:
                return region + rest, ""
            return region + list(parent.body) + rest, ""
        elif isinstance(parent, ast.IfExp) and parent.test is child:
            pick = {True: [parent.body], False: [parent.orelse], None: [parent.body, parent.orelse]}[polarity]
            return region + pick, ""
        elif isinstance(parent, ast.Assert) and parent.test is child:
            return region + ([] if polarity is False else _block_after(ctx, parent)), ""
        elif isinstance(parent, ast.keyword):
            if parent.arg in _HARMLESS_KEYWORDS:
                return region, ""
            return None, f"its value is passed as `{parent.arg}=`; neuron-lint cannot see what it decides there"
        elif isinstance(parent, ast.FormattedValue):
            return None, "it is inside an f-string"
        elif isinstance(parent, ast.Call) and child is not parent.func:
            name = (_dotted(parent.func) or [""])[-1]
            if name in _DISPLAY_CALLS:
                return region, ""
            return None, "its value is passed to a call; neuron-lint cannot see what it decides there"
        elif isinstance(parent, ast.Assign) and parent.value is child:
            if depth or len(parent.targets) != 1 or not isinstance(parent.targets[0], ast.Name):
                return None, "its value is stored where neuron-lint cannot follow it"
            return _variable(ctx, parent, parent.targets[0].id, region)
        elif isinstance(parent, ast.Return):
            return None, "its value is returned, so the callers decide what it guards; rewrite them together"
        elif isinstance(parent, ast.stmt):
            return None, "neuron-lint cannot see what its value decides"
        elif not isinstance(parent, (ast.expr,)):
            return None, "neuron-lint cannot see what its value decides"
        else:
            return None, "neuron-lint cannot see what its value decides"
        child, parent = parent, ctx.parent(parent)
    return None, "neuron-lint cannot see what its value decides"


def _variable(ctx, assign, name: str, region: list) -> tuple[list | None, str]:
    """``on_gpu = x.is_cuda``: what every later use of ``on_gpu`` decides."""
    scope = ctx.enclosing_function(assign) or ctx.tree
    stores = [n for n in ctx.walk(scope) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)]
    if len(stores) != 1 or (scope is ctx.tree and ctx.bound.get(name, 0) != 1):
        return None, f"`{name}` is bound more than once; neuron-lint cannot see what it decides"
    for use in ctx.walk(scope):
        if isinstance(use, ast.Name) and use.id == name and isinstance(use.ctx, ast.Load):
            more, why = _decided(ctx, use, depth=1)
            if more is None:
                return None, f"`{name}` is used where neuron-lint cannot see what it decides (line {use.lineno})"
            region += more
    return region, ""


#: Words of a comment that explains a branch by the device it is for ("may not be supported on
#: non-CUDA devices").
_DEVICE_WORDS = re.compile(r"\b(?:non-?)?(?:cuda|gpus?)\b|\bdevices?\b", re.IGNORECASE)


def _commented_fallback(ctx, node) -> tuple[int, str] | None:
    """``if x.is_cuda: ... else: <a comment about devices> ...``: the line and text of that comment.

    sam2's rotary encoding repeats complex tensors on CUDA and, in the ``else`` branch, expands
    them instead, "torch.repeat on complex numbers may not be supported on non-CUDA devices": the
    author wrote that branch for every other device, Trainium included."""
    test = ctx.parent(node)
    if not (isinstance(test, ast.If) and test.test is node and test.orelse and test.body):
        return None
    from ..keyword_args import module_comments

    start, end = test.body[-1].end_lineno, test.orelse[-1].end_lineno
    for line, _col, text in module_comments(ctx):
        if start < line <= end and _DEVICE_WORDS.search(text):
            return line, text.lstrip("# ").strip()
    return None


#: Calls that make complex tensors: a fast path CUDA takes with them (RVC's rotary embedding, in
#: ComplexHalf) is one Trainium should not, since it decomposes complex arithmetic into real (NRN303).
_COMPLEX = frozenset({"torch.complex", "torch.view_as_complex", "torch.polar"})


def _other_type(ctx, node: ast.Attribute) -> str:
    """The classes an ``isinstance`` test beside ``x.is_cuda`` (before it in an ``and``, or in the
    test of an enclosing ``if``) checks ``x`` against, when none of them is a tensor (PyG's
    ``isinstance(data, (Data, HeteroData)) and data.is_cuda``: a graph, whose ``is_cuda`` is its
    own property), as written, or ``""``."""
    if not isinstance(node.value, ast.Name):
        return ""
    name, child = node.value.id, node
    for p in ctx.ancestors(node):
        tests = []
        if isinstance(p, ast.BoolOp) and isinstance(p.op, ast.And):
            tests = p.values[:next((i for i, v in enumerate(p.values) if v is child), 0)]
        elif isinstance(p, ast.If) and p.test is not child:
            tests = [p.test]
        for t in tests:
            for n in ast.walk(t):
                if (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "isinstance"
                        and len(n.args) == 2 and isinstance(n.args[0], ast.Name) and n.args[0].id == name):
                    kinds = n.args[1].elts if isinstance(n.args[1], ast.Tuple) else [n.args[1]]
                    if not any(ctx.segment(k).split(".")[-1] in ("Tensor", "Parameter") for k in kinds):
                        return ctx.segment(n.args[1]).strip("()")
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            break
        child = p
    return ""


def _required(ctx, expr) -> str:
    """The message of ``assert x.is_cuda, "...CUDA..."`` when it names CUDA (kaolin's farthest point
    sampling: "only CUDA is supported"), shortened, or ``""``."""
    stmt = ctx.parent(expr)
    if not (isinstance(stmt, ast.Assert) and stmt.test is expr and stmt.msg is not None):
        return ""
    text = " ".join(n.value for n in ast.walk(stmt.msg) if isinstance(n, ast.Constant) and isinstance(n.value, str))
    return text.strip()[:50] if re.search(r"(?i)\bcuda\b", text) else ""


def _cpu_cuda_library_call(ctx, call: ast.Call) -> str:
    """``torch_scatter.scatter(...)``, however imported (PyG: ``from torch_geometric.typing import
    torch_scatter``): a library with CPU and CUDA kernels only, where ``is_cuda`` asks whether its
    fast kernel applies (set 58), as written, or ``""``."""
    if _library_call(ctx, call):
        return f"`{ctx.segment(call.func)}`, from a library with CPU and CUDA kernels only,"
    # one step into the module's own function (PyG's `_torch_sparse_spmm`, which calls torch_sparse)
    own = _module_functions(ctx).get(call.func.id) if isinstance(call.func, ast.Name) else None
    inner = next((n for n in ctx.walk(own) if isinstance(n, ast.Call) and _library_call(ctx, n)), None) if own else None
    return f"`{call.func.id}`, which calls `{ctx.segment(inner.func)}` (a library with CPU and CUDA kernels only)," \
        if inner is not None else ""


def _library_call(ctx, call: ast.Call) -> bool:
    parts = (ctx.qualname(call.func) or "").split(".")[:-1]
    return any(p in CPU_CUDA_LIBRARIES or ".".join(parts[i:i + 2]) in CPU_CUDA_LIBRARIES for i, p in enumerate(parts))


def _module_functions(ctx) -> dict:
    found = ctx.__dict__.get("_nrn_module_functions")
    if found is None:
        found = ctx.__dict__["_nrn_module_functions"] = {
            s.name: s for s in ctx.tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return found


def _complex_call(ctx, call: ast.Call) -> str:
    qual = ctx.qualname(call.func)
    return f"`{qual}` (complex tensors, which Trainium decomposes into real ones: NRN303)" if qual in _COMPLEX else ""


#: Words of a flag's name (``use_cuda``, ``cuda_enabled``): a question, not something made for CUDA.
_FLAG_WORDS = frozenset({"use", "is", "has", "with", "enable", "enabled", "on", "available", "no", "not"})


def _cuda_named_value(ctx, n) -> str:
    """A value the project named for CUDA and took without calling it (GLIP's ``loss_func =
    sigmoid_focal_loss_cuda``, its compiled operator; vit-pytorch's ``self.cuda_config``, None off
    CUDA), as written, or ``""``. Calls are :func:`cuda_only_call`'s; flags (``use_cuda``) are questions."""
    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
        ident = n.id
    elif (isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and n.attr not in ("cuda", "is_cuda")
          and not (ctx.qualname(n) or "").startswith("torch.")):
        ident = n.attr
    else:
        return ""
    parent = ctx.parent(n)
    if isinstance(parent, ast.Call) and parent.func is n:
        return ""
    words = set(name_words(ident))
    return ctx.segment(n) or ident if "cuda" in words and not words & _FLAG_WORDS else ""



def _solver_driver(ctx, expr: ast.AST) -> ast.Call | None:
    """The ``torch.linalg`` call whose ``driver=`` the test ``expr`` picks (boltz's ``torch.linalg.svd(A,
    driver="gesvd" if A.is_cuda else None)``: cuSOLVER's drivers, taken for CUDA inputs only; read set
    88), or None."""
    choice = ctx.parent(expr)
    if not (isinstance(choice, ast.IfExp) and choice.test is expr):
        return None
    keyword = ctx.parent(choice)
    call = ctx.parent(keyword) if isinstance(keyword, ast.keyword) and keyword.arg == "driver" else None
    if isinstance(call, ast.Call) and (ctx.qualname(call.func) or "").startswith("torch.linalg."):
        return call
    return None

class IsCuda:
    name = "is_cuda"

    def plan(self, ctx, hit):
        node = hit.node
        if not isinstance(node, ast.Attribute) or node.attr != "is_cuda" or not isinstance(node.ctx, ast.Load):
            return None
        parent = ctx.parent(node)
        negated = isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not)
        expr = parent if negated else node
        other = _other_type(ctx, node)
        if other:
            ctx.note(hit, (f"not rewritten: `{ctx.segment(node.value)}` is a `{other}` here (`isinstance`), not a tensor: "
                           "its own `is_cuda` says where its tensors are, and it may have no `device`"))
            return None
        own = next((p for p in ctx.ancestors(node) if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
        if own is not None and own.name == "is_cuda":
            ctx.note(hit, "not rewritten: it is in a class's own `is_cuda`, which its users read as \"on a CUDA GPU\" "
                          "(as `Tensor.is_cuda`); rewritten, it would no longer mean CUDA")
            return None
        driver = _solver_driver(ctx, expr)
        if driver is not None:
            ctx.note(hit, (f"not rewritten: it picks the `driver=` of `{ctx.segment(driver.func)}` (line {driver.lineno}), "
                           "a choice of CUDA's solver libraries that PyTorch accepts for CUDA tensors only; on "
                           "another device it would raise. Keep `is_cuda`"))
            return None
        required = _required(ctx, expr)
        if required:
            ctx.note(hit, (f"not rewritten: the assertion says CUDA is required (`{required}`, line {node.lineno}): "
                           "the code after it is written for CUDA alone. Keep `is_cuda`"))
            return None
        region, why = _decided(ctx, node)
        if region is None:
            ctx.note(hit, f"not rewritten: {why}")
            return None
        fallback = _commented_fallback(ctx, node)
        if fallback:
            ctx.note(hit, (f"not rewritten: the `else` branch is written for the devices that are not CUDA (its "
                           f"comment, line {fallback[0]}: `{fallback[1][:60]}`); on Trainium it would be skipped. "
                           "Keep `is_cuda`, or take that branch on every device"))
            return None
        sites = []
        for top in region:
            for n in ctx.walk(top):
                if isinstance(n, ast.Call) and not (isinstance(n.func, ast.Attribute) and n.func.attr == "cuda"):
                    # `x.cuda()` is not CUDA-only code: NRN201 rewrites it, and settle() keeps the two together
                    what = _cuda_only_call(ctx, n) or _complex_call(ctx, n) or _cpu_cuda_library_call(ctx, n)
                    what = f"{what} on line {n.lineno}" if what else cuda_only_callee(ctx, n)
                    if what:
                        ctx.note(hit, (
                            f"not rewritten: the code this test lets run calls {what}; on Trainium "
                            "a `neuron` tensor would reach it. `is_cuda` is the right question there: keep it (the "
                            "CUDA path keeps working, and other devices keep taking the other path)"))
                        return None
                named = _cuda_named_value(ctx, n)
                if named:
                    ctx.note(hit, (
                        f"not rewritten: the code this test lets run takes `{named}` (line {n.lineno}), which the "
                        "project made for CUDA (a CUDA operator, a CUDA-only setting); on Trainium a `neuron` "
                        "tensor would get it. Keep `is_cuda`, or give Trainium its own"))
                    return None
                if _cuda_api_sites(ctx, n):
                    sites.append(list(ctx.span(n)))
        outer = ctx.parent(expr)
        loose = isinstance(outer, _LOOSE) and not (isinstance(outer, ast.Call) and outer.func is expr)
        if negated and isinstance(ctx.parent(parent), (ast.If, ast.While)) and ctx.parent(parent).test is parent:
            # `if not x.is_cuda: <fallback>` keeps everything after it on the CUDA path: on Trainium
            # the fallback would be skipped and the CUDA-only rest would run.
            ctx.note(hit, "not rewritten: `if not x.is_cuda:` guards a fallback; the code after it is the CUDA "
                          "path, which would then run on Trainium. Make that path device-agnostic first")
            return None
        # The decided code itself: any CUDA-specific finding inside it (DataParallel, a CUDA
        # extension...) must be fixed in the same run too (an area, marked by an empty text; see
        # guard_settle.settle), else a neuron tensor would reach it on Trainium.
        sites += [[*ctx.span(top), ""] for top in region if hasattr(top, "lineno")]
        data = {"negated": negated, "parens": not loose}
        if sites:
            data["region"] = sites
        kind = "UnaryOperation" if negated else "Attribute"
        test = '`x.device.type in ("cpu", "meta")`' if negated else '`x.device.type not in ("cpu", "meta")`'
        return ctx.propose(hit, expr, kind, f"Ask whether the tensor is on an accelerator: {test}", data)

    def rewrite(self, rx, original, updated, data):
        import libcst as cst

        from ..decline import Decline

        attr = updated.expression if data.get("negated") else updated
        if not (isinstance(attr, cst.Attribute) and attr.attr.value == "is_cuda"):
            raise Decline("the expression is no longer `x.is_cuda`")
        op = "in" if data.get("negated") else "not in"
        new = rx.expression(f'{{x}}.device.type {op} ("cpu", "meta")', x=attr.value)
        if updated.lpar:  # `(x.is_cuda)`: keep the parentheses written
            new = new.with_changes(lpar=updated.lpar, rpar=updated.rpar)
        elif data.get("parens"):
            new = new.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return new


FIXER = IsCuda()
