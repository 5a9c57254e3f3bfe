"""The code of a rebuilt top-level statement, without generating all of it.

A fix inside a long class or function replaces one small statement; LibCST's code generation of
the whole top-level statement around it walks every node of it. Here only the replaced statements
are generated, each on its own, and set into the file's text at their lines with the indentation
LibCST gives them in place (:func:`spliced_statement`); where that cannot be exact,
:meth:`neuron_lint.fixes.regions.Module.code_of` generates the whole statement as before.
"""

from __future__ import annotations

import dataclasses
import difflib

import libcst as cst
from libcst.metadata.position_provider import NEWLINE_RE


def spliced_statement(module, stmt, replaced, lines: list[str], bounds: list[int]) -> str | None:
    """The code of a rebuilt top-level statement: the file's text, with only the statements
    replaced inside it generated (each on its own) and indented as LibCST indents them in place;
    None where that cannot be exact (then the whole statement is generated).

    ``module``: a :class:`neuron_lint.fixes.regions.Module`; ``stmt``: the new top-level statement;
    ``replaced``: its index in the module and ``[(path, new nodes)]``, as ``Module.rebuilt`` recorded them.

    Which lines LibCST indents (statements, and the continuation, blank and comment lines marked
    so) and which it writes as they are (inside a multi-line string, or at an absolute column) is
    read off a second generation of the same nodes inside a block of known indentation."""
    if replaced is None or not replaced[1]:
        return None
    top, entries = replaced
    first, last = bounds[top], bounds[top + 1]
    newline = module.tree.default_newline
    if any(not line.endswith(newline) or line[:-len(newline)].endswith("\r") for line in lines[first:last]):
        return None  # more than one kind of line break
    old = module.tree.body[top]
    if any(getattr(stmt, f.name) is not getattr(old, f.name) for f in dataclasses.fields(old)
           if f.name not in ("body", "leading_lines")):
        return None
    out: list[str] = []
    if stmt.leading_lines is not old.leading_lines:  # the blank lines above it were changed
        out.append("".join(module.tree.code_for_node(line) for line in stmt.leading_lines))
        first += len(old.leading_lines)
    at = first  # 0-based file line up to which the text is copied
    for path, nodes in sorted(entries):
        region = module.region(path)
        mine = region.lines
        if mine is None or not nodes or region.offset < at or region.offset + len(mine) > last:
            return None
        lead = len(getattr(module.node_at(path), "leading_lines", ()))
        if lead >= len(mine):
            return None
        indent = module.file_lines[region.offset + lead][:region.shifts[lead]]
        theirs = _indented(module.tree, nodes)
        if theirs is None or indent.strip():
            return None
        out.append("".join(lines[at:region.offset]))
        matcher = difflib.SequenceMatcher(None, mine, [t for t, _ in theirs], autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                out.append("".join(lines[region.offset + i1:region.offset + i2]))
            else:
                out.append("".join((indent + t if indented else t) + newline for t, indented in theirs[j1:j2]))
        at = region.offset + len(mine)
    out.append("".join(lines[at:last]))
    return "".join(out)


def _indented(tree: cst.Module, nodes) -> list[tuple[str, bool]] | None:
    """Each line of ``nodes``' code on their own, and whether LibCST indents it inside a block."""
    alone = NEWLINE_RE.split(tree.with_changes(header=[], body=list(nodes), footer=[]).code)
    block = cst.If(test=cst.Name("_"), body=cst.IndentedBlock(body=list(nodes), indent=_MARK))
    inside = NEWLINE_RE.split(tree.with_changes(header=[], body=[block], footer=[]).code)[1:]
    if len(alone) != len(inside):
        return None
    if not alone[-1] and not inside[-1]:
        alone.pop()
        inside.pop()
    out = []
    for a, b in zip(alone, inside):
        if b == _MARK + a:
            out.append((a, True))
        elif b == a:
            out.append((a, False))
        else:
            return None
    return out


#: The indentation of the block :func:`_indented` generates nodes in.
_MARK = "\t"
