"""Device strings: ``"cuda"``, ``"cuda:1"``, ``f"cuda:{rank}"`` -> the module's current device.

A string stays a string, so code that stores or formats it keeps working: ``"cuda"`` becomes
``DEVICE.type`` (``.to("cuda")`` becomes ``.to(DEVICE)``), ``"cuda:1"`` becomes
``f"{DEVICE.type}:1"``, and ``f"cuda:{rank}"``, ``"cuda:{}".format(rank)`` and ``"cuda:%d" % rank``
become ``f"{DEVICE.type}:{rank}"``. With ``--device neuron`` only the word changes.

What decides a literal is rewritten with it:

- the availability idiom ``"cuda" if torch.cuda.is_available() else "cpu"`` is replaced as a whole
  by the device (or its type): the guard and what it decides go together. When the other arm is
  not a plain CPU fallback, the guard becomes ``torch.accelerator.is_available()``;
- ``"cuda" if <device comparison> else "cpu"`` (``'cuda' in device``, ``device.type == "cuda"``):
  the ``"cuda"`` of the comparison is rewritten too (``DEVICE.type if DEVICE.type in device else
  'cpu'``). On a CUDA machine ``DEVICE.type`` is ``"cuda"``, so both read exactly as before; on
  Trainium the comparison and the literal both say ``neuron``;
- a literal inside ``if device == "cuda":`` (or in a loop over device choices whose body compares
  the device with ``"cuda"``) is left alone, with a note: the branch may hold CUDA-only code that
  must not start running elsewhere.

A module-level ``device = torch.device("cuda")`` becomes the idiom itself and the other sites
reuse it. Planning (``plan``) reads the ``ast`` only; the LibCST side (``rewrite``) is also used by
the ``amp`` and ``distributed`` fixers for their device-type literals.
"""

from __future__ import annotations

import ast
import io
import os
import re
import sys
import tokenize

from ...parameters import parameter_defaults
from ..plan import DEVICE_VAR

#: ``"cuda"``, ``"cuda:3"``
_INDEXED = re.compile(r"^cuda:(\d+)$")
#: the line length ``ruff format`` wraps at
LINE_LENGTH = 88
_COMPARE_OPS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)
#: strings a device comparison may hold: "cuda" or "cuda:N"
_FORMATS = ("cuda:{}", "cuda:{0}")
_PERCENTS = ("cuda:%d", "cuda:%s", "cuda:%i")


# ====================================================================== plan (ast only)
def is_cuda_value(value) -> bool:
    return isinstance(value, str) and (value == "cuda" or bool(_INDEXED.match(value)))


def literal_kind(node) -> str | None:
    """``"plain"`` (``"cuda"``), ``"indexed"`` (``"cuda:1"``), ``"fstring"`` (``f"cuda:{i}"``),
    ``"format"`` (``"cuda:{}".format(i)`` / ``"cuda:%d" % i``), or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if node.value == "cuda":
            return "plain"
        return "indexed" if _INDEXED.match(node.value) else None
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value.startswith("cuda:"):
            return "fstring"
        return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        base = node.func.value
        if isinstance(base, ast.Constant) and base.value in _FORMATS:
            return "format"
    if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod)
            and isinstance(node.left, ast.Constant) and node.left.value in _PERCENTS):
        return "format"
    return None


_CST_KIND = {"plain": "SimpleString", "indexed": "SimpleString", "fstring": "FormattedString"}


def cst_kind(node) -> str:
    kind = literal_kind(node)
    if kind in _CST_KIND:
        return _CST_KIND[kind]
    return "Call" if isinstance(node, ast.Call) else "BinaryOperation"


def _one_literal(ctx, node) -> bool:
    """Is the node's source one string literal (not ``"cu" "da"``, implicitly concatenated)?"""
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(ctx.segment(node)).readline)
                  if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.COMMENT)]
    except (tokenize.TokenError, SyntaxError):
        return False
    if sys.version_info >= (3, 12) and tokens and tokens[0].type == tokenize.FSTRING_START:
        depth = 0
        for i, t in enumerate(tokens):
            depth += t.type == tokenize.FSTRING_START
            depth -= t.type == tokenize.FSTRING_END
            if depth == 0:
                return i == len(tokens) - 1
        return False
    return len(tokens) == 1 and tokens[0].type == tokenize.STRING


def _runs_at_import(ctx, node) -> bool:
    """Does the code at ``node`` run when the module is imported? (Module level, a class body, a
    default value, a decorator: everything not inside a function body.)"""
    child = node
    for p in ctx.ancestors(node):
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(child is s for s in p.body):
            return False
        if isinstance(p, ast.Lambda) and child is p.body:
            return False
        child = p
    return True


_LIBRARY_WHY = ("this runs when the module is imported (a default value, a decorator or a class body), and a "
                "library module must not probe the device then; pass the device in, or choose it inside a function")


def is_test_file(ctx) -> bool:
    name = os.path.basename(getattr(ctx, "path", "") or "")
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def device_data(ctx, hit, node, import_ok: bool = False) -> dict | None:
    """Where a site at ``node`` gets the current device from (plan data), or None after a note.

    ``import_ok``: the site may ask for the device when the module is imported (a test module's
    ``parametrize`` list: pytest imports it to collect the tests, nobody imports it as a library).
    """
    if not ctx.neuron and not ctx.allows("2.6"):
        ctx.note(hit, "not rewritten: `torch.accelerator` needs PyTorch 2.6 (raise --min-torch to use it)")
        return None
    data = ctx.device_or_note(hit, node)
    if data is None:
        return None
    how = data.get("device")
    if how != "neuron" and not ctx.at_module_level(node) and _runs_at_import(ctx, node):
        line = node.lineno
        if how == "library" and not import_ok:
            ctx.note(hit, f"not rewritten: {_LIBRARY_WHY}")
            return None
        stmt = ctx.device_variable
        if how == "var" and stmt is not None and line <= (stmt.end_lineno or stmt.lineno):
            ctx.note(hit, f"not rewritten: this runs before the module's device variable `{data['name']}` is defined")
            return None
        if how == "script" and line <= ctx.leading_end:
            ctx.note(hit, "not rewritten: this runs among the imports, before a device variable could be defined")
            return None
    return data


def _qual(ctx, node) -> str:
    return ctx.qualname(node) or "" if isinstance(node, (ast.Name, ast.Attribute)) else ""


def _is_availability(ctx, test) -> bool:
    """``torch.cuda.is_available()``"""
    return (isinstance(test, ast.Call) and not test.args and not test.keywords
            and _qual(ctx, test.func) == "torch.cuda.is_available")


def _cpu_fallback_chain(ctx, node) -> bool:
    """``"cpu"``, or ``"mps" if torch.backends.mps.is_available() else <chain>``: a fallback that
    ``torch.accelerator.current_accelerator()`` (or the CPU) already covers."""
    if isinstance(node, ast.Constant) and node.value == "cpu":
        return True
    if isinstance(node, ast.IfExp) and isinstance(node.body, ast.Constant) and isinstance(node.body.value, str):
        test = node.test
        is_check = (isinstance(test, ast.Call) and not test.args and isinstance(test.func, ast.Attribute)
                    and test.func.attr == "is_available" and _qual(ctx, test.func).startswith("torch."))
        return is_check and _cpu_fallback_chain(ctx, node.orelse)
    return False


def _supported_cuda_constants(test) -> set[int]:
    """ids of the ``"cuda"`` strings of ``test`` that a rewrite can follow: operands of ``==``,
    ``!=``, ``in``, ``not in`` (or elements of a literal list there), the argument of ``.startswith``."""
    ids: set[int] = set()

    def take(operand):
        if isinstance(operand, ast.Constant) and is_cuda_value(operand.value):
            ids.add(id(operand))
        elif isinstance(operand, (ast.List, ast.Tuple, ast.Set)):
            for e in operand.elts:
                if isinstance(e, ast.Constant) and is_cuda_value(e.value):
                    ids.add(id(e))

    for n in ast.walk(test):
        if isinstance(n, ast.Compare) and all(isinstance(op, _COMPARE_OPS) for op in n.ops):
            for operand in (n.left, *n.comparators):
                take(operand)
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "startswith"
              and len(n.args) == 1 and not n.keywords):
            take(n.args[0])
    return ids


def cuda_test(ctx, test) -> tuple[bool, bool, str]:
    """What a test asks about CUDA: (compares a device with ``"cuda"``, calls
    ``torch.cuda.is_available()``, what in it a rewrite cannot follow: "" when nothing)."""
    supported = _supported_cuda_constants(test)
    compares = available = False
    for n in ast.walk(test):
        if isinstance(n, ast.Constant) and is_cuda_value(n.value):
            if id(n) not in supported:
                return True, available, f"`{n.value}` is used there in a way the fix cannot follow"
            compares = True
        elif isinstance(n, ast.Attribute) and n.attr == "is_cuda":
            return True, available, "it asks `.is_cuda`"
        elif isinstance(n, ast.Call) and _is_availability(ctx, n):
            if not ctx.segment(n.func).endswith(".cuda.is_available"):
                return compares, True, "it calls `is_available` under another name"
            available = True
        elif (isinstance(n, (ast.Name, ast.Attribute)) and _qual(ctx, n).startswith("torch.cuda.")
              and _qual(ctx, n) != "torch.cuda.is_available"):
            return True, available, f"it uses `{_qual(ctx, n)}`"
    return compares, available, ""


def _short(ctx, node, limit: int = 60) -> str:
    text = " ".join(ctx.segment(node).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _decided_by_branch(ctx, node) -> ast.AST | None:
    """The test of an enclosing ``if`` statement (or of a conditional expression, when ``node`` is
    not one of its arms) that compares a device with CUDA, up to the enclosing function."""
    child = node
    for p in ctx.ancestors(node):
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)):
            return None
        if isinstance(p, (ast.If, ast.While, ast.IfExp)) and child is not p.test and p is not ctx.parent(node):
            # `if torch.cuda.is_available():` guards CUDA without choosing it: the string follows
            # the current device inside, as NRN203 makes the guard follow it
            compares, _, why = cuda_test(ctx, p.test)
            if compares or why:
                return p.test
        child = p
    return None


def _first_arg_of_to(ctx, node) -> bool:
    call = ctx.parent(node)
    return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "to"
            and bool(call.args) and call.args[0] is node)


def _parametrize_value(ctx, node) -> bool:
    """Is ``node`` an element of the values of ``@pytest.mark.parametrize("device", [...])``?"""
    container = ctx.parent(node)
    call = ctx.parent(container)
    return (isinstance(container, (ast.List, ast.Tuple)) and isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute) and call.func.attr == "parametrize"
            and len(call.args) >= 2 and call.args[1] is container)


def plan_literal(ctx, hit, node, message: str = "Use the current accelerator instead of CUDA"):
    """Plan the rewrite of one CUDA device literal (shared by NRN202, NRN205 and NRN206)."""
    kind = literal_kind(node)
    if kind is None:
        return None
    if kind != "format" and not _one_literal(ctx, node):
        ctx.note(hit, "not rewritten: the string is built from several literals")
        return None
    if kind == "format":
        base = node.func.value if isinstance(node, ast.Call) else node.left
        if not _one_literal(ctx, base):
            ctx.note(hit, "not rewritten: the string is built from several literals")
            return None
    # the module's own device variable: its definition becomes the idiom
    if not ctx.neuron and ctx.in_device_definition(node):
        if not ctx.allows("2.6"):
            ctx.note(hit, "not rewritten: `torch.accelerator` needs PyTorch 2.6 (raise --min-torch to use it)")
            return None
        value = ctx.device_variable.value
        # `torch.device("cuda")` probes nothing; the idiom asks the driver when the module is imported,
        # which a library module must not do (on CUDA it initialises the driver, perhaps before a fork).
        unsafe = None if ctx.is_script else "unsafe"
        message = "Define the device with `torch.accelerator`" + (
            "" if ctx.is_script else " (this library module then probes the device when it is imported)")
        return ctx.propose(hit, value, type(value).__name__, message,
                           {"mode": "define", "name": ctx.device_variable.targets[0].id}, applicability=unsafe)
    test = _decided_by_branch(ctx, node)
    if test is None and not ctx.neuron and kind == "plain":
        inline = _plan_inline_definition(ctx, hit, node)
        if inline is not None:
            return inline
    if test is not None:
        ctx.note(hit, f"not rewritten: this string is used only when `{_short(ctx, test)}` holds; rewriting it "
                      "alone would leave that test choosing CUDA, and rewriting the test would run the whole "
                      "branch on other devices too: port the test and its branch together by hand")
        return None
    parent = ctx.parent(node)
    if isinstance(parent, ast.IfExp) and node is not parent.test:
        compares, available, why = cuda_test(ctx, parent.test)
        if _is_availability(ctx, parent.test) or (
            isinstance(parent.test, ast.UnaryOp) and isinstance(parent.test.op, ast.Not)
            and _is_availability(ctx, parent.test.operand)
        ):
            return _plan_guard(ctx, hit, node, parent, kind, message)
        if why:
            ctx.note(hit, f"not rewritten: the choice between CUDA and another device is made by "
                          f"`{_short(ctx, parent.test)}` and {why}; port the test and the string together by hand")
            return None
        if compares or available:
            data = device_data(ctx, hit, parent)
            if data is None:
                return None
            if ctx.neuron:
                data = {"mode": "word"}
            else:
                data = {**data, "mode": "decided"}
            return ctx.propose(hit, parent, "IfExp", message + " (with the device test that chooses it)",
                               {**data, "decided": True})
    if not ctx.neuron and kind in ("plain", "indexed"):
        default = _plan_default(ctx, hit, node)
        if default is not None or id(hit) in ctx.notes:
            return default
    data = device_data(ctx, hit, node, import_ok=is_test_file(ctx) and _parametrize_value(ctx, node))
    if data is None:
        return None
    if ctx.neuron:
        return ctx.propose(hit, node, cst_kind(node), message, {"mode": "word"})
    return ctx.propose(hit, node, cst_kind(node), message,
                       {**data, "mode": "literal", "as_device": _first_arg_of_to(ctx, node)})


def _parameter_default(ctx, node):
    """``def f(device="cuda")`` / ``def f(device=torch.device("cuda"))``: (the function, the
    parameter, whether the default is a ``torch.device``), or None."""
    value, parent = node, ctx.parent(node)
    if (isinstance(parent, ast.Call) and _qual(ctx, parent.func) == "torch.device" and len(parent.args) == 1
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
        head = _qual(ctx, annotation.value) or getattr(annotation.value, "id", "")
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


def _plan_default(ctx, hit, node):
    """A device default of a library function (evaluated when the module is imported): the
    parameter defaults to ``None`` and the function picks the current device when it runs."""
    found = _parameter_default(ctx, node)
    if found is None or not ctx.allows("2.6"):
        return None
    fn, arg, as_device = found
    if not fn.body or (fn.body[0].lineno == fn.lineno and not isinstance(fn.body[0], ast.Expr)):
        return None  # `def f(device="cuda"): return ...` on one line
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
    if any(isinstance(n, (ast.Global, ast.Nonlocal)) and arg.arg in n.names for n in ast.walk(fn)):
        return None
    return ctx.propose(hit, fn, type(fn).__name__,
                       f"Default `{arg.arg}` to None and take the current accelerator when the function runs "
                       "(callers passing None now get it too)",
                       {**data, "mode": "default", "param": arg.arg, "annotation": annotation, "as_device": as_device},
                       applicability="unsafe", fixer="device_string")


def _runs_before_definition(ctx, fn, data) -> bool:
    """Is the ``def`` (whose defaults are evaluated there) before the module's device definition?"""
    if data.get("device") == "script":
        return fn.lineno <= ctx.leading_end
    stmt = ctx.device_variable
    return data.get("device") == "var" and stmt is not None and fn.lineno <= (stmt.end_lineno or stmt.lineno)


def _string_definition(ctx, node) -> ast.Assign | None:
    """``NAME = "cuda"`` or ``NAME = "cuda" if torch.cuda.is_available() else "cpu"``: the statement,
    when ``node`` (the ``"cuda"``) or the availability idiom around it is the whole value of a
    one-name assignment."""
    value, parent = node, ctx.parent(node)
    if isinstance(parent, ast.IfExp) and node is parent.body:
        if not (_is_availability(ctx, parent.test) and isinstance(parent.orelse, ast.Constant)
                and parent.orelse.value == "cpu"):
            return None
        value = parent
    stmt = ctx.parent(value)
    if (isinstance(stmt, ast.Assign) and stmt.value is value and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)):
        return stmt
    return None


def _plan_inline_definition(ctx, hit, node):
    """A variable that *is* the module's (or class's) device string, where no shared device can be
    used -- the variable is named ``DEVICE`` itself, or the module binds that name elsewhere: its
    value becomes the current accelerator's type, written out (``"cpu"`` without one)."""
    stmt = _string_definition(ctx, node)
    if stmt is None:
        return None
    name = stmt.targets[0].id
    if name != DEVICE_VAR:
        choice, _ = ctx.device_choice(node)
        if choice:
            return None  # the shared device serves: `name = DEVICE.type`
    if not ctx.allows("2.6"):
        return None
    at_import = ctx.at_module_level(stmt) or _runs_at_import(ctx, stmt)
    library = at_import and not ctx.is_script and not is_test_file(ctx)
    message = "Define the device string with `torch.accelerator`" + (
        " (this library module then probes the device when it is imported)" if library else "")
    kind = "IfExp" if isinstance(stmt.value, ast.IfExp) else "SimpleString"
    return ctx.propose(hit, stmt.value, kind, message, {"mode": "inline", "name": name},
                       applicability="unsafe" if library else None, fixer="device_string")


def _plan_guard(ctx, hit, node, guard: ast.IfExp, kind: str, message: str, fixer: str | None = None):
    """``"cuda" if torch.cuda.is_available() else "cpu"``: the guard and what it decides go together."""
    negated = isinstance(guard.test, ast.UnaryOp)
    cuda_arm, other = (guard.orelse, guard.body) if negated else (guard.body, guard.orelse)
    if node is not cuda_arm:
        ctx.note(hit, f"not rewritten: `{_short(ctx, guard)}` picks CUDA when CUDA is missing; fix it by hand")
        return None
    data = device_data(ctx, hit, guard)
    if data is None:
        return None
    whole = ctx.neuron or (kind == "plain" and _cpu_fallback_chain(ctx, other))
    return ctx.propose(hit, guard, "IfExp", message + " (the availability check goes with it)",
                       {**data, "mode": "guard", "whole": whole, "negated": negated,
                        "as_device": _first_arg_of_to(ctx, guard)}, fixer=fixer)


def _list_literals(ctx, arm) -> list | None:
    """The CUDA strings of a device list (``["cuda"]``, ``["cpu"] + ["cuda:0", "cuda:1"]``): each a
    direct element of a list or tuple, one literal each. None when ``arm`` holds anything else."""
    found: list = []
    stack = [arm]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            stack += [node.left, node.right]
        elif isinstance(node, (ast.List, ast.Tuple)):
            for e in node.elts:
                if not (isinstance(e, ast.Constant) and isinstance(e.value, str)):
                    return None
                if is_cuda_value(e.value):
                    if not _one_literal(ctx, e):
                        return None
                    found.append(e)
        else:
            return None
    return found


def _loop_of(ctx, node) -> ast.For | None:
    """The ``for`` loop whose iterable holds ``node``."""
    child = node
    for p in ctx.ancestors(node):
        if isinstance(p, (ast.For, ast.AsyncFor)):
            return p if p.iter is child or any(n is node for n in ast.walk(p.iter)) else None
        if isinstance(p, ast.stmt):
            return None
        child = p
    return None


def plan_device_list(ctx, hit, guard: ast.IfExp, arm, negated: bool):
    """``["cuda"] if torch.cuda.is_available() else []`` (a list of devices to run on): the check
    and the strings it adds are one rewrite, ``[DEVICE.type] if torch.accelerator.is_available()
    else []``. On CUDA the list is what it was; on a CPU-only host it is empty as before; on
    Trainium it holds ``"neuron"``. In a test module the tests then run on Trainium too (unsafe)."""
    literals = _list_literals(ctx, arm)
    if not literals or any(id(e) in ctx.flagged for e in literals):
        return None
    other = guard.body if negated else guard.orelse
    if any(isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.split(":")[0] == "cuda"
           for n in ast.walk(other)):
        return None
    loop = _loop_of(ctx, guard)
    if loop is not None and isinstance(loop.target, ast.Name) and _body_compares(ctx, hit, loop.body, loop.target.id):
        return None
    data = device_data(ctx, hit, guard, import_ok=is_test_file(ctx))
    if data is None:
        return None
    test = is_test_file(ctx)
    message = "Use the current accelerator in the device list (the availability check goes with it)" + (
        "; the tests then run on Trainium too" if test else "")
    return ctx.propose(hit, guard, "IfExp", message, {**data, "mode": "guard_list", "negated": negated},
                       applicability="unsafe" if test else None, fixer="device_string")


def loop_compares(ctx, hit, node) -> bool:
    """For an element of a device list: is the chosen device compared with CUDA where it is used?
    (Then it is left alone, with a note.)"""
    container = ctx.parent(node)
    owner = ctx.parent(container)
    body: list = []
    if isinstance(owner, (ast.For, ast.AsyncFor)) and owner.iter is container:
        body = owner.body
        var = owner.target.id if isinstance(owner.target, ast.Name) else None
    elif isinstance(owner, ast.Call):  # @pytest.mark.parametrize("device", [...])
        var = owner.args[0].value.strip() if owner.args and isinstance(owner.args[0], ast.Constant) else None
        fn = ctx.parent(owner)
        body = fn.body if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
    else:
        return False
    return _body_compares(ctx, hit, body, var)


def _body_compares(ctx, hit, body: list, var) -> bool:
    """Does code run for each device (``body``) compare the device ``var`` with CUDA? (Noted.)"""
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, (ast.If, ast.IfExp, ast.While, ast.Assert)):
                compares, _, why = cuda_test(ctx, n.test)
                if (compares or why) and any(isinstance(x, ast.Name) and x.id == var for x in ast.walk(n.test)):
                    ctx.note(hit, f"not rewritten: the code run for each device compares `{var}` with CUDA "
                                  f"(`{_short(ctx, n.test)}`); on Trainium it would take the non-CUDA path. "
                                  "Port the list and the test together by hand")
                    return True
    return False


class DeviceString:
    name = "device_string"

    def plan(self, ctx, hit):
        node = hit.node
        if literal_kind(node) is None:
            return None
        parent = ctx.parent(node)
        if isinstance(parent, (ast.List, ast.Tuple)) and loop_compares(ctx, hit, node):
            return None
        return plan_literal(ctx, hit, node)

    def rewrite(self, rx, original, updated, data):
        return rewrite_literal(rx, original, updated, data)


FIXER = DeviceString()


# ====================================================================== rewrite (LibCST)
def _decline(why: str):
    from ..rewrite import Decline

    return Decline(why)


def _cst_kind(node) -> str | None:
    """The CST counterpart of :func:`literal_kind`."""
    import libcst as cst

    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        if value == "cuda":
            return "plain"
        return "indexed" if isinstance(value, str) and _INDEXED.match(value) else None
    if isinstance(node, cst.FormattedString) and node.parts:
        first = node.parts[0]
        if isinstance(first, cst.FormattedStringText) and first.value.startswith("cuda:"):
            return "fstring"
        return None
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "format":
        base = node.func.value
        if isinstance(base, cst.SimpleString) and base.evaluated_value in _FORMATS:
            return "format"
    if (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo)
            and isinstance(node.left, cst.SimpleString) and node.left.evaluated_value in _PERCENTS):
        return "format"
    return None


def _swap_word(node):
    """``"cuda..."`` -> ``"neuron..."`` inside one string literal node (prefix and quotes kept)."""
    import libcst as cst

    raw = node.raw_value
    if not raw.startswith("cuda"):
        raise _decline("the string does not start with `cuda`")
    return cst.SimpleString(f"{node.prefix}{node.quote}neuron{raw[4:]}{node.quote}")


def word(node):
    """With ``--device neuron``: only the word changes (``"cuda:1"`` -> ``"neuron:1"``)."""
    import libcst as cst

    kind = _cst_kind(node)
    if kind in ("plain", "indexed"):
        return _swap_word(node)
    if kind == "fstring":
        first = node.parts[0]
        return node.with_changes(parts=[first.with_changes(value="neuron" + first.value[4:]), *node.parts[1:]])
    if kind == "format":
        if isinstance(node, cst.Call):
            return node.with_changes(func=node.func.with_changes(value=_swap_word(node.func.value)))
        return node.with_changes(left=_swap_word(node.left))
    raise _decline("not a CUDA device string")


def _format_argument(node):
    """The index a ``"cuda:{}".format(i)`` / ``"cuda:%d" % i`` inserts."""
    import libcst as cst

    if isinstance(node, cst.Call):
        args = node.args
        if len(args) != 1 or args[0].keyword is not None or args[0].star:
            raise _decline("`.format(...)` takes something other than one index")
        return args[0].value, node.func.value
    right = node.right
    if isinstance(right, cst.Tuple):
        if len(right.elements) != 1 or isinstance(right.elements[0], cst.StarredElement):
            raise _decline("`%` takes something other than one index")
        right = right.elements[0].value
    return right, node.left


def _embeddable(rx, expr, quote: str) -> str:
    """The quote an f-string holding ``expr`` can use ("" when none: the code has both quotes, a
    backslash, a comment or a line break, or needs parentheses there)."""
    import libcst as cst

    if isinstance(expr, (cst.Lambda, cst.NamedExpr, cst.Dict, cst.Set, cst.DictComp, cst.SetComp)):
        return ""
    code = rx.code(expr)
    if any(c in code for c in "\\\n\r#") or code.lstrip().startswith("{"):
        return ""
    for q in (quote, "'" if quote == '"' else '"'):
        if q not in code:
            return q
    return ""


def convert(rx, site, node, data: dict, as_device: bool = False):
    """One CUDA device literal (CST ``node``) -> the current device's form."""
    import libcst as cst

    from ..nodes import device_string_with_index, fstring, quote_of

    if data.get("device") == "neuron" or data.get("mode") == "word":
        return word(node)
    kind = _cst_kind(node)
    if kind == "plain":
        return rx.device(site, data) if as_device else rx.device_type(site, data)
    dev_type = rx.device_type(site, data)
    if kind == "indexed":
        return device_string_with_index(dev_type, node.evaluated_value[5:], quote_of(node))
    if kind == "fstring":
        first = node.parts[0]
        rest = [cst.FormattedStringText(first.value[4:]), *node.parts[1:]]
        return node.with_changes(parts=[cst.FormattedStringExpression(expression=dev_type), *rest])
    if kind == "format":
        index, base = _format_argument(node)
        quote = _embeddable(rx, index, quote_of(base))
        if not quote:
            raise _decline("the index cannot be written inside an f-string as it is")
        return fstring([dev_type, ":", index], quote)
    raise _decline("not a CUDA device string")


def rewrite_literal(rx, original, updated, data):
    mode = data.get("mode")
    if mode == "define":
        return device_idiom(rx, original, data.get("name", "device"))
    if mode == "inline":
        return _rewrite_inline(rx, original, updated, data)
    if mode == "word":
        if data.get("decided"):
            return _rewrite_decided(rx, original, updated, data)
        return word(updated)
    if mode == "literal":
        if _cst_kind(updated) is None:
            raise _decline("the code here is not the planned CUDA device string")
        return convert(rx, original, updated, data, data.get("as_device", False))
    if mode == "guard":
        return _rewrite_guard(rx, original, updated, data)
    if mode == "guard_list":
        return _rewrite_guard_list(rx, original, updated, data)
    if mode == "default":
        return _rewrite_default(rx, original, updated, data)
    if mode == "decided":
        return _rewrite_decided(rx, original, updated, data)
    raise _decline(f"unknown plan {mode!r}")


def _rewrite_guard(rx, original, updated, data):
    """``"cuda" if torch.cuda.is_available() else "cpu"`` -> ``DEVICE.type`` (or ``DEVICE`` in ``.to()``);
    any other fallback keeps its arm and gets ``torch.accelerator.is_available()`` as the test."""
    import libcst as cst

    negated = data.get("negated", False)
    cuda_arm = updated.orelse if negated else updated.body
    if _cst_kind(cuda_arm) is None:
        raise _decline("the code here is not the planned availability check")
    if data.get("whole"):
        if data.get("device") == "neuron":
            new = word(cuda_arm)
        else:
            new = convert(rx, original, cuda_arm, data, data.get("as_device", False))
        return new.with_changes(lpar=updated.lpar, rpar=updated.rpar) if updated.lpar else new
    new_arm = convert(rx, original, cuda_arm, data, False)
    test = cst.Call(func=rx.dotted("torch.accelerator.is_available", original))
    if negated:
        test = updated.test.with_changes(expression=test)
        return updated.with_changes(test=test, orelse=new_arm)
    return updated.with_changes(test=test, body=new_arm)


def _find_param(params, name: str):
    for field in ("posonly_params", "params", "kwonly_params"):
        for i, p in enumerate(getattr(params, field)):
            if p.name.value == name and p.default is not None:
                return field, i, p
    return None


def _optional(annotation, how: str):
    import libcst as cst

    if how in ("none", "keep"):
        return annotation
    inner = annotation.annotation
    none = cst.Name("None")
    if how == "pipe":
        return annotation.with_changes(annotation=cst.BinaryOperation(
            left=inner, operator=cst.BitOr(), right=none))
    if how == "union":
        if not isinstance(inner, cst.Subscript):
            raise _decline("the annotation is not the planned Union")
        elements = list(inner.slice)
        last = elements[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        return annotation.with_changes(annotation=inner.with_changes(
            slice=[*elements[:-1], last, cst.SubscriptElement(cst.Index(none))]))
    head = cst.Name("Optional") if how == "optional" else cst.Attribute(value=cst.Name("typing"), attr=cst.Name("Optional"))
    return annotation.with_changes(annotation=cst.Subscript(value=head, slice=[cst.SubscriptElement(cst.Index(inner))]))


def _rewrite_default(rx, original, updated, data):
    """``def f(device="cuda"):`` -> ``def f(device=None):`` whose body starts with
    ``if device is None: device = _current_device().type``."""
    import libcst as cst
    from libcst.helpers import parse_template_statement

    name = data["param"]
    found, before = _find_param(updated.params, name), _find_param(original.params, name)
    if found is None or before is None or not isinstance(updated.body, cst.IndentedBlock):
        raise _decline("the function does not have the planned parameter")
    field, i, param = found
    site, default = before[2].default, param.default
    literal = default.args[0].value if data.get("as_device") and isinstance(default, cst.Call) and default.args else default
    kind = _cst_kind(literal)
    if kind not in ("plain", "indexed"):
        raise _decline("the default is not the planned CUDA device")
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
    body.insert(at, check)
    return updated.with_changes(params=updated.params.with_changes(**{field: params}),
                                body=updated.body.with_changes(body=body))


def _rewrite_guard_list(rx, original, updated, data):
    """``["cuda"] if torch.cuda.is_available() else []`` -> ``[DEVICE.type] if torch.accelerator.is_available() else []``."""
    import libcst as cst

    negated = data.get("negated", False)
    if not isinstance(updated, cst.IfExp):
        raise _decline("the code here is not the planned device list")

    class _Elements(cst.CSTTransformer):
        def leave_Element(self, original_node, updated_node):
            if _cst_kind(updated_node.value) in ("plain", "indexed"):
                return updated_node.with_changes(value=convert(rx, original, updated_node.value, data, False))
            return updated_node

    arm = updated.orelse if negated else updated.body
    new_arm = arm.visit(_Elements())
    if new_arm.deep_equals(arm):
        raise _decline("the device list holds no CUDA string")
    check = cst.Call(func=rx.dotted("torch.accelerator.is_available", original))
    if negated:
        if not isinstance(updated.test, cst.UnaryOperation):
            raise _decline("the code here is not the planned availability check")
        return updated.with_changes(test=updated.test.with_changes(expression=check), orelse=new_arm)
    return updated.with_changes(test=check, body=new_arm)


def _rewrite_decided(rx, original, updated, data):
    """``"cuda" if "cuda" in device else "cpu"`` -> ``DEVICE.type if DEVICE.type in device else "cpu"``."""
    import libcst as cst

    def conv(node):
        return convert(rx, original, node, data, False)

    class _Tests(cst.CSTTransformer):
        def _operand(self, node):
            if _cst_kind(node) in ("plain", "indexed"):
                return conv(node)
            if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
                elements = [e.with_changes(value=conv(e.value)) if _cst_kind(e.value) in ("plain", "indexed") else e
                            for e in node.elements]
                return node.with_changes(elements=elements)
            return node

        def leave_Comparison(self, original_node, updated_node):
            ops = (cst.Equal, cst.NotEqual, cst.In, cst.NotIn)
            if not all(isinstance(t.operator, ops) for t in updated_node.comparisons):
                return updated_node
            return updated_node.with_changes(
                left=self._operand(updated_node.left),
                comparisons=[t.with_changes(comparator=self._operand(t.comparator)) for t in updated_node.comparisons],
            )

        def leave_Call(self, original_node, updated_node):
            func = updated_node.func
            if (not updated_node.args and isinstance(func, cst.Attribute) and func.attr.value == "is_available"
                    and isinstance(func.value, cst.Attribute) and func.value.attr.value == "cuda"
                    and rx.code(func.value.value) == (rx.module.torch or "torch")):
                return updated_node.with_changes(func=rx.dotted("torch.accelerator.is_available", original))
            if (isinstance(func, cst.Attribute) and func.attr.value == "startswith" and len(updated_node.args) == 1
                    and _cst_kind(updated_node.args[0].value) in ("plain", "indexed")):
                arg = updated_node.args[0]
                return updated_node.with_changes(args=[arg.with_changes(value=conv(arg.value))])
            return updated_node

    body, orelse = updated.body, updated.orelse
    if _cst_kind(body) is not None:
        body = conv(body)
    if _cst_kind(orelse) is not None:
        orelse = conv(orelse)
    return updated.with_changes(body=body, orelse=orelse, test=updated.test.visit(_Tests()))


def _rewrite_inline(rx, original, updated, data):
    """``"cuda"`` / ``"cuda" if torch.cuda.is_available() else "cpu"`` -> the string idiom."""
    import libcst as cst

    from ..nodes import quote_of

    literal = updated.body if isinstance(updated, cst.IfExp) else updated
    if _cst_kind(literal) != "plain":
        raise _decline("the code here is not the planned CUDA device string")
    return device_idiom(rx, original, data.get("name", "device"), as_string=quote_of(literal))


def device_idiom(rx, original, name: str, as_string: str = ""):
    """``torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")``,
    in parentheses over four lines (as ``ruff format`` prints it) when one line would pass 88 characters.
    With ``as_string`` (a quote character): the device type, ``current_accelerator().type ... else "cpu"``."""
    import libcst as cst

    body = cst.Call(func=rx.dotted("torch.accelerator.current_accelerator", original))
    test = cst.Call(func=rx.dotted("torch.accelerator.is_available", original))
    if as_string:
        body = cst.Attribute(value=body, attr=cst.Name("type"))
        orelse = cst.SimpleString(f"{as_string}cpu{as_string}")
    else:
        orelse = cst.Call(func=rx.dotted("torch.device", original), args=[cst.Arg(cst.SimpleString('"cpu"'))])
    one_line = cst.IfExp(test=test, body=body, orelse=orelse)
    pos = rx.position(original)
    column = pos.start.column if pos is not None else len(name) + 3
    if column + len(rx.module.tree.code_for_node(one_line)) <= LINE_LENGTH:
        return one_line
    indent = rx.module.tree.default_indent

    def broken(last: str):
        return cst.ParenthesizedWhitespace(
            first_line=cst.TrailingWhitespace(), indent=True, last_line=cst.SimpleWhitespace(last))

    return one_line.with_changes(
        lpar=[cst.LeftParen(whitespace_after=broken(indent))],
        rpar=[cst.RightParen(whitespace_before=broken(""))],
        whitespace_before_if=broken(indent),
        whitespace_before_else=broken(indent),
    )
