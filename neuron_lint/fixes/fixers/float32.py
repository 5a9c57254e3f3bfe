"""float64 -> float32 (NRN301): ``torch.float64``/``torch.double`` -> ``torch.float32``,
``torch.DoubleTensor`` -> ``torch.FloatTensor``, ``.double()`` -> ``.float()``,
``dtype="float64"`` -> ``dtype="float32"``, ``dtype=float`` -> ``dtype=torch.float32``.

Always unsafe: it lowers precision on every device (what Neuron does anyway, but now on GPUs and
CPUs too). And it is not offered at all where float64 is there on purpose or costs nothing:

- test code (``test_*.py``, ``*_test.py``, ``conftest.py``, files under ``tests/``, ``test_*``
  functions, ``Test*`` classes, ``parametrize`` decorators): float64 is a reference or a dtype
  under test;
- ``torch.autograd.gradcheck``/``gradgradcheck``: their arguments, and every function (or module
  body) that calls them, need float64 for the finite differences;
- a dtype listed with other dtypes (``[torch.float32, torch.float64]``): it would list float32 twice;
- host-side values: the result goes to ``.cpu()``/``.numpy()``/``.item()``/``.tolist()``, comes
  from ``.cpu()``/``torch.from_numpy``, or is a tensor made without a device that the code around
  it never moves to one (it stays on the CPU, where float64 is exact);
- code whose comment (on its lines or just above) or docstring talks about the precision
  (``float64``, ``double precision``, ``exact``, ``reproduce``, ``numerical stability``...).
"""

from __future__ import annotations

import ast
import re

from ..host_values import (
    callee_name,
    dtype_like,
    host_factory,
    host_origin,
    host_receiver,
    host_result,
    module_moves_tensors,
)
from ..keyword_args import module_comments
from ..module_kind import is_test_path

_RENAMED = {"float64": "float32", "double": "float32", "DoubleTensor": "FloatTensor"}
_FLOAT_DTYPES = {"float64", "double", "float32", "float", "float16", "half", "bfloat16", "float8_e4m3fn",
                 "float8_e5m2", "complex64", "complex128", "cfloat", "cdouble", "int8", "int16", "int32",
                 "int64", "long", "int", "uint8", "bool", "DoubleTensor", "FloatTensor", "HalfTensor"}
_GRADCHECKS = {"torch.autograd.gradcheck", "torch.autograd.gradgradcheck", "torch.autograd.gradcheck.gradcheck",
               "torch.autograd.gradcheck.gradgradcheck"}
#: What a comment or docstring says when float64 is there on purpose.
_ON_PURPOSE = re.compile(
    r"float64|fp64|\bf64\b|double|64[- ]?bit|precision|precise|exact|reproduc|accura|numeric|stabl|"
    r"overflow|underflow|round-?off|tolerance|catastroph",
    re.IGNORECASE,
)


# ---------------------------------------------------------------------------------- traps
def _is_gradcheck(ctx, call) -> bool:
    if not isinstance(call, ast.Call):
        return False
    name = callee_name(ctx, call.func)
    return name in _GRADCHECKS or name.rsplit(".", 1)[-1] in ("gradcheck", "gradgradcheck")


def _calls_gradcheck(ctx, scope) -> bool:
    """Does ``scope`` (a function, or the module body outside functions) call gradcheck itself?"""
    cache = ctx.__dict__.setdefault("_nrn301_gradcheck", {})
    key = id(scope)
    if key not in cache:
        if isinstance(scope, ast.Module):
            nodes = [n for stmt in scope.body if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     for n in ast.walk(stmt)]
        else:
            nodes = list(ctx.walk(scope))
        cache[key] = any(_is_gradcheck(ctx, n) for n in nodes)
    return cache[key]


def _in_test_code(ctx, node) -> bool:
    for p in ctx.ancestors(node):
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)) and p.name.startswith("test"):
            return True
        if isinstance(p, ast.ClassDef) and p.name.startswith("Test"):
            return True
        if isinstance(p, ast.Call) and callee_name(ctx, p.func).rsplit(".", 1)[-1] == "parametrize":
            return True
    return False


def _in_dtype_list(ctx, node) -> bool:
    parent = ctx.parent(node)
    if isinstance(parent, (ast.List, ast.Tuple, ast.Set)):
        return sum(dtype_like(e) for e in parent.elts) >= 2
    return False


def _value_call(ctx, node) -> ast.Call | None:
    """The call that produces the value this dtype (or ``.double()``) is about."""
    if isinstance(node, ast.Call):
        return node
    parent = ctx.parent(node)
    if isinstance(parent, ast.keyword):
        parent = ctx.parent(parent)
    return parent if isinstance(parent, ast.Call) and parent.func is not node else None


def _docstring(node) -> str:
    body = getattr(node, "body", None)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
        return body[0].value.value
    return ""


def _purpose(ctx, node) -> str:
    """The comment or docstring near ``node`` that says why it uses float64, or ``""``."""
    stmt = ctx.statement_of(node) or node
    first = stmt.lineno
    simple = not isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.FunctionDef,
                                   ast.AsyncFunctionDef, ast.ClassDef, ast.AsyncFor, ast.AsyncWith))
    last = (stmt.end_lineno if simple else node.end_lineno) or first
    by_line: dict[int, list[str]] = {}
    for line, col, text in module_comments(ctx):
        by_line.setdefault(line, []).append((col, text))
    lines = set(range(first, last + 1))
    above = first - 1
    while above in by_line and not ctx.lines.line(above)[: by_line[above][0][0] - 1].strip():
        lines.add(above)  # the comment block just above the statement
        above -= 1
    for line in sorted(lines):
        for _, text in by_line.get(line, ()):
            if _ON_PURPOSE.search(text):
                return text.strip()
    for p in ctx.ancestors(node):
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            doc = _docstring(p)
            m = _ON_PURPOSE.search(doc)
            if m:
                start = doc.rfind("\n", 0, m.start()) + 1
                end = doc.find("\n", m.end())
                return doc[start: end if end >= 0 else None].strip()
            break  # the nearest definition's docstring only
    return ""


def why_float64_stays(ctx, hit, node) -> str:
    """Why this float64 must not become float32 (the note), or ``""`` when it may."""
    if is_test_path(ctx.path) or _in_test_code(ctx, node):
        return "test code: float64 there is a reference value or a dtype under test"
    if any(_is_gradcheck(ctx, p) for p in ctx.ancestors(node)):
        return "gradcheck needs float64 inputs (its finite differences are too coarse in float32)"
    scope = ctx.enclosing_function(node) or ctx.tree
    if _calls_gradcheck(ctx, scope):
        return "this code calls gradcheck, which needs float64 (its finite differences are too coarse in float32)"
    if _in_dtype_list(ctx, node):
        return "the dtype is listed with other dtypes (compared or iterated over); float32 would be listed twice"
    if not module_moves_tensors(ctx):
        # All or nothing: rewriting only some float64 of a host-only module mixes dtypes
        # (`m.double()` -> `m.float()` fed a float64 input raises).
        return ("this module never moves tensors to a device: its float64 stays on the CPU, where "
                "float64 is exact (rewriting some of it would mix dtypes)")
    call = _value_call(ctx, node)
    if call is not None:
        host = host_result(ctx, call)
        if host:
            return f"the float64 value goes to `.{host}()`, i.e. to the host, where float64 is exact"
        if call is node or (isinstance(call.func, ast.Attribute) and call.func.attr in ("to", "type")):
            source = host_receiver(ctx, call)
            if source:
                return f"the tensor comes from `{source}(...)`: it is on the host, where float64 is exact"
            made = host_origin(ctx, call.func.value) if isinstance(call.func, ast.Attribute) else None
            if made is not None:
                return (f"the tensor is computed from the float64 one made on the host on line {made.lineno}, which "
                        "stays float64 (rewriting only this one would mix dtypes)")
        if host_factory(ctx, call):
            return ("the tensor is made without a device and nothing here moves it to one: "
                    "it stays on the CPU, where float64 is exact")
    said = _purpose(ctx, node)
    if said:
        return f"the code says why it uses float64 ({said[:80]!r}); keep it, or move that computation to the CPU"
    return ""


# ---------------------------------------------------------------------------------- the fixer
class Float32:
    name = "float32"

    def plan(self, ctx, hit):
        node, call = hit.node, hit.call
        if isinstance(node, ast.Attribute) and node.attr in _RENAMED:
            target, kind, data = node, "Attribute", {"attr": _RENAMED[node.attr]}
            message = f"Use `{_RENAMED[node.attr]}` (lowers precision on every device)"
        elif hit.match.kind == "methods" and isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
            if call.args or any(k.arg != "memory_format" for k in call.keywords):
                return None
            target, kind, data = call, "Call", {"method": "float"}
            message = "Use `.float()` (lowers precision on every device)"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in ("float64", "double"):
            target, kind, data = node, "SimpleString", {"string": "float32"}
            message = 'Use "float32" (lowers precision on every device)'
        elif isinstance(node, ast.Name) and node.id == "float":
            target, kind, data = node, "Name", {"dotted": "torch.float32"}
            message = "Use `torch.float32` (lowers precision on every device)"
        elif isinstance(node, ast.Name) and ctx.import_bindings.get(node.id) in ("torch.float64", "torch.double"):
            if ctx.bound.get(node.id, 0) != 1:
                ctx.note(hit, f"not rewritten: `{node.id}` is bound more than once in this module")
                return None
            target, kind = node, "Name"
            data = {"dotted": "torch.float32", "unimport": ctx.import_bindings[node.id], "asname": node.id}
            message = "Use `torch.float32` (lowers precision on every device)"
        else:
            return None
        why = why_float64_stays(ctx, hit, target if kind != "Call" else call)
        if why:
            ctx.note(hit, f"not rewritten: {why}")
            return None
        return ctx.propose(hit, target, kind, message, data, applicability="unsafe")

    def rewrite(self, rx, original, updated, data):
        import libcst as cst

        from ..decline import Decline
        from ..nodes import renamed, renamed_method

        if "attr" in data:
            return renamed(updated, data["attr"])
        if "method" in data:
            if not isinstance(updated.func, cst.Attribute):
                raise Decline("the call is no longer a method call")
            return renamed_method(updated, data["method"])
        if "string" in data:
            if updated.evaluated_value not in ("float64", "double"):
                raise Decline("the string is not a plain dtype name")
            return updated.with_changes(value=f"{updated.prefix}{updated.quote}{data['string']}{updated.quote}")
        if "dotted" in data:
            new = rx.dotted(data["dotted"], original).with_changes(lpar=updated.lpar, rpar=updated.rpar)
            if data.get("unimport"):
                module, _, obj = data["unimport"].rpartition(".")
                asname = data.get("asname")
                rx.remove_import_if_unused(module, obj, asname if asname != obj else None)
            return new
        raise Decline("nothing to rewrite")


FIXER = Float32()
