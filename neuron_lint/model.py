"""Plain data passed between the engine, the fixer and the renderers."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


@dataclass(frozen=True, order=True)
class Edit:
    """Replace the text between two 1-based (line, column) positions with ``content``.

    Columns count characters, not bytes. An insertion has ``start == end``.
    """

    line: int
    col: int
    end_line: int
    end_col: int
    content: str
    cell: int = 0  # in a notebook: the cell (1-based) whose lines and columns these are

    def to_dict(self) -> dict:
        out = {
            "location": {"row": self.line, "column": self.col},
            "end_location": {"row": self.end_line, "column": self.end_col},
            "content": self.content,
        }
        if self.cell:
            out["cell"] = self.cell
        return out


def position_text(line: int, col: int, cell: int = 0) -> str:
    """``5:1``, or ``cell 3:5:1`` in a notebook (the line and column within cell 3)."""
    return f"cell {cell}:{line}:{col}" if cell else f"{line}:{col}"


class Applicability(str, Enum):
    """How much a fix may be trusted (ruff's fix applicability, two levels).

    ``SAFE``: on a CUDA machine the fixed program does exactly what it did before, and on
    Trainium it takes the path meant for the ``neuron`` device. ``UNSAFE``: it may change what
    the program computes anywhere; only applied with ``--unsafe-fixes``.
    """

    SAFE = "safe"
    UNSAFE = "unsafe"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Fix:
    """A rewrite offered for a finding.

    Detection plans it on the ``ast`` (``fixer``, ``target``, ``data``: what to rewrite and the
    decisions taken); :mod:`neuron_lint.fixes.rewrite` carries it out with LibCST. ``edits``, the
    minimal text spans it changes, are filled in only when an output needs them (JSON, SARIF).
    A fix with ``edits`` and no ``fixer`` is a plain text edit (a ``# noqa`` comment).
    """

    applicability: str  # an Applicability value
    edits: tuple[Edit, ...]
    message: str = ""
    fixer: str = ""
    # (line, col, end_line, end_col, LibCST node class name) of the node the fixer replaces
    target: tuple = ()
    # the fixer's decisions, as sorted (key, value) pairs of JSON values
    data: tuple = ()

    def to_dict(self) -> dict:
        return {
            "applicability": self.applicability,
            "message": self.message,
            "edits": [e.to_dict() for e in self.edits],
        }


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    col: int
    end_line: int
    end_col: int
    code: str
    name: str
    category: str
    message: str
    suggestion: str
    url: str = ""
    fix: Fix | None = None
    # A suggestion-only note on why a fix was not offered (e.g. gated by --min-torch).
    fix_note: str = ""
    # In a notebook: the cell (1-based, markdown cells counted); line and columns are within it.
    cell: int = 0

    @property
    def sort_key(self):
        return (self.path, self.cell, self.line, self.col, self.code)

    @property
    def where(self) -> str:
        """``path:line:col``, or ``path:cell N:line:col`` in a notebook."""
        return f"{self.path}:{position_text(self.line, self.col, self.cell)}"

    def to_dict(self) -> dict:
        return {
            "code": self.code,
            "name": self.name,
            "category": self.category,
            "message": self.message,
            "suggestion": self.suggestion,
            "url": self.url,
            "filename": self.path,
            "cell": self.cell or None,
            "location": {"row": self.line, "column": self.col},
            "end_location": {"row": self.end_line, "column": self.end_col},
            "fix": self.fix.to_dict() if self.fix else None,
            "fix_note": self.fix_note or None,
        }


@dataclass(frozen=True)
class FileError:
    """A file that could not be read or parsed. Reported once, with the reason."""

    path: str
    reason: str
    line: int | None = None
    col: int | None = None
    cell: int = 0  # in a notebook: the cell ``line`` counts in
    #: the traceback of an internal error (a bug of ours), shown with ``--verbose``
    detail: str = field(default="", compare=False)

    @property
    def where(self) -> str:
        if self.line is None:
            return self.path
        return f"{self.path}:{position_text(self.line, self.col or 1, self.cell)}"


@dataclass
class CheckResult:
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    # files named on the command line that were skipped with a word ("not a Python file")
    warnings: list[FileError] = field(default_factory=list)
    files_checked: int = 0
    files_skipped: int = 0  # read but not parsed: nothing in them can match

    def extend(self, other: "CheckResult") -> None:
        self.findings.extend(other.findings)
        self.errors.extend(other.errors)
        self.warnings.extend(other.warnings)
        self.files_checked += other.files_checked
        self.files_skipped += other.files_skipped
