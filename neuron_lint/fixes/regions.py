"""The parsed module of one fix pass, and the few statements of it that the pass rewrites.

LibCST's metadata (positions, parents, scopes) and its transformers cost a walk of every node;
on a large file that is several times the parse. A pass needs them only around its targets. So
each target is located by line numbers alone, descending from the module through the bodies of
classes, functions and other blocks to the smallest statement that holds it (a :class:`Region`);
positions and parents are computed for that statement on its own, only that statement is
visited, and the module is rebuilt along the path to it. Line numbers come from the generated
code of each statement (LibCST's code generation is a fraction of its parse).

A statement inside a block is generated on its own with less indentation than in the file; each
line's shift is measured against the file's own line, so positions stay exact (lines inside a
multi-line string are not re-indented and get no shift). A target that is the module itself, or
that spans top-level statements, makes the whole module the region.
"""

from __future__ import annotations

import bisect
from functools import cached_property

import libcst as cst
from libcst.metadata import (
    CodePosition,
    CodeRange,
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
    ScopeProvider,
)
from libcst.metadata.position_provider import NEWLINE_RE

from .scope import torch_alias

Path = tuple[int, ...]  # indexes into the module's body, then into each statement's block


class Region:
    """Positions and parents of the nodes of the module, or of one of its statements on its own
    (the file's own node objects, so that what a fixer gets is found here)."""

    def __init__(self, tree: cst.Module, offset: int = 0, shifts: list[int] | None = None) -> None:
        self._wrapper = MetadataWrapper(tree, unsafe_skip_copy=True)
        self.offset = offset  # lines before the statement in the file
        self.shifts = shifts  # per line of the statement: columns of indentation it has in the file

    @cached_property
    def _positions(self):
        return self._wrapper.resolve(PositionProvider)

    def position(self, node: cst.CSTNode) -> CodeRange | None:
        r = self._positions.get(node)
        if r is None or not (self.offset or self.shifts):
            return r
        shifts = self.shifts or ()

        def moved(p: CodePosition, end: bool) -> CodePosition:
            k = p.line - 1
            # an end in column 0 is just past a newline, before any indentation
            shift = shifts[k] if k < len(shifts) and not (end and p.column == 0) else 0
            return CodePosition(p.line + self.offset, p.column + shift)

        return CodeRange(moved(r.start, False), moved(r.end, True))

    @cached_property
    def parents(self):
        return self._wrapper.resolve(ParentNodeProvider)


def _block(stmt: cst.CSTNode) -> cst.IndentedBlock | None:
    """The indented body of a statement whose body is the last thing in it, else None."""
    if isinstance(stmt, (cst.ClassDef, cst.FunctionDef, cst.With)) or (
            isinstance(stmt, (cst.If, cst.For, cst.While)) and stmt.orelse is None):
        return stmt.body if isinstance(stmt.body, cst.IndentedBlock) and stmt.body.body else None
    return None


class Module:
    """A parsed module, shared by every transformation of one pass (and the retries of a pass)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tree = cst.parse_module(text)
        self.torch = torch_alias(self.tree)
        self._newlines: dict[int, int] = {}  # id(statement) -> lines of its generated code
        self._starts: dict[Path, list[int]] = {}  # path -> first line of each statement of its block
        self._regions: dict[Path | None, Region] = {}

    # ------------------------------------------------------------------ lines
    def _lines_of(self, node: cst.CSTNode) -> int:
        n = self._newlines.get(id(node))
        if n is None:
            n = self._newlines[id(node)] = len(NEWLINE_RE.findall(self.tree.code_for_node(node)))
        return n

    def _children(self, path: Path) -> list:
        return list(self.tree.body) if not path else list(_block(self.node_at(path)).body)

    def node_at(self, path: Path) -> cst.CSTNode:
        node = self.tree.body[path[0]]
        for i in path[1:]:
            node = _block(node).body[i]
        return node

    def _first_line(self, path: Path) -> int:
        if not path:
            return 1
        return self.starts(path[:-1])[path[-1]]

    def starts(self, path: Path) -> list[int]:
        """The first line (leading blank lines and comments included) of each statement of the
        block at ``path`` (the module's body for ``()``)."""
        if path not in self._starts:
            children = self._children(path)
            counts = [self._lines_of(c) for c in children]
            if not path:
                line = 1 + len(self.tree.header)
            else:
                stmt = self.node_at(path)
                header = self._lines_of(stmt) - 1 - sum(counts) - len(_block(stmt).footer)
                line = self._first_line(path) + header + 1
            out = []
            for n in counts:
                out.append(line)
                line += n
            self._starts[path] = out
        return self._starts[path]

    # ------------------------------------------------------------------ where the targets are
    def path_of(self, target) -> Path | None:
        """The smallest statement holding ``target`` (``(line, col, end_line, end_col, kind)``);
        None for the whole module."""
        line, _col, end_line, _end_col, kind = target
        if kind == "Module":
            return None
        path: Path = ()
        children = self.tree.body
        while True:
            starts = self.starts(path)
            i = bisect.bisect_right(starts, line) - 1
            if i < 0:
                return path or None
            last = starts[i] + self._lines_of(children[i]) - 1
            if end_line > last:
                return path or None  # it spans statements of this block
            path += (i,)
            block = _block(children[i])
            if block is None or kind == "IndentedBlock" or line < self.starts(path)[0]:
                return path
            children = block.body

    def paths_of(self, targets) -> set[Path] | None:
        """The statements to visit for ``targets``: none inside another; None for the whole module."""
        paths = set()
        for target in targets:
            path = self.path_of(target)
            if path is None:
                return None
            if len(path) > 1 and self.region(path) is self.region(path[:1]):
                path = path[:1]  # its lines could not be matched to the file's
            paths.add(path)
        return {p for p in paths if not any(p[:k] in paths for k in range(1, len(p)))}

    # ------------------------------------------------------------------ metadata
    def region(self, path: Path | None) -> Region:
        """The metadata of the statement at ``path`` on its own (None: of the whole module)."""
        if path not in self._regions:
            self._regions[path] = self._make_region(path)
        return self._regions[path]

    def _make_region(self, path: Path | None) -> Region:
        if path is None:
            return Region(self.tree)
        alone = self.tree.with_changes(header=[], body=[self.node_at(path)], footer=[])
        offset = self._first_line(path) - 1
        if len(path) == 1:
            return Region(alone, offset)
        mine = NEWLINE_RE.split(alone.code)
        if not mine[-1]:
            mine.pop()  # after the last newline
        theirs = self._file_lines[offset:offset + len(mine)]
        if len(theirs) != len(mine) or not all(b.endswith(a) for a, b in zip(mine, theirs)):
            return self.region(path[:1])
        return Region(alone, offset, [len(b) - len(a) for a, b in zip(mine, theirs)])

    @cached_property
    def _file_lines(self) -> list[str]:
        return NEWLINE_RE.split(self.text)

    @cached_property
    def scopes(self):
        """Scopes of the whole module (what a name is bound to, where it is used)."""
        return MetadataWrapper(self.tree, unsafe_skip_copy=True).resolve(ScopeProvider)

    # ------------------------------------------------------------------ the rebuilt module
    def rebuilt(self, paths: set[Path], visit) -> cst.Module:
        """The module with each statement at ``paths`` replaced by ``visit(path, statement)`` (a
        node, a ``FlattenSentinel`` or a ``RemovalSentinel``), the blocks along the way rebuilt."""
        above = {p[:k] for p in paths for k in range(1, len(p))}

        def block(children, prefix: Path) -> list:
            out = []
            for i, child in enumerate(children):
                here = prefix + (i,)
                if here in paths:
                    new = visit(here, child)
                    nodes = new.nodes if isinstance(new, cst.FlattenSentinel) else (
                        () if isinstance(new, cst.RemovalSentinel) else (new,))
                    # as LibCST's own body visit: a line whose every statement was removed goes too
                    out.extend(n for n in nodes if child._is_removable() or not n._is_removable())
                elif here in above:
                    body = _block(child)
                    out.append(child.with_changes(body=body.with_changes(body=block(body.body, here))))
                else:
                    out.append(child)
            return out

        return self.tree.with_changes(body=block(self.tree.body, ()))
