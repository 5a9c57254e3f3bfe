"""What chooses CUDA around a device string, and where a rewritten site gets the current device.

- :func:`cuda_test`: what a test (of an ``if``, a conditional expression, a loop) asks about CUDA:
  whether it compares a device with ``"cuda"``, calls ``torch.cuda.is_available()``, or does
  something a rewrite cannot follow;
- :func:`decided_by_branch`, :func:`loop_compares`, :func:`body_compares`: a string used only where
  such a test holds is left alone, with a note;
- :func:`device_data`: the plan data naming the device a site uses, or a note when the site runs
  when the module is imported and may not ask for the device then.
"""

from __future__ import annotations

import ast
import os

from .device_forms import is_cuda_value

#: the comparisons a rewrite of a device test can follow
_COMPARE_OPS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)


def runs_at_import(ctx, node) -> bool:
    """Does the code at ``node`` run when the module is imported? (Module level, a class body, a
    default value, a decorator: everything not inside a function body, nor under the module's
    ``if __name__ == "__main__":``, which runs only when the module is run.)"""
    child = node
    for p in ctx.ancestors(node):
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(child is s for s in p.body):
            return p.name in _import_time_decorators(ctx)
        if isinstance(p, ast.Lambda) and child is p.body:
            return False
        child = p
    return not ctx.under_main_guard(node)


def _import_time_decorators(ctx) -> set[str]:
    """Module-level functions that decorate something defined at import (fairscale's
    ``@_conditional_amp_fwd_decorator`` on a method of a module-level class): their bodies run
    when the module is imported."""
    found = ctx.__dict__.get("_import_decorators")
    if found is None:
        top = {s.name for s in ctx.tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        found = set()
        todo = list(ctx.tree.body)
        while todo:  # module level and class bodies, not function bodies
            stmt = todo.pop()
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for d in stmt.decorator_list:
                    target = d.func if isinstance(d, ast.Call) else d
                    if isinstance(target, ast.Name) and target.id in top:
                        found.add(target.id)
                if isinstance(stmt, ast.ClassDef):
                    todo.extend(stmt.body)
            elif isinstance(stmt, (ast.If, ast.Try)):
                todo.extend(stmt.body)
                todo.extend(getattr(stmt, "orelse", []))
        ctx.__dict__["_import_decorators"] = found
    return found


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
    if how != "neuron" and not ctx.at_module_level(node) and runs_at_import(ctx, node):
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


def qual(ctx, node) -> str:
    return ctx.qualname(node) or "" if isinstance(node, (ast.Name, ast.Attribute)) else ""


def is_availability(ctx, test) -> bool:
    """``torch.cuda.is_available()``"""
    return (isinstance(test, ast.Call) and not test.args and not test.keywords
            and qual(ctx, test.func) == "torch.cuda.is_available")


def cpu_fallback_chain(ctx, node) -> bool:
    """``"cpu"``, or ``"mps" if torch.backends.mps.is_available() else <chain>``: a fallback that
    ``torch.accelerator.current_accelerator()`` (or the CPU) already covers."""
    if isinstance(node, ast.Constant) and node.value == "cpu":
        return True
    if isinstance(node, ast.IfExp) and isinstance(node.body, ast.Constant) and isinstance(node.body.value, str):
        test = node.test
        is_check = (isinstance(test, ast.Call) and not test.args and isinstance(test.func, ast.Attribute)
                    and test.func.attr == "is_available" and qual(ctx, test.func).startswith("torch."))
        return is_check and cpu_fallback_chain(ctx, node.orelse)
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
        elif isinstance(n, ast.Constant) and n.value == "cuda:":
            # `"cuda:" + str(k) != self.last_device`: devices compared by CUDA's name and index
            return True, available, "it names a CUDA device by its index (`\"cuda:\" + ...`)"
        elif isinstance(n, ast.Attribute) and n.attr == "is_cuda":
            return True, available, "it asks `.is_cuda`"
        elif isinstance(n, ast.Call) and is_availability(ctx, n):
            if not ctx.segment(n.func).endswith(".cuda.is_available"):
                return compares, True, "it calls `is_available` under another name"
            available = True
        elif (isinstance(n, (ast.Name, ast.Attribute)) and qual(ctx, n).startswith("torch.cuda.")
              and qual(ctx, n) != "torch.cuda.is_available"):
            return True, available, f"it uses `{qual(ctx, n)}`"
    return compares, available, ""


def short(ctx, node, limit: int = 60) -> str:
    text = " ".join(ctx.segment(node).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def decided_by_branch(ctx, node) -> ast.AST | None:
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


def first_arg_of_to(ctx, node) -> bool:
    call = ctx.parent(node)
    return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "to"
            and bool(call.args) and call.args[0] is node)


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
    return body_compares(ctx, hit, body, var)


def body_compares(ctx, hit, body: list, var) -> bool:
    """Does code run for each device (``body``) compare the device ``var`` with CUDA? (Noted.)"""
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, (ast.If, ast.IfExp, ast.While, ast.Assert)):
                compares, _, why = cuda_test(ctx, n.test)
                if (compares or why) and any(isinstance(x, ast.Name) and x.id == var for x in ast.walk(n.test)):
                    ctx.note(hit, f"not rewritten: the code run for each device compares `{var}` with CUDA "
                                  f"(`{short(ctx, n.test)}`); on Trainium it would take the non-CUDA path. "
                                  "Port the list and the test together by hand")
                    return True
    return False
