"""Plain data passed between the engine, the fixer and the renderers."""

from __future__ import annotations

from dataclasses import dataclass, field


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

    def to_dict(self) -> dict:
        return {
            "location": {"row": self.line, "column": self.col},
            "end_location": {"row": self.end_line, "column": self.end_col},
            "content": self.content,
        }


@dataclass(frozen=True)
class Fix:
    applicability: str  # "safe" | "unsafe"
    edits: tuple[Edit, ...]
    message: str = ""

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

    @property
    def sort_key(self):
        return (self.path, self.line, self.col, self.code)

    def to_dict(self) -> dict:
        return {
            "code": self.code,
            "name": self.name,
            "category": self.category,
            "message": self.message,
            "suggestion": self.suggestion,
            "url": self.url,
            "filename": self.path,
            "location": {"row": self.line, "column": self.col},
            "end_location": {"row": self.end_line, "column": self.end_col},
            "fix": self.fix.to_dict() if self.fix else None,
        }


@dataclass(frozen=True)
class FileError:
    """A file that could not be read or parsed. Reported once, with the reason."""

    path: str
    reason: str
    line: int | None = None
    col: int | None = None


@dataclass
class CheckResult:
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    files_checked: int = 0
    files_skipped: int = 0  # read but not parsed: nothing in them can match

    def extend(self, other: "CheckResult") -> None:
        self.findings.extend(other.findings)
        self.errors.extend(other.errors)
        self.files_checked += other.files_checked
        self.files_skipped += other.files_skipped
