"""Where an import a fix adds goes, as ruff's isort (I001) sorts a module's imports.

LibCST's ``AddImportsVisitor`` appends what it adds to the module's top imports. An added ``import
torch`` goes to the third-party section instead: after the standard library, before the project's
own modules, a blank line between sections, and below the environment the module sets up right
after its imports. An added ``from torch... import ...`` (``from torch.nn.attention import
SDPBackend, sdpa_kernel``) goes after the section's plain imports, among its ``from`` imports in
the order of their modules. Statements are moved as they are, never regenerated.
"""

from __future__ import annotations

import libcst as cst

from ..io.notebook import MAGIC_MARKER


def sorted_torch_import(tree: cst.Module, original: cst.Module | None = None) -> cst.Module:
    """:func:`_sorted_torch_import`, then below the environment the module sets up right after its
    imports (DeOldify's notebook: ``import os`` then ``os.environ['OMP_NUM_THREADS'] = '1'``, which
    torch reads when it is imported: above them, the setting no longer takes). ``original``: the
    module before the import was added, whose first such statement keeps its own blank lines."""
    tree = _sorted_torch_import(_after_notebook_setup(tree))
    body = list(tree.body)
    at = _plain_torch_import(body)
    if at is None:
        return tree
    end = at
    while end + 1 < len(body) and lone_import(body[end + 1]):
        end += 1
    last = end
    while last + 1 < len(body) and _sets_environment(body[last + 1]):
        last += 1
    if last == end:
        return tree
    moved = body.pop(at)
    first = next((stmt for stmt in (original.body if original is not None else ()) if _sets_environment(stmt)), None)
    if first is not None:  # LibCST set a blank line between the imports and it
        body[at] = body[at].with_changes(leading_lines=first.leading_lines)
    body.insert(last, moved.with_changes(leading_lines=[cst.EmptyLine()]))
    return tree.with_changes(body=body)


def _magic(stmt) -> bool:
    """A notebook's IPython line (``!pip install ...``), masked as ``pass  # nl-... magic N``."""
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Pass)
            and stmt.trailing_whitespace.comment is not None
            and bool(MAGIC_MARKER.match(stmt.trailing_whitespace.comment.value)))


def _after_notebook_setup(tree: cst.Module) -> cst.Module:
    """A notebook that starts with shell and magic lines (``!apt-get ...``, ``!pip install d3rlpy``,
    often a Colab-only cell skipped elsewhere: d3rlpy's tutorials, set 62) gets the ``import torch``
    LibCST put at its very top in the cell of its first Python statement instead, after the imports
    there that sort before it: installing comes before importing, and a skipped setup cell must not
    take the import (and the device defined after it) along."""
    body = list(tree.body)
    if _plain_torch_import(body) != 0 or len(body) < 3 or not _magic(body[1]):
        return tree
    k = 1
    while k < len(body) and _magic(body[k]):
        k += 1
    if k >= len(body):
        return tree
    moved, target = body[0], body[k]
    at = k  # the import goes before body[at]: after the cell's imports that isort puts above it
    while at < len(body) and lone_import(body[at]) and (at == k or not any(x.comment for x in body[at].leading_lines)):
        section = _section(body[at].body[0])
        if section == "first" or (section == "third" and _sorts_after_torch(body[at].body[0])):
            break
        at += 1
    if at == k:  # first in its cell
        body.insert(k, moved.with_changes(leading_lines=target.leading_lines))
        apart = not lone_import(target) or _section(target.body[0]) == "first"
        body[k + 1] = target.with_changes(leading_lines=[cst.EmptyLine()] if apart else [])
    else:  # a blank line between the standard library and torch's section
        apart = _section(body[at - 1].body[0]) == "stdlib"
        body.insert(at, moved.with_changes(leading_lines=[cst.EmptyLine()] if apart else []))
    body[1] = body[1].with_changes(leading_lines=moved.leading_lines)  # the blank line LibCST put under the import goes
    return tree.with_changes(body=body[1:])


def _plain_torch_import(body: list) -> int | None:
    """The index of the module's ``import torch`` line (the one a fix adds), or None."""
    return next((i for i, stmt in enumerate(body) if lone_import(stmt) and isinstance(stmt.body[0], cst.Import)
                 and [(_name(a.name), a.asname) for a in stmt.body[0].names] == [("torch", None)]), None)


def _sets_environment(stmt) -> bool:
    """``os.environ["X"] = ...``, ``os.environ.setdefault(...)`` / ``.update(...)``, ``os.putenv(...)``."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
        return False
    small = stmt.body[0]
    if isinstance(small, cst.Assign):
        return all(isinstance(t.target, cst.Subscript) and _environ(t.target.value) for t in small.targets)
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        func = small.value.func
        return isinstance(func, cst.Attribute) and (
            func.attr.value in ("setdefault", "update") and _environ(func.value)
            or func.attr.value == "putenv" and isinstance(func.value, cst.Name) and func.value.value == "os")
    return False


def _environ(node) -> bool:
    return isinstance(node, cst.Attribute) and node.attr.value == "environ" and isinstance(
        node.value, cst.Name) and node.value.value == "os"


def _sorted_torch_import(tree: cst.Module) -> cst.Module:
    """``tree`` with the ``import torch`` LibCST appended to the top imports moved to where isort
    (ruff's I001) wants it: in the third-party section, after the standard library and before the
    project's own modules (a blank line between sections), before the section's ``from ... import``
    statements and before a plain import that sorts after it (fairscale: after ``import torch.nn as
    nn``; detectron2's DensePose: above ``from detectron2.config import ...``, a blank line between)."""
    body = list(tree.body)
    at = _plain_torch_import(body)
    if not at:
        return tree
    first = at
    while first > 0 and lone_import(body[first - 1]):
        first -= 1
    sections = {j: _section(body[j].body[0]) for j in range(first, at)}
    j = next((j for j in range(first, at) if sections[j] == "first"
              or (sections[j] == "third" and _sorts_after_torch(body[j].body[0]))), None)
    _move(body, at, j, sections)
    return tree.with_changes(body=body)


def _section(small) -> str:
    """``"stdlib"``, ``"third"`` or ``"first"`` (the project's own, or a relative import)."""
    import sys

    from .first_party import is_first_party

    if isinstance(small, cst.ImportFrom):
        if small.relative:
            return "first"
        module = _name(small.module) if small.module is not None else ""
        modules = [module]
    else:
        modules = [_name(a.name) for a in small.names]
    stdlib = getattr(sys, "stdlib_module_names", frozenset())
    if all(m.split(".")[0] in stdlib for m in modules):
        return "stdlib"
    return "first" if any(is_first_party(m) for m in modules) else "third"


def _sorts_after_torch(small) -> bool:
    """Does this third-party import come after ``import torch`` (every ``from`` import does)?"""
    if isinstance(small, cst.ImportFrom):
        return True
    return min(_name(a.name).lower() for a in small.names) > "torch"


def _name(node) -> str:
    return node.value if isinstance(node, cst.Name) else f"{_name(node.value)}.{node.attr.value}"


def lone_import(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(
        stmt.body[0], (cst.Import, cst.ImportFrom))


def place_added_from_imports(tree: cst.Module, original: cst.Module) -> cst.Module:
    """``tree`` with each top-level ``from torch... import`` statement that is not in ``original``
    (LibCST appends them after the top imports) moved into the third-party section, in order."""
    kept = {id(stmt) for stmt in original.body}
    body = list(tree.body)
    for at in [i for i, stmt in enumerate(body) if id(stmt) not in kept and lone_import(stmt)
               and isinstance(stmt.body[0], cst.ImportFrom) and not stmt.body[0].relative
               and stmt.body[0].module is not None and _name(stmt.body[0].module).split(".")[0] == "torch"]:
        module = _name(body[at].body[0].module).lower()
        first = at
        while first > 0 and lone_import(body[first - 1]):
            first -= 1
        sections = {j: _section(body[j].body[0]) for j in range(first, at)}
        j = next((j for j in range(first, at) if sections[j] == "first" or (
            sections[j] == "third" and isinstance(body[j].body[0], cst.ImportFrom)
            and body[j].body[0].module is not None and _name(body[j].body[0].module).lower() > module)), None)
        _move(body, at, j, sections)
    return tree.with_changes(body=body)


def _move(body: list, at: int, j: int | None, sections: dict) -> None:
    """Move the import at ``at`` to just before ``j`` (None: it stays last), with the blank lines
    between the sections isort keeps."""
    if j is None:
        if not body[at].leading_lines and sections.get(at - 1) == "stdlib":  # a section of its own
            body[at] = body[at].with_changes(leading_lines=[cst.EmptyLine()])
        return
    moved, target = body.pop(at), body[j]
    previous = sections.get(j - 1)
    if sections[j] == "third" or previous is None:  # in the section of the import it goes before, or first
        moved = moved.with_changes(leading_lines=target.leading_lines)
        target = target.with_changes(leading_lines=[cst.EmptyLine()] if sections[j] == "first" else [])
    elif previous == "third":  # the end of the third-party section, before the project's own
        moved = moved.with_changes(leading_lines=[])
    else:  # after the standard library: a section between it and the project's own
        moved = moved.with_changes(leading_lines=[cst.EmptyLine()])
        if not target.leading_lines or target.leading_lines[0].comment is not None:
            target = target.with_changes(leading_lines=[cst.EmptyLine(), *target.leading_lines])
    body[j] = target
    body.insert(j, moved)
