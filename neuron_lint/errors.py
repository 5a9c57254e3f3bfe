"""Exceptions the library raises for bad input (never shown to users as tracebacks)."""


class NeuronLintError(Exception):
    """Base class."""


class ParseError(NeuronLintError):
    """The file is not valid Python for this interpreter."""

    def __init__(self, message: str, line: int | None = None, col: int | None = None) -> None:
        super().__init__(message)
        self.line = line
        self.col = col


class UsageError(NeuronLintError):
    """Bad command-line arguments or configuration (exit code 2)."""
