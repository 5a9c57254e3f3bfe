"""Import guards: code that runs only when an optional package (or a type checker) is there.

``try: import x / except ImportError: x = None``, ``if is_flash_attn_available():``,
``if TYPE_CHECKING:``, and ``if not is_x_available(): return`` (the rest of the block is guarded).
The walker counts the guards it is inside in :attr:`neuron_lint.engine.semantic.SemanticModel.guard_depth`.
"""

from __future__ import annotations

import ast

IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
# `if not is_x_available(): return` makes the rest optional; `raise` makes the package a requirement
EXITS = (ast.Return, ast.Continue, ast.Break)


def try_guards(node: ast.AST) -> bool:
    """Does a ``try`` make the imports of its body optional?

    `except ImportError: fallback = None` makes the imports optional; a handler that raises or
    imports again (`except ImportError: install(); import x`) makes them a requirement.
    """
    return any(
        catches_import_error(h.type) and not requires(node.body, h.body) for h in node.handlers  # type: ignore[attr-defined]
    )


def catches_import_error(expr: ast.AST | None) -> bool:
    if expr is None:
        return True
    items = expr.elts if isinstance(expr, ast.Tuple) else [expr]
    return any(isinstance(e, ast.Name) and e.id in IMPORT_ERRORS for e in items)


def _imported_packages(stmts: list[ast.stmt]) -> set[str]:
    found: set[str] = set()
    for stmt in stmts:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Import):
                found.update(a.name.split(".", 1)[0] for a in n.names)
            elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
                found.add(n.module.split(".", 1)[0])
    return found


def requires(body: list[ast.stmt], handler_body: list[ast.stmt]) -> bool:
    """Does an ``except ImportError:`` handler insist on the package: raise, exit, or import the same
    package again (after installing it)? A handler importing something else is a fallback."""
    wanted = _imported_packages(body)
    for stmt in handler_body:
        if isinstance(stmt, ast.Raise):
            return True
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            func = stmt.value.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("exit", "_exit", "abort"):
                return True
    return bool(wanted & _imported_packages(handler_body))


def _is_availability_check(expr: ast.AST) -> bool:
    """`is_x_available()`, `importlib.util.find_spec("x")`, `HAS_X`, `X_AVAILABLE`, `TYPE_CHECKING`.

    Such a test says a package may be missing (or, for TYPE_CHECKING, that the code never runs).
    """
    if isinstance(expr, ast.Call):
        func = expr.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        # `torch.cuda.is_available()` checks for a device, not a package: its branch is still reported
        return ("available" in name.lower() and name != "is_available") or name == "find_spec"
    name = expr.attr if isinstance(expr, ast.Attribute) else expr.id if isinstance(expr, ast.Name) else ""
    return name == "TYPE_CHECKING" or (
        name.isupper() and (name.lstrip("_").startswith("HAS_") or name.endswith("_AVAILABLE"))
    )


def import_guard(test: ast.AST) -> str | None:
    """Which branch of an `if` runs only when an optional package (or a type checker) is there."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return "orelse" if import_guard(test.operand) == "body" else None
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return "body" if any(import_guard(v) == "body" for v in test.values) else None
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.comparators[0], ast.Constant):
        if test.comparators[0].value is None and _is_availability_check(test.left):  # find_spec(x) is not None
            return "body" if isinstance(test.ops[0], ast.IsNot) else "orelse" if isinstance(test.ops[0], ast.Is) else None
        return None
    return "body" if _is_availability_check(test) else None
