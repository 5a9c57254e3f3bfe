"""Library parameter defaults: ``def f(device="cuda"):`` -> ``def f(device=None):`` whose body starts
with ``if device is None: device = <the current device>``.

A default is evaluated when the module is imported, and a library module must not ask for the
device then; the function takes it when it runs. The annotation, if any, is made to accept None.
"""

from __future__ import annotations

import ast

from ..engine.parameters import parameter_defaults
from .decline import Decline
from .device_choice import qual
from .device_forms import convert, cst_literal_kind, literal_kind
from .load_locations import loads_with


def parameter_default(ctx, node):
    """``def f(device="cuda")`` / ``def f(device=torch.device("cuda"))``: (the function, the
    parameter, whether the default is a ``torch.device``), or None."""
    value, parent = node, ctx.parent(node)
    if (isinstance(parent, ast.Call) and qual(ctx, parent.func) == "torch.device" and len(parent.args) == 1
            and not parent.keywords and parent.args[0] is node):
        value, parent = parent, ctx.parent(parent)
    if not isinstance(parent, ast.arguments):
        return None
    fn = ctx.parent(parent)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    for arg, default in parameter_defaults(parent):
        if default is value:
            return fn, arg, value is not node
    return None


def _optional_annotation(ctx, annotation) -> str:
    """How the parameter's annotation takes ``None``: "none" (no annotation), "keep" (already
    ``Optional``), "union" (``Union[...]``), "pipe" (``X | Y``, or ``from __future__ import
    annotations``), "optional" (``Optional`` imported), "typing" (``typing`` imported); "" when
    it cannot without a new import."""
    bindings = ctx.import_bindings
    if annotation is None:
        return "none"
    if isinstance(annotation, ast.Subscript):
        head = qual(ctx, annotation.value) or getattr(annotation.value, "id", "")
        if head in ("typing.Optional", "Optional"):
            return "keep"
        if head in ("typing.Union", "Union"):
            return "union"
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return "pipe"
    if any(isinstance(s, ast.ImportFrom) and s.module == "__future__" and any(a.name == "annotations" for a in s.names)
           for s in ctx.tree.body):
        return "pipe"
    if bindings.get("Optional") == "typing.Optional":
        return "optional"
    if bindings.get("typing") == "typing":
        return "typing"
    return ""


def plan_default(ctx, hit, node):
    """A device default of a library function (evaluated when the module is imported): the
    parameter defaults to ``None`` and the function picks the current device when it runs."""
    found = parameter_default(ctx, node)
    if found is None or not ctx.allows("2.6"):
        return None
    fn, arg, as_device = found
    if not fn.body or (fn.body[0].lineno == fn.lineno and not isinstance(fn.body[0], ast.Expr)):
        return None  # `def f(device="cuda"): return ...` on one line
    if not any(isinstance(n, ast.Name) and n.id == arg.arg and isinstance(n.ctx, ast.Load)
               for stmt in fn.body for n in ast.walk(stmt)):
        ctx.note(hit, f"not rewritten: the function never reads `{arg.arg}` (a stub, such as an abstract method): the "
                      "default says what the implementations pick; change it with them")
        return None
    tested = _tested_for_none(ctx, fn, arg.arg)
    if tested is not None:
        ctx.note(hit, f"not rewritten: the function gives `{arg.arg}=None` a meaning of its own (line {tested.lineno}: "
                      f"`{ctx.segment(tested)[:50]}`); defaulting to None would take that branch away from its callers")
        return None
    inside = fn.body[0]
    data, _ = ctx.device_choice(inside)
    if not data:
        return None
    if data.get("device") != "library" and not _runs_before_definition(ctx, fn, data):
        return None  # the default can name the module's device directly
    annotation = _optional_annotation(ctx, arg.annotation)
    if not annotation:
        ctx.note(hit, f"not rewritten: `{arg.arg}` would default to None, and its annotation needs `Optional`, "
                      "which this module does not import; add the import, or pass the device in")
        return None
    if any(isinstance(n, (ast.Global, ast.Nonlocal)) and arg.arg in n.names for n in ctx.walk(fn)):
        return None
    caller = _passes_none(ctx, fn, arg)
    if caller is not None:
        ctx.note(hit, f"not rewritten: `{ctx.segment(caller)[:50]}` (line {caller.lineno}) passes `{arg.arg}=None`, "
                      "which means the CPU there; defaulting to None would send that call to the accelerator")
        return None
    # `device="cuda:0"` read as "cpu" or not (`if device != "cpu":`, mmdetection3d's `init_model`, read
    # set 71), or handed to `torch.load`: on a CPU-only host "cpu:0" would be neither, so the CPU
    # gets its plain name (as `convert` writes for `torch.load`)
    plain_cpu = literal_kind(node) == "indexed" and (_compared_with_cpu(ctx, fn, arg.arg)
                                                     or loads_with(ctx, fn.body[0], arg.arg))
    return ctx.propose(hit, fn, type(fn).__name__,
                       f"Default `{arg.arg}` to None and take the current accelerator when the function runs "
                       "(callers passing None now get it too)",
                       {**data, "mode": "default", "param": arg.arg, "annotation": annotation, "as_device": as_device,
                        "load_location": plain_cpu},
                       applicability="unsafe", fixer="device_string")


def _tested_for_none(ctx, fn, name: str) -> ast.Compare | None:
    """The first test of the parameter ``name`` against None in ``fn`` (``device is None``, SuGaR's
    ``if device is None: device = p3d_cameras.device``), or None."""
    for n in ctx.walk(fn):
        if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)):
            pair = (n.left, n.comparators[0])
            if any(isinstance(a, ast.Name) and a.id == name and isinstance(b, ast.Constant) and b.value is None
                   for a, b in (pair, pair[::-1])):
                return n
    return None


def _compared_with_cpu(ctx, fn, name: str) -> bool:
    """Does ``fn`` compare its parameter ``name`` with ``"cpu"`` (``==``, ``!=``)?"""
    for n in ctx.walk(fn):
        if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], (ast.Eq, ast.NotEq)):
            pair = (n.left, n.comparators[0])
            if any(isinstance(a, ast.Name) and a.id == name and isinstance(b, ast.Constant) and b.value == "cpu"
                   for a, b in (pair, pair[::-1])):
                return True
    return False


def _passes_none(ctx, fn, arg, depth: int = 0) -> ast.Call | None:
    """A call in the module of ``fn`` (by its name, or ``self.``/``cls.`` and a name; a class's by the
    class's name) that passes ``None`` for ``arg`` by keyword (pytorch3d's ``_init_random_rays(device=None)``,
    the CPU there), or None. The None may come through the caller's own parameter that defaults to
    None, or a dict of keywords spread into the call (mast3r's ``opt = dict(device=device, ...)`` then
    ``fast_reciprocal_NNs(A, B, **opt)``, where ``device=None`` leaves the tensors where they are),
    or through a parameter whose own callers pass None (its ``cdistMatcher(pts1, device=device)``)."""
    names = {fn.name}
    if fn.name == "__init__":
        owner = ctx.parent(fn)
        if isinstance(owner, ast.ClassDef):
            names.add(owner.name)
    for n in (c for name in names for c in _calls_by_name(ctx).get(name, ())):
        for k in n.keywords:
            if k.arg == arg.arg and _none_here(ctx, n, k.value, depth):
                return n
            if k.arg is None and isinstance(k.value, ast.Name) and _spreads_none(ctx, n, k.value.id, arg.arg, depth):
                return n
    return None


def _calls_by_name(ctx) -> dict[str, list[ast.Call]]:
    """The module's calls with keywords, by the callee's last name (``f(...)``, ``self.f(...)``); kept on ``ctx``."""
    found = ctx.__dict__.get("_nrn_calls_by_name")
    if found is None:
        found = {}
        for n in ctx.walk(ctx.tree):
            if isinstance(n, ast.Call) and n.keywords:
                name = getattr(n.func, "id", None) or getattr(n.func, "attr", None)
                if name:
                    found.setdefault(name, []).append(n)
        ctx.__dict__["_nrn_calls_by_name"] = found
    return found


def _none_here(ctx, call: ast.Call, value: ast.AST, depth: int) -> bool:
    """Can ``value`` be None at ``call``: ``None``, or a parameter of the enclosing function that
    defaults to None or that its own callers pass None (followed three calls deep)?"""
    if isinstance(value, ast.Constant):
        return value.value is None
    if not isinstance(value, ast.Name):
        return False
    caller = ctx.enclosing_function(call)
    if caller is None or isinstance(caller, ast.Lambda):
        return False
    a = caller.args
    positional = [*a.posonlyargs, *a.args]
    pairs = [*zip(positional[len(positional) - len(a.defaults):], a.defaults), *zip(a.kwonlyargs, a.kw_defaults)]
    for p, d in pairs:
        if p.arg == value.id:
            return (isinstance(d, ast.Constant) and d.value is None) or (
                depth < 3 and _passes_none(ctx, caller, p, depth + 1) is not None)
    return False


def _spreads_none(ctx, call: ast.Call, name: str, key: str, depth: int) -> bool:
    """Is ``name`` (spread as ``**name`` into ``call``) a dict built in the enclosing function with
    ``key`` set to None (:func:`_none_here`)?"""
    caller = ctx.enclosing_function(call)
    if caller is None:
        return False
    for n in ctx.walk(caller):
        if not (isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)):
            continue
        value = n.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict":
            if any(k.arg == key and _none_here(ctx, call, k.value, depth) for k in value.keywords):
                return True
        elif isinstance(value, ast.Dict):
            if any(isinstance(k, ast.Constant) and k.value == key and _none_here(ctx, call, v, depth)
                   for k, v in zip(value.keys, value.values)):
                return True
    return False


def _runs_before_definition(ctx, fn, data) -> bool:
    """Is the ``def`` (whose defaults are evaluated there) before the module's device definition?"""
    if data.get("device") == "script":
        return fn.lineno <= ctx.leading_end
    stmt = ctx.device_variable
    return data.get("device") == "var" and stmt is not None and fn.lineno <= (stmt.end_lineno or stmt.lineno)


def _find_param(params, name: str):
    for field in ("posonly_params", "params", "kwonly_params"):
        for i, p in enumerate(getattr(params, field)):
            if p.name.value == name and p.default is not None:
                return field, i, p
    return None


def _optional(annotation, how: str):
    import libcst as cst

    from .nodes import attribute

    if how in ("none", "keep"):
        return annotation
    inner = annotation.annotation
    none = cst.Name("None")
    if how == "pipe":
        return annotation.with_changes(annotation=cst.BinaryOperation(
            left=inner, operator=cst.BitOr(), right=none))
    if how == "union":
        if not isinstance(inner, cst.Subscript):
            raise Decline("the annotation is not the planned Union")
        elements = list(inner.slice)
        last = elements[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        return annotation.with_changes(annotation=inner.with_changes(
            slice=[*elements[:-1], last, cst.SubscriptElement(cst.Index(none))]))
    head = cst.Name("Optional") if how == "optional" else attribute("typing", "Optional")
    return annotation.with_changes(annotation=cst.Subscript(value=head, slice=[cst.SubscriptElement(cst.Index(inner))]))


def rewrite_default(rx, original, updated, data):
    """``def f(device="cuda"):`` -> ``def f(device=None):`` whose body starts with
    ``if device is None: device = _current_device().type``."""
    import libcst as cst
    from libcst.helpers import parse_template_statement

    name = data["param"]
    found, before = _find_param(updated.params, name), _find_param(original.params, name)
    if found is None or before is None or not isinstance(updated.body, cst.IndentedBlock):
        raise Decline("the function does not have the planned parameter")
    field, i, param = found
    site, default = before[2].default, param.default
    literal = default.args[0].value if data.get("as_device") and isinstance(default, cst.Call) and default.args else default
    kind = cst_literal_kind(literal)
    if kind not in ("plain", "indexed"):
        raise Decline("the default is not the planned CUDA device")
    if data.get("as_device") and kind == "plain":
        value = rx.device(site, data)
    elif data.get("as_device"):
        value = default.with_changes(args=[default.args[0].with_changes(value=convert(rx, site, literal, data))])
    else:
        value = convert(rx, site, literal, data)
    new_param = param.with_changes(default=cst.Name("None"))
    if param.annotation is not None:
        new_param = new_param.with_changes(annotation=_optional(param.annotation, data.get("annotation", "none")))
    params = list(getattr(updated.params, field))
    params[i] = new_param
    check = parse_template_statement("if {n} is None:\n    {n} = {v}\n", config=rx.module.tree.config_for_parsing,
                                     n=cst.Name(name), v=value)
    body = list(updated.body.body)
    first = body[0] if body else None
    at = 1 if (isinstance(first, cst.SimpleStatementLine) and len(first.body) == 1
               and isinstance(first.body[0], cst.Expr) and isinstance(first.body[0].value, (cst.SimpleString, cst.ConcatenatedString))) else 0
    # after the function's `global`/`nonlocal` statements, which a maintainer keeps first
    while at < len(body) and isinstance(body[at], cst.SimpleStatementLine) and all(
            isinstance(small, (cst.Global, cst.Nonlocal)) for small in body[at].body):
        at += 1
    body.insert(at, check)
    following = body[at + 1] if at + 1 < len(body) else None
    if isinstance(following, (cst.FunctionDef, cst.ClassDef)) and not (
            following.leading_lines and following.leading_lines[0].comment is None):
        # a nested `def` after a statement gets a blank line above it, as `ruff format` gives it (Amphion)
        body[at + 1] = following.with_changes(leading_lines=[cst.EmptyLine(indent=False), *following.leading_lines])
    return updated.with_changes(params=updated.params.with_changes(**{field: params}),
                                body=updated.body.with_changes(body=body))
