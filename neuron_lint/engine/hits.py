"""What the walk reports: hits (a match before it becomes a finding) and spans that are not nodes."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ..catalog.loading import Match, Rule


@dataclass(frozen=True)
class Span:
    """A position range in ast terms (1-based lines, UTF-8 byte columns) that is not a node."""

    lineno: int
    col_offset: int
    end_lineno: int
    end_col_offset: int

    @classmethod
    def name_to_end(cls, attribute: ast.Attribute, end: ast.AST) -> "Span":
        """From the attribute's name (the `cuda` of `x.cuda`) to the end of ``end``."""
        line = attribute.end_lineno or attribute.lineno
        col = (attribute.end_col_offset or 0) - len(attribute.attr.encode("utf-8"))
        return cls(line, col, end.end_lineno or line, end.end_col_offset or 0)


@dataclass(frozen=True)
class Hit:
    """A match before it becomes a finding: the node to report and what matched."""

    rule: Rule
    match: Match
    node: ast.AST
    subject: str  # fills {name} in the message
    call: ast.Call | None = None  # the call the node belongs to, for fixers
