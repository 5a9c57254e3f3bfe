"""Where a float64 value lives: on the host (made without a device and never moved, sent to
``.cpu()``/``.numpy()``, taken from ``torch.from_numpy``) or on a device.

NRN301's fixer (``fixers/float32.py``) asks this before it lowers a float64 to float32: on the
CPU float64 is exact, so a host-side value keeps it. A value is followed through the names it is
stored in, the expressions made from it, a local helper it is handed to
(``register_buffer = lambda name, val: ...``) and, when its function returns it, the calls of that
function in the same module.
"""

from __future__ import annotations

import ast
import fnmatch

_FLOAT_DTYPES = {"float64", "double", "float32", "float", "float16", "half", "bfloat16", "float8_e4m3fn",
                 "float8_e5m2", "complex64", "complex128", "cfloat", "cdouble", "int8", "int16", "int32",
                 "int64", "long", "int", "uint8", "bool", "DoubleTensor", "FloatTensor", "HalfTensor"}
_HOST_RESULTS = {"cpu", "numpy", "item", "tolist"}
_PASS_THROUGH = {"detach", "clone", "contiguous", "flatten", "squeeze", "unsqueeze", "view", "reshape", "t"}
_FACTORIES = {"tensor", "as_tensor", "zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye",
              "rand", "randn", "randint", "randperm", "tril_indices", "triu_indices", "scalar_tensor", "normal"}
_DEVICE_NAMES = ("device", "DEVICE", "*_device", "device_*", "*_DEVICE")


def callee_name(ctx, func) -> str:
    return ctx.qualname(func) or (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))



def dtype_like(node) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in _FLOAT_DTYPES
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value in _FLOAT_DTYPES
    return isinstance(node, ast.Name) and node.id in _FLOAT_DTYPES


def host_result(ctx, call: ast.Call) -> str:
    """The host method the call's result goes to (``.cpu()``, ``.numpy()``...), or ``""``."""
    node = call
    while True:
        parent = ctx.parent(node)
        if not isinstance(parent, ast.Attribute):
            return ""
        grand = ctx.parent(parent)
        if not (isinstance(grand, ast.Call) and grand.func is parent):
            return ""
        if parent.attr in _HOST_RESULTS:
            return parent.attr
        if parent.attr not in _PASS_THROUGH:
            return ""
        node = grand


def host_receiver(ctx, call: ast.Call) -> str:
    """``x.cpu().double()``, ``torch.from_numpy(a).double()``: the value already lives on the host."""
    node = call.func.value if isinstance(call.func, ast.Attribute) else None
    while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Call):
            name = callee_name(ctx, node.func)
            if name in ("torch.from_numpy",) or name.endswith(".cpu") or name == "cpu" or name.endswith(".numpy"):
                return name.rsplit(".", 1)[-1]
            node = node.func
        else:
            node = node.value
    return ""


def module_moves_tensors(ctx) -> bool:
    """Does anything in the module put a tensor on a device (or name one)?"""
    if "_nrn301_moves" not in ctx.__dict__:
        moves = False
        for n in ctx.walk(ctx.tree):
            if isinstance(n, ast.Call):
                func = n.func
                if isinstance(func, ast.Attribute) and func.attr in ("cuda", "to_empty", "pin_memory"):
                    moves = True
                elif isinstance(func, ast.Attribute) and func.attr == "to" and not all(
                        dtype_like(a) for a in [*n.args, *(k.value for k in n.keywords if k.arg != "dtype")]):
                    moves = True
                elif ctx.qualname(func) in ("torch.device", "torch.set_default_device"):
                    moves = True
                elif any(k.arg == "device" or k.arg is None for k in n.keywords):
                    moves = True
            elif isinstance(n, ast.Name) and any(fnmatch.fnmatchcase(n.id, p) for p in _DEVICE_NAMES):
                moves = True
            elif isinstance(n, ast.arg) and any(fnmatch.fnmatchcase(n.arg, p) for p in _DEVICE_NAMES):
                moves = True
            elif isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.split(":")[0] in ("cuda", "neuron"):
                moves = True
            if moves:
                break
        ctx.__dict__["_nrn301_moves"] = moves
    return ctx.__dict__["_nrn301_moves"]


def host_factory(ctx, call: ast.Call) -> bool:
    """``torch.zeros(3, dtype=torch.float64)`` with no device, in a module that never moves tensors."""
    name = ctx.qualname(call.func) or ""
    if not (name.startswith("torch.") and name.rsplit(".", 1)[-1] in _FACTORIES):
        return False
    if any(k.arg in ("device", None) for k in call.keywords):
        return False
    return not module_moves_tensors(ctx) or not _leaves_the_host(ctx, call)


def _moved(ctx, node: ast.AST) -> bool:
    """Is the value of ``node`` put on a device right there: ``.to(...)``/``.cuda()`` on it, or given
    to ``register_buffer``/``nn.Parameter`` (which follow the module to its device), or stored in an
    attribute or a container (out of sight)?"""
    parent = ctx.parent(node)
    if isinstance(parent, ast.Attribute):
        return parent.attr in ("to", "cuda", "type", "copy_", "pin_memory")
    if isinstance(parent, ast.keyword):
        parent = ctx.parent(parent)
    if isinstance(parent, ast.Call) and node is not parent.func:
        name = callee_name(ctx, parent.func).rsplit(".", 1)[-1]
        return name in ("register_buffer", "Parameter", "copy_", "to")
    if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        if parent.value is not node:
            return False  # `weights[i] = 1.0`: written into, not stored away
        return any(not isinstance(t, ast.Name) for t in targets)
    return isinstance(parent, (ast.List, ast.Tuple, ast.Set, ast.Dict))


def _leaves_the_host(ctx, call: ast.Call) -> bool:
    """A tensor made without a device is on the CPU (``torch.set_default_device`` aside): does the
    code around it move it to a device? The value is followed through the names it is stored in
    and the expressions made from it (``t = torch.arange(n, dtype=torch.float64) + shift``), and,
    when its function returns it, to the calls of that function in the module. Only used on the
    CPU, or returned to callers this module does not show, its float64 is exact and is kept."""
    if any(isinstance(n, ast.Call) and ctx.qualname(n.func) == "torch.set_default_device" for n in ctx.walk(ctx.tree)):
        return True
    return _flows_to_a_device(ctx, call, set(), 0)


def _same_values(ctx, node: ast.AST) -> ast.AST:
    """The outermost expression that still holds ``node``'s float64 values: through arithmetic,
    ``data[2:]``, ``x.view(-1)``, ``x.double()``, ``x.to(torch.float64)``."""
    while True:
        parent = ctx.parent(node)
        if isinstance(parent, (ast.BinOp, ast.UnaryOp)) or (isinstance(parent, ast.Subscript) and parent.value is node):
            node = parent
        elif (isinstance(parent, ast.Attribute) and isinstance(ctx.parent(parent), ast.Call)
              and ctx.parent(parent).func is parent
              and (parent.attr in _PASS_THROUGH or parent.attr == "double"
                   or (_converts(ctx.parent(parent)) and _is_float64_dtype(ctx.parent(parent))))):
            node = ctx.parent(parent)
        else:
            return node


def _converts(call: ast.Call) -> bool:
    """``x.to(torch.float32)``, ``x.type(torch.half)``: a dtype conversion that moves nothing."""
    args = [*call.args, *(k.value for k in call.keywords if k.arg == "dtype")]
    return (isinstance(call.func, ast.Attribute) and call.func.attr in ("to", "type") and bool(args)
            and len(args) == len(call.args) + len(call.keywords) and all(dtype_like(a) for a in args))


def _is_float64_dtype(call: ast.Call) -> bool:
    args = [*call.args, *(k.value for k in call.keywords)]
    return any((a.attr if isinstance(a, ast.Attribute) else getattr(a, "id", getattr(a, "value", None)))
               in ("float64", "double") for a in args)


def _narrowed(ctx, node: ast.AST) -> bool:
    """Is ``node``'s value turned into a narrower float on the spot (``.float()``,
    ``.to(torch.float32)``)? Then the float64 part stayed where it was computed."""
    parent = ctx.parent(node)
    grand = ctx.parent(parent) if isinstance(parent, ast.Attribute) else None
    if not (isinstance(grand, ast.Call) and grand.func is parent):
        return False
    return parent.attr in ("float", "half", "bfloat16") or (_converts(grand) and not _is_float64_dtype(grand))


def _local_lambda(ctx, call: ast.Call) -> ast.Lambda | None:
    """``register_buffer = lambda name, val: ...`` in the function of ``call`` (a call by that name)."""
    if not isinstance(call.func, ast.Name):
        return None
    scope = ctx.enclosing_function(call) or ctx.tree
    for n in ctx.walk(scope):
        if (isinstance(n, ast.Assign) and isinstance(n.value, ast.Lambda) and len(n.targets) == 1
                and isinstance(n.targets[0], ast.Name) and n.targets[0].id == call.func.id):
            return n.value
    return None


def _flows_to_a_device(ctx, node: ast.AST, seen: set, depth: int) -> bool:
    """Does the value of ``node`` reach a device (see ``_leaves_the_host``)?"""
    if depth > 24:
        return True  # too long a chain to follow: assume it does
    node = _same_values(ctx, node)
    if _narrowed(ctx, node):
        return False
    parent = ctx.parent(node)
    helper = _local_lambda(ctx, parent) if isinstance(parent, ast.Call) and node in parent.args else None
    if helper is not None:
        params = [a.arg for a in helper.args.args]
        index = parent.args.index(node)
        if index >= len(params):
            return True
        uses = [n for n in ast.walk(helper.body) if isinstance(n, ast.Name) and n.id == params[index]]
        return any(not _narrowed(ctx, _same_values(ctx, n)) and (
            _moved(ctx, _same_values(ctx, n)) or _same_values(ctx, n) is helper.body
            and _flows_to_a_device(ctx, parent, seen, depth + 1)) for n in uses)
    if _moved(ctx, node):
        return True
    stmt = ctx.statement_of(node)
    if isinstance(stmt, ast.Return):
        return _returned_to_a_device(ctx, stmt, seen, depth)
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
        return False
    name = stmt.targets[0].id
    scope = ctx.enclosing_function(stmt) or ctx.tree
    if (id(scope), name) in seen:
        return False
    seen.add((id(scope), name))
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
               and _flows_to_a_device(ctx, n, seen, depth + 1)
               for n in ctx.walk(scope))


def _returned_to_a_device(ctx, ret: ast.Return, seen: set, depth: int) -> bool:
    """The function returning ``ret``'s value: does one of its calls in the module move the result?
    A function the module never calls by name (it is called elsewhere, or passed around) is not
    followed: nothing here says where its result goes."""
    func = ctx.enclosing_function(ret)
    if func is None or (id(func), "return") in seen:
        return False
    seen.add((id(func), "return"))
    calls = [n for n in ctx.walk(ctx.tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and n.func.id == func.name]
    return any(_flows_to_a_device(ctx, c, seen, depth + 1) for c in calls)


def host_origin(ctx, expr: ast.AST) -> ast.Call | None:
    """The float64 tensor factory kept on the host (:func:`host_factory`) that ``expr`` is computed
    from, through the names assigned in its function (timm's ``distances = (choice_positions -
    center).abs()`` from ``choice_positions = torch.arange(..., dtype=torch.float64)``), or None."""
    scope = ctx.enclosing_function(expr) or ctx.tree
    assigned: dict[str, list[ast.AST]] = {}
    for n in ctx.walk(scope):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            assigned.setdefault(n.targets[0].id, []).append(n.value)
    todo, seen = [expr], set()
    while todo and len(seen) < 32:
        value = todo.pop()
        for n in ast.walk(value):
            if isinstance(n, ast.Call) and _is_float64_dtype(n) and host_factory(ctx, n):
                return n
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in seen:
                seen.add(n.id)
                todo.extend(assigned.get(n.id, ()))
    return None
