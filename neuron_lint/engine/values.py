"""Arguments and values: what a call passes for a parameter, and whether it is one of a match's values."""

from __future__ import annotations

import ast
import fnmatch
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from ..catalog.loading import Match


def argument(call: ast.Call, position: int | None, keyword: str | None) -> ast.AST | None:
    """The expression passed for a parameter, by keyword or by position (not through *args)."""
    if keyword is not None:
        for kw in call.keywords:
            if kw.arg == keyword:
                return kw.value
    if position is not None and position < len(call.args):
        if not any(isinstance(a, ast.Starred) for a in call.args[: position + 1]):
            return call.args[position]
    return None


def match_value(qualname: Callable[[ast.AST], str | None], value: ast.AST, m: Match) -> tuple[ast.AST, str] | None:
    """Does an expression equal one of the match's values? Looks into both arms of `a if c else b`."""
    if isinstance(value, ast.IfExp):
        return match_value(qualname, value.body, m) or match_value(qualname, value.orelse, m)
    if isinstance(value, (ast.List, ast.Tuple)) and any(isinstance(w, str) for w in m.values):
        # `sources=["a.cpp", "b.cu"]`, `["nvidia-smi", "-L"]`: a string value may be one element
        for elt in value.elts:
            found = match_value(qualname, elt, m)
            if found is not None:
                return found
        return None
    if isinstance(value, ast.Constant):
        v = value.value
        for want in m.values:
            if isinstance(want, str):
                if isinstance(v, str) and fnmatch.fnmatchcase(v, want):
                    return value, v
            elif type(v) is type(want) and v == want:
                return value, repr(v)
        return None
    if isinstance(value, ast.JoinedStr) and any(isinstance(w, str) for w in m.values):
        text = "".join(
            part.value if isinstance(part, ast.Constant) else "\x00" for part in value.values
        )
        for want in m.values:
            if isinstance(want, str) and fnmatch.fnmatchcase(text, want):
                return value, text.replace("\x00", "{…}")
        return None
    if m.value_names and isinstance(value, (ast.Name, ast.Attribute)):
        qual = qualname(value)
        if qual is not None and any(fnmatch.fnmatchcase(qual, p) for p in m.value_names):
            return value, qual
    return None
