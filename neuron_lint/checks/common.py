"""Small syntax helpers shared by several checks."""

from __future__ import annotations

import ast


def keyword(call: ast.Call, name: str) -> ast.AST | None:
    """The value passed as keyword ``name`` to a call, or None."""
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None
