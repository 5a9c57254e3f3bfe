"""``# noqa`` on a manifest line: the directive syntax of :mod:`neuron_lint.suppress.noqa`, read from one line.

Every manifest kind with findings ends a comment at the line's end (``#`` in requirements files,
TOML and YAML); the whole line is searched. A listed code silences the codes it begins
(``# noqa: NRN68`` silences NRN680 to NRN689), as manifest suppressions always did.
"""

from __future__ import annotations

from ..suppress.noqa import Directive, line_directive

__all__ = ["suppressed", "with_codes"]


def suppressed(line_text: str, code: str) -> bool:
    """Whether the ``# noqa`` on ``line_text`` (if any) silences ``code``."""
    d = line_directive(line_text)
    if d is None:
        return False
    return d.codes is None or any(code.startswith(c) for c in d.codes)


def with_codes(body: str, codes: set[str]) -> tuple[str, int]:
    """``body`` (a line without its end) with ``codes`` in its ``# noqa``, and how many were added."""
    d: Directive | None = line_directive(body)
    if d is not None and d.codes is None:
        return body, 0  # a bare `# noqa` already silences every code
    if d is None:
        return f"{body.rstrip()}  # noqa: {', '.join(sorted(codes))}", len(codes)
    have = list(dict.fromkeys(d.codes))
    new = sorted(codes - set(have))
    if not new:
        return body, 0
    first, last = d.code_spans[0][0], d.code_spans[-1][1]
    return body[:first] + ", ".join(have + new) + body[last:], len(new)
