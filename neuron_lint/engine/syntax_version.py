"""Recognise a syntax error that is really syntax from a newer Python than the one running us.

neuron-lint reads code with the running interpreter's own parser, so a file using syntax added
after that version cannot be checked. When the line the parser stopped at shows such syntax,
the error message says so, and which Python to run neuron-lint with instead.
"""

from __future__ import annotations

import re
import sys

from ..io.positions import split_lines

# (first version with the syntax, what it is, pattern on the offending line, pattern on the parser's message)
_FEATURES: tuple[tuple[tuple[int, int], str, re.Pattern[str] | None, re.Pattern[str] | None], ...] = (
    ((3, 12), "a `type` alias statement", re.compile(r"^\s*type\s+[A-Za-z_]\w*\s*[\[=]"), None),
    ((3, 12), "type parameters", re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+[A-Za-z_]\w*\s*\["), None),
    ((3, 12), "an f-string nesting quotes, comments or backslashes", None, re.compile(r"^f-string")),
    ((3, 14), "a template string (t-string)", re.compile(r"""(?<![\w.])[tT][rR]?(['"])|(?<![\w.])[rR][tT](['"])"""), None),
)


def newer_python_hint(text: str, lineno: int | None, message: str = "") -> str:
    """A sentence naming the newer syntax on line ``lineno``, or "" when nothing points there."""
    line = ""
    if lineno is not None and lineno >= 1:
        lines = split_lines(text)
        if lineno <= len(lines):
            line = lines[lineno - 1]
    running = sys.version_info[:2]
    for version, what, line_re, message_re in _FEATURES:
        if running >= version:
            continue
        if (line_re is not None and line_re.search(line)) or (message_re is not None and message_re.search(message)):
            wanted = ".".join(map(str, version))
            here = ".".join(map(str, running))
            return (
                f"looks like {what}, new in Python {wanted}; neuron-lint runs on Python {here} and parses "
                f"with it: run neuron-lint under Python {wanted}+ to check this file"
            )
    return ""
