"""The parsed module of one fix pass, and the few statements of it that the pass rewrites.

LibCST's metadata (positions, parents, scopes) and its transformers cost a walk of every node;
on a large file that is several times the parse. A pass needs them only around its targets. So
each target is located by line numbers alone, descending from the module through the bodies of
classes, functions and other blocks to the smallest statement that holds it (a :class:`Region`);
positions and parents are computed for that statement on its own, only that statement is
visited, and the module is rebuilt along the path to it. Line numbers come from the ``ast`` of
the same text, each LibCST statement paired with its ``ast`` statements (else from the generated
code of each statement).

A statement inside a block is generated on its own with less indentation than in the file; each
line's shift is measured against the file's own line, so positions stay exact (lines inside a
multi-line string are not re-indented and get no shift). A target that is the module itself, or
that spans top-level statements, makes the whole module the region.
"""

from __future__ import annotations

import ast
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

from ..engine.parsing import recent
from .removed_comments import body_keeping_comments, closed
from .scope import torch_alias
from .splice import spliced_statement

Path = tuple[int, ...]  # indexes into the module's body, then into each statement's block


class Region:
    """Positions and parents of the nodes of the module, or of one of its statements on its own
    (the file's own node objects, so that what a fixer gets is found here)."""

    def __init__(self, tree: cst.Module, offset: int = 0, shifts: list[int] | None = None) -> None:
        self._wrapper = MetadataWrapper(tree, unsafe_skip_copy=True)
        self.offset = offset  # lines before the statement in the file
        self.shifts = shifts  # per line of the statement: columns of indentation it has in the file
        self.lines: list[str] | None = None  # the statement's code on its own, by line (with shifts)

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


#: The ``ast`` statements a LibCST compound statement can be.
_COMPOUND = {
    cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef), cst.ClassDef: (ast.ClassDef,),
    cst.If: (ast.If,), cst.For: (ast.For, ast.AsyncFor), cst.While: (ast.While,),
    cst.With: (ast.With, ast.AsyncWith), cst.Try: (ast.Try,), cst.TryStar: (getattr(ast, "TryStar", ast.Try),),
    cst.Match: (getattr(ast, "Match", ast.If),),
}
_COMPOUND_AST = tuple({t for ts in _COMPOUND.values() for t in ts})


def _paired(children, stmts) -> list[list[ast.stmt]] | None:
    """Each LibCST statement's ``ast`` statements (a line ``a; b`` holds two), or None when the
    two trees do not line up."""
    out, k = [], 0
    for child in children:
        if isinstance(child, cst.SimpleStatementLine):
            group = stmts[k:k + len(child.body)]
            if len(group) != len(child.body) or not group or any(isinstance(g, _COMPOUND_AST) for g in group):
                return None
        else:
            kinds = _COMPOUND.get(type(child))
            if kinds is None or k >= len(stmts) or not isinstance(stmts[k], kinds):
                return None
            group = [stmts[k]]
        out.append(group)
        k += len(group)
    return out if k == len(stmts) else None


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
        self._starts: dict[Path, tuple[list[int], list[int]]] = {}  # path -> lines of its block's statements
        self._groups: dict[Path, list | None] = {}  # path -> ast statements of its block's statements
        self._regions: dict[Path | None, Region] = {}
        self._replaced: dict[int, tuple[int, list]] = {}  # id(block of a rebuilt top statement) -> (index, [(path, nodes)])

    @cached_property
    def quote(self) -> str:
        """The quote the project's formatter (or else the module's literals) asks for (:mod:`.quotes`)."""
        from .first_party import rewritten_file
        from .quotes import preferred_quote

        return preferred_quote(self.text, rewritten_file())

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
        return self._layout(path)[0]

    def _layout(self, path: Path) -> tuple[list[int], list[int]]:
        """For each statement of the block at ``path``: its first line and its last line of code.

        Read off the ``ast`` of the same text (a parse costs a fraction of LibCST's code
        generation): each LibCST statement is paired with its ``ast`` statements, and its leading
        lines are counted back from the first of them. Where the pairing fails, the lines are
        counted in the generated code of each statement instead."""
        if path not in self._starts:
            layout = self._from_ast(path)
            if layout is None:
                layout = self._from_code(path)
            self._starts[path] = layout
        return self._starts[path]

    def _from_ast(self, path: Path) -> tuple[list[int], list[int]] | None:
        groups = self._ast_groups(path)
        if groups is None:
            return None
        starts, ends = [], []
        previous = 0
        for child, group in zip(self._children(path), groups):
            head = group[0]
            first = head.decorator_list[0].lineno if getattr(head, "decorator_list", None) else head.lineno
            start = first - len(child.leading_lines)
            if start <= previous:
                return None
            starts.append(start)
            ends.append(group[-1].end_lineno or first)
            previous = ends[-1]
        return starts, ends

    def _ast_groups(self, path: Path) -> list[list[ast.stmt]] | None:
        """The ``ast`` statements of each LibCST statement of the block at ``path``, or None."""
        if path in self._groups:
            return self._groups[path]
        groups = None
        if not path:
            if self._ast is not None:
                groups = _paired(self.tree.body, self._ast.body)
        else:
            above = self._ast_groups(path[:-1])
            if above is not None:
                stmt = above[path[-1]][0]
                body = getattr(stmt, "body", None)
                if isinstance(body, list):
                    groups = _paired(_block(self.node_at(path)).body, body)
        self._groups[path] = groups
        return groups

    @cached_property
    def _ast(self) -> ast.Module | None:
        tree = recent(self.text)  # the pass has just analysed this text: its tree is kept
        if tree is not None:
            return tree
        try:
            return ast.parse(self.text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None

    def _from_code(self, path: Path) -> tuple[list[int], list[int]]:
        children = self._children(path)
        counts = [self._lines_of(c) for c in children]
        if not path:
            line = 1 + len(self.tree.header)
        else:
            stmt = self.node_at(path)
            header = self._lines_of(stmt) - 1 - sum(counts) - len(_block(stmt).footer)
            line = self._first_line(path) + header + 1
        starts, ends = [], []
        for n in counts:
            starts.append(line)
            ends.append(line + n - 1)
            line += n
        return starts, ends

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
            starts, ends = self._layout(path)
            i = bisect.bisect_right(starts, line) - 1
            if i < 0:
                return path or None
            if end_line > ends[i]:
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
        theirs = self.file_lines[offset:offset + len(mine)]
        if len(theirs) != len(mine) or not all(b.endswith(a) for a, b in zip(mine, theirs)):
            return self.region(path[:1])
        region = Region(alone, offset, [len(b) - len(a) for a, b in zip(mine, theirs)])
        region.lines = mine
        return region

    @cached_property
    def file_lines(self) -> list[str]:
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
        replaced: list = []  # (path, nodes) of the statements replaced under the current top one
        self._replaced = {}

        def block(children, prefix: Path) -> tuple[list, list]:
            pieces = []  # each statement with what replaces it; the comments of removed ones stay
            for i, child in enumerate(children):
                here = prefix + (i,)
                if here in paths:
                    new = visit(here, child)
                    nodes = new.nodes if isinstance(new, cst.FlattenSentinel) else (
                        () if isinstance(new, cst.RemovalSentinel) else (new,))
                    # as LibCST's own body visit: a line whose every statement was removed goes too
                    kept = [n for n in nodes if child._is_removable() or not n._is_removable()]
                    replaced.append((here, kept))
                    pieces.append((child, kept))
                elif here in above:
                    if not prefix:
                        replaced.clear()
                    body = _block(child)
                    rebuilt = child.with_changes(body=closed(body, *block(body.body, here)))
                    pieces.append((child, [rebuilt]))
                    if not prefix:  # by its block, which survives a change of its leading lines
                        self._replaced[id(rebuilt.body)] = (i, list(replaced))
                else:
                    pieces.append((child, [child]))
            return body_keeping_comments(pieces)

        return closed(self.tree, *block(self.tree.body, ()))

    def code_of(self, new: cst.Module) -> str:
        """``new.code``, for a module made from this one by replacing some top-level statements:
        the statements it shares with this module are copied from the text, only the others are
        generated (code generation walks every node)."""
        old = self.tree
        if new.header is not old.header or new.footer is not old.footer or new.config_for_parsing != old.config_for_parsing \
                or new.has_trailing_newline != old.has_trailing_newline:
            return new.code
        lines = self.text.splitlines(keepends=True)
        starts = self.starts(())
        bounds = [s - 1 for s in starts] + [len(lines) - len(old.footer)]
        if len(NEWLINE_RE.split(self.text)) - (0 if self.text and self.text[-1] not in "\r\n" else 1) != len(lines):
            return new.code  # a line break splitlines knows and Python does not (form feed, ...)
        same = {id(stmt): i for i, stmt in enumerate(old.body)}
        parts = ["".join(lines[:len(old.header)])]
        for stmt in new.body:
            i = same.get(id(stmt))
            if i is not None:
                parts.append("".join(lines[bounds[i]:bounds[i + 1]]))
                continue
            spliced = spliced_statement(self, stmt, self._replaced.get(id(getattr(stmt, "body", None))), lines, bounds)
            parts.append(spliced if spliced is not None else new.code_for_node(stmt))
        parts.append("".join(lines[bounds[-1]:]))
        text = "".join(parts)
        if not new.has_trailing_newline and new.body and not old.footer and new.body[-1] is not old.body[-1]:
            return new.code  # the generated last statement ends with a newline the file does not have
        return text
