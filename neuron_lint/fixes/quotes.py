"""Quotes of the string literals a fix writes: those of the module it goes into.

Fixers build their literals with double quotes (``"cpu"``, ``f"{DEVICE.type}:0"``, the device
definition's ``torch.device("cpu")``). In a module that writes its strings with single quotes (a
project formatted with ``quote-style = "single"``, or by hand) those are the odd ones out, and a
maintainer's formatter or reviewer turns them round; so each literal a fix adds is written with
the quote the project's formatter asks for (ruff format's ``quote-style``, black's string
normalisation) or, where none is configured, the one most of the module's own one-line literals
use. Docstrings and other triple-quoted strings do not count, nor do quotes inside literals and
comments, and a literal whose text holds a quote or backslash keeps its quotes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from functools import lru_cache

import libcst as cst

_PREFIX = "rRbBuUfF"


# a comment, or a whole string literal (triple-quoted or one-line, with its prefix), in source order:
# what lies inside a docstring, another literal or a comment is consumed with it and never counted
_LITERAL = re.compile(
    r"""#[^\n]*|[rRbBuUfF]{0,2}(?:\"\"\"(?:\\.|[^\\])*?\"\"\"|'''(?:\\.|[^\\])*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')""",
    re.S,
)


# what a formatter leaves as written: `# fmt: off` ... `# fmt: on` (or the end) and `# fmt: skip` lines
_UNFORMATTED = re.compile(r"^[ \t]*# fmt: off\b.*?(?:^[ \t]*# fmt: on\b|\Z)|^[^\n]*# fmt: skip[ \t]*$", re.M | re.S)


def preferred_quote(text: str, path: str | None = None) -> str:
    """The quote a literal added to ``text`` (the source of ``path``, when it is a file) uses: the
    one the project's formatter configures for it (:func:`configured_quote`), else ``'`` when more
    one-line string literals of ``text`` open with single quotes than double, else ``"``.
    Code the formatter does not touch does not count: fairseq keeps single-quoted `add_argument`
    calls under `# fmt: off` in files whose other strings ruff format keeps double."""
    configured = configured_quote(os.path.dirname(path)) if path else None
    if configured:
        return configured
    if "fmt:" in text:
        text = _UNFORMATTED.sub("", text)
    single = double = 0
    for m in _LITERAL.finditer(text):
        body = m.group().lstrip(_PREFIX)
        if body[:1] == "#" or body[:3] in ('"""', "'''"):
            continue
        if body[:1] == "'":
            single += 1
        else:
            double += 1
    return "'" if single > double else '"'


def _quote_of_tables(fmt, black) -> str | None:
    """The quote ruff format's ``fmt`` table or black's ``black`` table asks for (None: keeps them)."""
    if isinstance(fmt, dict):
        style = fmt.get("quote-style", "double")
        return {"double": '"', "single": "'"}.get(style)
    if isinstance(black, dict):
        return None if black.get("skip-string-normalization") or black.get("skip_string_normalization") else '"'
    return None


@lru_cache(maxsize=256)
def configured_quote(directory: str) -> str | None:
    """The quote the formatter configured for files in ``directory`` writes strings with: the
    nearest ``ruff.toml``/``.ruff.toml`` (its ``[format]`` table) or ``pyproject.toml`` with a
    ``[tool.ruff.format]`` or ``[tool.black]`` table, searched upwards. None where no formatter is
    configured (or it keeps quotes as written: ``quote-style = "preserve"``, black's
    ``skip-string-normalization``): then the module's own literals decide."""
    from .line_length import formatter_configs

    for _, ruff, tool in formatter_configs(directory):
        if ruff is not None:
            return _quote_of_tables(ruff.get("format"), None)
        if tool is not None:
            fmt = tool["ruff"].get("format") if isinstance(tool.get("ruff"), dict) else None
            if isinstance(fmt, dict) or isinstance(tool.get("black"), dict):
                return _quote_of_tables(fmt, tool.get("black"))
            if isinstance(tool.get("ruff"), dict):
                return None
    return None


def _convertible(text: str) -> bool:
    return "'" not in text and "\\" not in text


class _Requote(cst.CSTTransformer):
    def __init__(self, old: set[int]) -> None:
        super().__init__()
        self.old = old

    def leave_SimpleString(self, original_node, updated_node):
        value = updated_node.value
        body = value.lstrip(_PREFIX)
        if id(original_node) in self.old or body[:1] != '"' or body[:3] == '"""' or not _convertible(body[1:-1]):
            return updated_node
        prefix = value[: len(value) - len(body)]
        return updated_node.with_changes(value=f"{prefix}'{body[1:-1]}'")

    def on_visit(self, node: cst.CSTNode) -> bool:
        # an f-string is taken whole (its inner literals could not use its own quote before 3.12)
        return not (isinstance(node, cst.FormattedString) or id(node) in self.old)

    def leave_FormattedString(self, original_node, updated_node):
        if id(original_node) in self.old or updated_node.start.lstrip(_PREFIX) != '"':
            return updated_node
        if not _convertible(cst.Module([]).code_for_node(updated_node)[len(updated_node.start):-1]):
            return updated_node
        return updated_node.with_changes(start=updated_node.start[:-1] + "'", end="'")


class _Strings(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[int] = set()
        self.double = False

    def visit_SimpleString(self, node) -> None:
        self.ids.add(id(node))
        self.double = self.double or node.value.lstrip(_PREFIX)[:1] == '"'

    def visit_FormattedString(self, node) -> None:
        self.ids.add(id(node))
        self.double = self.double or node.start.lstrip(_PREFIX) == '"'


def requote(before: cst.CSTNode | None, after: cst.CSTNode, quote: Callable[[], str]):
    """``after`` with the double-quoted literals that are not in ``before`` (the node a fixer was
    given) written with single quotes, when ``quote()`` (the module's preference, asked only when
    such a literal exists) says so."""
    if isinstance(after, cst.FlattenSentinel):  # several statements in place of one
        return cst.FlattenSentinel([requote(before, node, quote) for node in after.nodes])
    if not isinstance(after, cst.CSTNode):  # removed (RemovalSentinel)
        return after
    seen = _Strings()
    if before is not None:
        before.visit(seen)
    new = _Strings()
    after.visit(new)
    if not (new.ids - seen.ids) or not new.double or quote() != "'":
        return after
    return after.visit(_Requote(seen.ids))
