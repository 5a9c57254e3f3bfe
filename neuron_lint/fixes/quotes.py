"""Quotes of the string literals a fix writes: those of the module it goes into.

Fixers build their literals with double quotes (``"cpu"``, ``f"{DEVICE.type}:0"``, the device
definition's ``torch.device("cpu")``). In a module that writes its strings with single quotes (a
project formatted with ``quote-style = "single"``, or by hand) those are the odd ones out, and a
maintainer's formatter or reviewer turns them round; so each literal a fix adds is written with
the quote most of the module's own one-line literals use. Docstrings and other triple-quoted
strings do not count, and a literal whose text holds a quote or backslash keeps its quotes.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import libcst as cst

_PREFIX = "rRbBuUfF"


# the opening quote of a one-line literal where an expression starts: after `=`, `(`, `[`, `{`,
# `,`, `:`, `+` or a keyword (a tokenizer agrees on 98% of the files tuned on, at a thirtieth of its cost)
_OPENING = re.compile(r"""(?:[=(\[{,:+]|\b(?:in|return|if|else|and|or|not|is))[ \t]*[rRbBuUfF]{0,2}(['"])(?!\1\1)""")


# what a formatter leaves as written: `# fmt: off` ... `# fmt: on` (or the end) and `# fmt: skip` lines
_UNFORMATTED = re.compile(r"^[ \t]*# fmt: off\b.*?(?:^[ \t]*# fmt: on\b|\Z)|^[^\n]*# fmt: skip[ \t]*$", re.M | re.S)


def preferred_quote(text: str) -> str:
    """``'`` when more one-line string literals of ``text`` open with single quotes than double, else ``"``.
    Code the formatter does not touch does not count: fairseq keeps single-quoted `add_argument`
    calls under `# fmt: off` in files whose other strings ruff format keeps double."""
    if "fmt:" in text:
        text = _UNFORMATTED.sub("", text)
    single = double = 0
    for m in _OPENING.finditer(text):
        if m.group(1) == "'":
            single += 1
        else:
            double += 1
    return "'" if single > double else '"'


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
