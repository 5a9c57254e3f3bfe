"""Jupyter notebooks: their code cells as one Python module, and fixed cells written back.

A notebook (``.ipynb``) is JSON. Its code cells are joined into one module, so that an import in
cell 1 is known in cell 5, with a marker comment between cells; IPython syntax (``%magic``,
``%%cell magic``, ``!shell``, ``name?``) is masked by ``pass`` lines carrying a marker, so that it
parses and gives no finding. Lines keep their columns; :meth:`Joined.locate` maps a line of the
module back to its cell.

Writing back changes only the ``source`` of the cells whose code changed: the rest of the file
(outputs, metadata, key order, indentation, escapes, the final newline) keeps its bytes, because the
new ``source`` values are spliced into the original JSON text at the spans the scanner recorded,
in the style (list of lines or one string, indentation, ASCII escapes) the file already uses.
"""

from __future__ import annotations

import ast
import bisect
import hashlib
import json
import re
import warnings
from dataclasses import dataclass, field

from .json_spans import _WS, JSONSpanError, SpanScanner

SUFFIX = ".ipynb"
#: Cell magics whose body is Python run by IPython (the first line is masked, the body checked).
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "python", "python3", "memit"})


class NotebookError(ValueError):
    """The file is not a notebook we can read; the message says why (it follows the file's name)."""


def is_notebook(path: str) -> bool:
    return str(path).endswith(SUFFIX)


# ---------------------------------------------------------------------- the notebook
@dataclass
class Cell:
    number: int  # 1-based position in the notebook, markdown cells included
    kind: str  # "code", "markdown", "raw"
    source: str


@dataclass
class Notebook:
    text: str  # the file's JSON text
    cells: list[Cell]
    language: str  # "python" unless the notebook says otherwise

    @property
    def is_python(self) -> bool:
        return self.language.lower() in ("python", "python3", "ipython", "")
    bom: bool = False
    _scan: SpanScanner = field(repr=False, default=None)

    @property
    def code_cells(self) -> list[Cell]:
        return [c for c in self.cells if c.kind == "code"]


def parse_notebook(data: bytes) -> Notebook:
    """The notebook in ``data``; :class:`NotebookError` when it is not one (nbformat 4)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NotebookError(f"is not a valid notebook: not UTF-8 (byte 0x{exc.object[exc.start]:02x} "
                            f"at offset {exc.start})") from None
    scanner = SpanScanner(text)
    try:
        root, end = scanner.value(0, (), 0)
        if _WS.match(text, end).end() != len(text):
            raise scanner.fail("extra data after the notebook", end)
    except JSONSpanError as exc:
        raise NotebookError(f"is not a valid notebook: {exc}") from None
    if not isinstance(root, dict):
        raise NotebookError("is not a valid notebook: the top level is not a JSON object")
    if "worksheets" in root and "cells" not in root:
        raise NotebookError("is an nbformat 3 notebook; convert it with `jupyter nbconvert --to notebook` first")
    raw_cells = root.get("cells")
    if not isinstance(raw_cells, list):
        raise NotebookError("is not a valid notebook: no \"cells\" list")
    cells = []
    for n, raw in enumerate(raw_cells):
        if not isinstance(raw, dict) or not isinstance(raw.get("cell_type"), str):
            raise NotebookError(f"is not a valid notebook: cell {n + 1} has no cell_type")
        source = raw.get("source", "")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        elif not isinstance(source, str):
            raise NotebookError(f"is not a valid notebook: cell {n + 1} has a source that is not text")
        cells.append(Cell(n + 1, raw["cell_type"], source))
    return Notebook(text, cells, _language(root), data.startswith(b"\xef\xbb\xbf"), scanner)


def _language(root: dict) -> str:
    meta = root.get("metadata") if isinstance(root.get("metadata"), dict) else {}
    for key, field_name in (("language_info", "name"), ("kernelspec", "language")):
        info = meta.get(key)
        if isinstance(info, dict) and isinstance(info.get(field_name), str):
            return info[field_name]
    return "python"


# ---------------------------------------------------------------------- one module from the cells
_MAGIC = re.compile(r"[ \t]*(?:[%!?]|[\w.]+[ \t]*=[ \t]*[%!]|[\w.\[\]()]+\?{1,2}[ \t]*$)")
#: Line magics IPython runs without their ``%`` (automagic): ``pip install x`` in a cell.
_AUTOMAGIC = re.compile(
    r"[ \t]*(?:pip|conda|mamba|cd|ls|ll|pwd|env|set_env|load_ext|reload_ext|autoreload|matplotlib|config|"
    r"time|timeit|run|who|whos|history|pylab|store|mkdir|rmdir|cat|cp|mv|rm|less|man|alias)(?:[ \t]|$)"
)


@dataclass
class Joined:
    """The code cells as one module. ``starts[i]``: the module line where ``sources[i]`` begins."""

    text: str
    starts: list[int]
    lengths: list[int]  # lines of each source
    token: str  # the marker of this join's separator and mask comments
    masked: dict[int, str]  # mask number -> the original line it replaces
    newlines_at_end: list[int]  # each source's trailing newlines (a source without one counts 1)

    def locate(self, line: int) -> tuple[int, int]:
        """(index into the sources, 1-based line in it) of a 1-based module line.

        A separator line is the end of the cell above it (one past its last line).
        """
        i = max(bisect.bisect_right(self.starts, line) - 1, 0)
        return i, line - self.starts[i] + 1

    def split(self, text: str) -> list[str] | None:
        """The cell sources of a (fixed) module made by this join, magics restored; None when the
        fixed module lost or moved a separator or a mask (then no cell can be trusted)."""
        parts = re.split(rf"^# {self.token} cell \d+\n", text, flags=re.M)
        if len(parts) != len(self.starts):
            return None
        seen: list[int] = []

        def restore(m: re.Match) -> str:
            seen.append(int(m.group(1)))
            return self.masked.get(int(m.group(1)), m.group(0))

        mask = re.compile(rf"^[ \t]*pass  # {self.token} magic (\d+)$", re.M)
        out = []
        for part, newlines in zip(parts, self.newlines_at_end):
            part = mask.sub(restore, part)
            # a cell ends as it did: a definition a fix added at its end brings no blank line, and
            # the last line of a cell that had no newline gets none
            if part.strip():
                part = part.rstrip("\n") + "\n" * newlines
            out.append(part)
        if sorted(seen) != sorted(self.masked) or any(self.token in p for p in out):
            return None
        return _after_cell_magics(out, {v for v in self.masked.values() if v.lstrip().startswith("%%")})


def _after_cell_magics(cells: list[str], magics: set[str]) -> list[str] | None:
    """``cells`` with what a fix put above a cell magic (``%%capture`` must stay its cell's first
    line: an ``import torch`` and a device definition added at the top of a notebook whose first
    cell installs packages) moved to the top of the next cell that opens with Python; None when
    there is none."""
    for i, cell in enumerate(cells):
        lines = cell.split("\n")
        at = next((j for j, line in enumerate(lines) if line in magics), 0)
        if not any(line.strip() for line in lines[:at]):
            continue
        after = next((k for k in range(i + 1, len(cells)) if cells[k].strip()
                      and not cells[k].lstrip().startswith("%%")), None)
        if after is None:
            return None
        cells[i] = "\n".join(lines[at:])
        cells[after] = "\n".join(lines[:at]).strip("\n") + "\n\n" + cells[after]
    return cells


def _parses(source: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _masked_lines(source: str) -> tuple[list[int], bool]:
    """The 0-based lines of ``source`` that are IPython syntax, not Python, and whether that is the
    whole cell (a ``%%bash`` cell: its indentation means nothing to Python)."""
    lines = source.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        name = lines[first].lstrip()[2:].split(None, 1)[0] if lines[first].strip() != "%%" else ""
        if name not in PYTHON_CELL_MAGICS:
            return [i for i, line in enumerate(lines) if line.strip()], True  # %%bash, %%writefile ...
        if _parses("\n".join(lines[first + 1:])):
            return [first], False
    if _parses(source):
        return [], False
    out: list[int] = []
    continued = False
    for i, line in enumerate(lines):
        if continued or _MAGIC.match(line) or (_AUTOMAGIC.match(line) and not _parses(line.strip())):
            out.append(i)
            continued = line.rstrip().endswith("\\")
    return out, False


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


#: The line :func:`join_cells` puts between two cells (its token: ``nl-`` and ten hex digits).
CELL_SEPARATOR = re.compile(r"^# nl-[0-9a-f]{10} cell \d+$", re.M)
#: The comment of the ``pass`` line :func:`join_cells` puts where a line of IPython syntax was.
MAGIC_MARKER = re.compile(r"^# nl-[0-9a-f]{10} magic \d+$")


def join_cells(sources: list[str]) -> Joined:
    """One module from cell sources (see the module's docstring)."""
    token = "nl-" + hashlib.sha1("\0".join(sources).encode("utf-8", "surrogatepass")).hexdigest()[:10]
    pieces: list[str] = []
    starts: list[int] = []
    lengths: list[int] = []
    masked: dict[int, str] = {}
    ends: list[int] = []
    line = 1
    for n, source in enumerate(sources):
        source = source.replace("\r\n", "\n").replace("\r", "\n")
        if n:
            pieces.append(f"# {token} cell {n}\n")
            line += 1
        starts.append(line)
        ends.append(len(source) - len(source.rstrip("\n")) if source.strip() else 1)
        lines = source.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        masks, whole_cell = _masked_lines(source)
        indent = ""
        for i in masks:
            if i >= len(lines):
                continue
            if not whole_cell and (i - 1 not in masks or not masked[len(masked) - 1].rstrip().endswith("\\")):
                indent = _indent(lines[i])  # a continued magic's lines all take its first line's indent
            number = len(masked)
            masked[number] = lines[i]
            lines[i] = f"{indent}pass  # {token} magic {number}"
        pieces.extend(f"{text}\n" for text in lines)
        lengths.append(len(lines))
        line += len(lines)
    return Joined("".join(pieces), starts, lengths, token, masked, ends)


# ---------------------------------------------------------------------- writing cells back
def with_sources(nb: Notebook, new: dict[int, str]) -> bytes:
    """The notebook's bytes with the ``source`` of cells ``new`` (cell number -> text) replaced;
    everything else is the original text. Raises :class:`NotebookError` if that is not possible."""
    text = nb.text
    ensure_ascii = _uses_ascii_escapes(text)
    out, last = [], 0
    for number in sorted(new):
        index = number - 1
        span = nb._scan.spans.get(index)
        if span is None:
            raise NotebookError(f"cell {number} has no source to replace")
        start, end = span
        out.append(text[last:start])
        out.append(_source_json(nb, index, new[number], ensure_ascii))
        last = end
    out.append(text[last:])
    return (b"\xef\xbb\xbf" if nb.bom else b"") + "".join(out).encode("utf-8")


def _uses_ascii_escapes(text: str) -> bool:
    """Does the file write non-ASCII characters as ``\\uXXXX``? (Jupyter writes them as they are.)"""
    if any(ord(c) > 127 for c in text):
        return False
    return re.search(r"\\u(?:00[89a-fA-F][0-9a-fA-F]|0[1-9a-fA-F][0-9a-fA-F]{2}|[1-9a-fA-F][0-9a-fA-F]{3})", text) is not None


def _source_json(nb: Notebook, index: int, source: str, ensure_ascii: bool) -> str:
    start, end = nb._scan.spans[index]
    raw = nb.text[start:end]
    dump = lambda s: json.dumps(s, ensure_ascii=ensure_ascii)  # noqa: E731
    if raw.startswith('"'):
        return dump(source)
    lines = source.splitlines(keepends=True)
    if not lines:
        return "[]"
    opening, sep, closing = _list_style(nb, index)
    return "[" + opening + sep.join(dump(line) for line in lines) + closing + "]"


def _list_style(nb: Notebook, index: int) -> tuple[str, str, str]:
    """(after ``[``, between items, before ``]``) as the notebook writes its source lists."""
    text = nb.text

    def style(i: int) -> tuple[str, str | None, str] | None:
        items = nb._scan.items.get(i)
        if not items:
            return None
        start, end = nb._scan.spans[i]
        opening = text[start + 1:items[0][0]]
        closing = text[items[-1][1]:end - 1]
        sep = text[items[0][1]:items[1][0]] if len(items) > 1 else None
        return opening, sep, closing

    own = style(index)
    if own is not None and own[1] is not None:
        return own  # type: ignore[return-value]
    other = next((s for s in map(style, sorted(nb._scan.items)) if s is not None and s[1] is not None), None)
    if other is not None:
        return other  # type: ignore[return-value]
    if own is not None:
        return own[0], "," + own[0], own[2]
    start = nb._scan.spans[index][0]
    key_line = text.rfind("\n", 0, start) + 1
    indent = text[key_line:start][: len(text[key_line:start]) - len(text[key_line:start].lstrip())]
    return "\n" + indent + " ", ",\n" + indent + " ", "\n" + indent


def changed_cells(nb: Notebook, sources: list[str]) -> dict[int, tuple[str, str]]:
    """Cell number -> (old, new) source, for the code cells whose source ``sources`` changes."""
    return {c.number: (c.source, _endings_of(c.source, new)) for c, new in zip(nb.code_cells, sources)
            if new != c.source.replace("\r\n", "\n")}


def _endings_of(old: str, new: str) -> str:
    """``new`` (its lines ended by ``\n``, as :func:`join_cells` wrote them) with the line ending most
    of ``old``'s lines have (Grad-TTS's inference notebook ends its cells' lines with ``\r\n``)."""
    crlf = old.count("\r\n")
    return new.replace("\n", "\r\n") if crlf and crlf * 2 >= old.count("\n") else new


def write_cells(nb: Notebook, changed: dict[int, tuple[str, str]], original: bytes) -> bytes:
    """The notebook's bytes with the new sources of ``changed`` spliced in, checked by nbformat;
    :class:`NotebookError` when the result would be invalid and the original was not."""
    data = with_sources(nb, {number: new for number, (_, new) in changed.items()})
    why = validate(data, original)
    if why:
        raise NotebookError(f"would not be a valid notebook any more ({why}); left alone")
    return data


def validate(data: bytes, original: bytes) -> str:
    """Why the written notebook is not valid nbformat while the original was (empty: it is fine)."""
    import copy

    try:
        import nbformat
    except ImportError:  # pragma: no cover - a dependency; a broken install still gets the JSON check
        return ""
    new = json.loads(data.decode("utf-8-sig"))

    def problem(nb: dict) -> str:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                nbformat.validate(copy.deepcopy(nb), version=nb.get("nbformat", 4))
        except Exception as exc:  # nbformat's ValidationError, or its own errors on odd input
            return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return ""

    why = problem(new)
    if why and not problem(json.loads(original.decode("utf-8-sig"))):
        return why
    return ""


# ---------------------------------------------------------------------- findings in cells
def _point(joined: Joined, numbers: list[int], line: int, col: int) -> tuple[int, int, int]:
    i, in_cell = joined.locate(line)
    if in_cell > joined.lengths[i]:  # a separator: one past the cell's last line
        return numbers[i], joined.lengths[i] + 1, 1
    return numbers[i], in_cell, col


def edits_in_cells(edits: tuple, joined: Joined, numbers: list[int]) -> tuple | None:
    """``edits`` in cell coordinates, or None if one of them runs across cells."""
    from dataclasses import replace

    out = []
    for e in edits:
        cell, line, col = _point(joined, numbers, e.line, e.col)
        end_cell, end_line, end_col = _point(joined, numbers, e.end_line, e.end_col)
        if end_cell != cell:
            return None
        out.append(replace(e, line=line, col=col, end_line=end_line, end_col=end_col, cell=cell))
    return tuple(out)


def findings_in_cells(findings: list, joined: Joined, numbers: list[int]) -> list:
    """Findings on the joined module, located in their cells (``numbers[i]``: the notebook's cell
    number of the ``i``-th joined source). A fix's edits are mapped too; a fix whose edits cross
    a cell boundary keeps no edits (``fix`` still applies it through the joined module)."""
    from dataclasses import replace

    out = []
    for f in findings:
        cell, line, col = _point(joined, numbers, f.line, f.col)
        _, end_line, end_col = _point(joined, numbers, f.end_line, f.end_col)
        fix = f.fix
        if fix is not None and fix.edits:
            edits = edits_in_cells(fix.edits, joined, numbers)
            fix = replace(fix, edits=edits if edits is not None else ())
        out.append(replace(f, cell=cell, line=line, col=col, end_line=end_line, end_col=end_col, fix=fix))
    return out
