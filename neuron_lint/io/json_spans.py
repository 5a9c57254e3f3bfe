"""A JSON parser that also says where a notebook's cell sources lie in the text.

``json.loads`` gives values, not positions; writing a fixed cell back without touching the rest
of the file needs the span of each cell's ``source`` value and of its items.
"""

from __future__ import annotations

import json
import re
from json.decoder import scanstring

_MAX_DEPTH = 100  # a notebook is a few levels deep; anything deeper is not one
_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LITERALS = {"true": True, "false": False, "null": None}


class JSONSpanError(ValueError):
    """The text is not JSON; the message says what was expected where."""


class SpanScanner:
    """A JSON parser that also records where each cell's ``source`` value (and its items) lie."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.spans: dict[int, tuple[int, int]] = {}  # cell index -> span of its "source" value
        self.items: dict[int, list[tuple[int, int]]] = {}  # cell index -> spans of the source's strings

    def fail(self, why: str, pos: int) -> "JSONSpanError":
        line = self.text.count("\n", 0, pos) + 1
        col = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return JSONSpanError(f"{why} at line {line} column {col}")

    def value(self, i: int, path: tuple, depth: int):
        if depth > _MAX_DEPTH:
            raise self.fail("nested too deeply", i)
        text = self.text
        i = _WS.match(text, i).end()
        start = i
        ch = text[i:i + 1]
        if ch == "{":
            value, i = self.object(i + 1, path, depth)
        elif ch == "[":
            value, i = self.array(i + 1, path, depth)
        elif ch == '"':
            try:
                value, i = scanstring(text, i + 1, True)
            except ValueError as exc:
                raise self.fail(getattr(exc, "msg", "bad string"), i) from None
        else:
            m = _NUMBER.match(text, i)
            word = next((w for w in _LITERALS if text.startswith(w, i)), None)
            if word is not None:
                value, i = _LITERALS[word], i + len(word)
            elif m:
                value, i = json.loads(m.group()), m.end()
            else:
                raise self.fail("expected a value", i)
        if len(path) == 3 and path[0] == "cells" and path[2] == "source":
            self.spans[path[1]] = (start, i)
        return value, i

    def object(self, i: int, path: tuple, depth: int):
        text, out = self.text, {}
        i = _WS.match(text, i).end()
        if text.startswith("}", i):
            return out, i + 1
        while True:
            i = _WS.match(text, i).end()
            if not text.startswith('"', i):
                raise self.fail("expected a key", i)
            try:
                key, i = scanstring(text, i + 1, True)
            except ValueError as exc:
                raise self.fail(getattr(exc, "msg", "bad string"), i) from None
            i = _WS.match(text, i).end()
            if not text.startswith(":", i):
                raise self.fail("expected ':'", i)
            sub = path + (key,) if len(path) < 3 and (path or key == "cells") else ()
            out[key], i = self.value(i + 1, sub, depth + 1)
            i = _WS.match(text, i).end()
            if text.startswith(",", i):
                i += 1
            elif text.startswith("}", i):
                return out, i + 1
            else:
                raise self.fail("expected ',' or '}'", i)

    def array(self, i: int, path: tuple, depth: int):
        text, out = self.text, []
        source = len(path) == 3 and path[0] == "cells" and path[2] == "source"
        i = _WS.match(text, i).end()
        if text.startswith("]", i):
            return out, i + 1
        while True:
            sub = path + (len(out),) if path == ("cells",) else ()
            begin = _WS.match(text, i).end()
            item, i = self.value(i, sub, depth + 1)
            if source:
                self.items.setdefault(path[1], []).append((begin, i))
            out.append(item)
            i = _WS.match(text, i).end()
            if text.startswith(",", i):
                i += 1
            elif text.startswith("]", i):
                return out, i + 1
            else:
                raise self.fail("expected ',' or ']'", i)


