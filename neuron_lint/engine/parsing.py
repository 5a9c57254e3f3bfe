"""Parsing a module's text with the standard library's ``ast``: every failure becomes one :class:`ParseError`."""

from __future__ import annotations

import ast
import warnings

from ..errors import ParseError
from .syntax_version import newer_python_hint

#: The trees of the last few texts parsed: ``fix`` asks for the same text several times in a pass
#: (does the result parse, which lines to wrap, what is left to fix). Nothing changes a tree once
#: parsed, so one is shared.
_RECENT: dict[tuple[str, str], ast.Module] = {}
_RECENT_KEPT = 4


def recent(text: str) -> ast.Module | None:
    """The tree of ``text`` if it is one of the last few parsed (under whatever path), else None."""
    for (_, seen), tree in list(_RECENT.items()):
        if seen is text or seen == text:
            return tree
    return None


def parse(text: str, path: str = "<string>") -> ast.Module:
    """Parse Python source, turning every parser failure into a :class:`ParseError`."""
    key = (path, text)
    tree = _RECENT.get(key)
    if tree is not None:
        return tree
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences etc. are not our business
            tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        msg = exc.msg or "invalid syntax"
        hint = newer_python_hint(text, exc.lineno, msg)
        raise ParseError(f"syntax error: {msg}" + (f" ({hint})" if hint else ""), exc.lineno, exc.offset) from None
    except (RecursionError, MemoryError):
        raise ParseError("too deeply nested to parse") from None
    except ValueError as exc:  # e.g. source with NUL bytes
        raise ParseError(f"cannot be parsed: {exc}") from None
    if len(_RECENT) >= _RECENT_KEPT:
        try:
            del _RECENT[next(iter(_RECENT))]
        except (KeyError, RuntimeError, StopIteration):  # another thread of the library's user got there first
            _RECENT.clear()
    _RECENT[key] = tree
    return tree
