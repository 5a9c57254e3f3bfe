"""A function's parameters that have defaults, as the ``ast`` spreads them over three lists."""

from __future__ import annotations

import ast


def parameter_defaults(args: ast.arguments) -> list[tuple[ast.arg, ast.expr]]:
    """``(parameter, default)`` for every parameter with a default: positional ones (the defaults
    belong to the last of them) and keyword-only ones (whose missing defaults are ``None``)."""
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    pairs += [(p, d) for p, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return pairs
