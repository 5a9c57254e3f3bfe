"""Comment lines above a statement a fix removes stay in the file, and so does the comment at its
end (on a line of its own), and a blank line that parted it from the statement before, where the
next statement has none.

A removed import or call can carry the comment lines written above it; LibCST drops a removed
statement whole, with its ``leading_lines``. Here they move to the next statement of the same
block, or, when the removed statement was the block's last, to the block's end (before the
``pass`` LibCST writes for a block left empty). The module's code outside the removed lines is
unchanged.
"""

from __future__ import annotations

import libcst as cst


def comments_above(stmt: cst.CSTNode) -> list[cst.EmptyLine]:
    """The lines above ``stmt`` when one of them is a comment (the blank lines among them too)."""
    lines = getattr(stmt, "leading_lines", ())
    return list(lines) if any(line.comment is not None for line in lines) else []


#: Comments that direct a tool at their own line (``# noqa``, ``# type: ignore``): they go with it.
_DIRECTIVES = ("noqa", "type:", "pragma", "fmt:", "isort:", "pylint:", "pyright:", "mypy:", "ruff:", "nosec")


def _kept_lines(stmt: cst.CSTNode) -> list[cst.EmptyLine]:
    """The lines a removed statement leaves: the comment lines above it and, on a line of its own
    where it stood, the comment at its end (FastSAM's ``torch.cuda.manual_seed_all(seed)  # for
    Multi-GPU, exception safe``), unless that comment is a directive for the removed line."""
    above = comments_above(stmt)
    trailing = getattr(getattr(stmt, "trailing_whitespace", None), "comment", None)
    if trailing is None or trailing.value.lstrip("#").strip().lower().startswith(_DIRECTIVES):
        return above
    return [*(above or list(getattr(stmt, "leading_lines", ()))), cst.EmptyLine(comment=trailing)]


def _blank_above(stmt: cst.CSTNode) -> list[cst.EmptyLine]:
    """The blank lines above ``stmt`` when there are only blank lines there (a paragraph break)."""
    lines = list(getattr(stmt, "leading_lines", ()))
    return lines if lines and all(line.comment is None for line in lines) else []


def body_keeping_comments(pieces) -> tuple[list, list[cst.EmptyLine]]:
    """``pieces``: each statement of a block with what replaces it (an empty list: removed). The
    new body, and the comment lines of removed statements left at its end. The blank lines above a
    removed statement go to the next one when it has none of its own, so two groups of statements
    stay apart (``from torch.cuda.amp import ...`` removed between the third-party and the local
    imports: the next import does not join the group above)."""
    body: list = []
    carry: list[cst.EmptyLine] = []
    blank: list[cst.EmptyLine] = []
    for old, new in pieces:
        if not new:
            carry.extend(_kept_lines(old))
            blank = blank or _blank_above(old)
            continue
        first = new[0]
        if carry:
            first = first.with_changes(leading_lines=[*carry, *first.leading_lines])
        elif blank and not first.leading_lines and body:
            first = first.with_changes(leading_lines=blank)
        new = [first, *new[1:]]
        carry, blank = [], []
        body.extend(new)
    return body, carry


def closed(block, body: list, carry: list[cst.EmptyLine]):
    """``block`` (a ``Module`` or an ``IndentedBlock``) with ``body``, the comment lines ``carry``
    at its end: before the ``pass`` of a block left empty, else first in its footer."""
    if not carry:
        return block.with_changes(body=body)
    if isinstance(block, cst.IndentedBlock) and not body:
        return block.with_changes(body=[cst.SimpleStatementLine([cst.Pass()], leading_lines=carry)])
    return block.with_changes(body=body, footer=[*carry, *block.footer])


def is_emptied(original: cst.CSTNode, updated) -> bool:
    """Whether a transformer's result for the statement ``original`` removes it from its block
    (a removal, or a line whose every statement was removed)."""
    if isinstance(updated, cst.RemovalSentinel):
        return isinstance(original, cst.BaseStatement)
    return isinstance(original, cst.SimpleStatementLine) and isinstance(updated, cst.SimpleStatementLine) \
        and not updated.body


def keep_comments(original, updated, removed: set[int]):
    """A transformer's ``updated`` block (``Module`` or ``IndentedBlock``) with the comment lines
    of its statements in ``removed`` (ids of ``original``'s statements) kept."""
    if not removed or not isinstance(original, (cst.Module, cst.IndentedBlock)) \
            or not isinstance(updated, type(original)):
        return updated
    gone = [stmt for stmt in original.body if id(stmt) in removed]
    if not any(_kept_lines(stmt) or _blank_above(stmt) for stmt in gone) \
            or len(original.body) - len(gone) != len(updated.body):
        return updated
    rest = iter(updated.body)
    pieces = [(stmt, [] if id(stmt) in removed else [next(rest)]) for stmt in original.body]
    return closed(updated, *body_keeping_comments(pieces))
