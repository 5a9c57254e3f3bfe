"""``neuron-lint check --add-noqa``: write a ``# noqa: CODES`` for every current finding.

A large repository can adopt neuron-lint today: existing findings are silenced where they are,
new ones are reported. Codes are appended to a ``# noqa`` already on the line; a line's other
comments are kept. Running it twice changes nothing the second time. Files are rewritten
atomically, keeping their encoding, BOM, line endings and permissions.
"""

from __future__ import annotations

import bisect
import io
import os
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from ..catalog.loading import Catalog, load_catalog
from ..config.settings import Settings
from ..io.discovery import PY_SUFFIXES
from ..io.notebook import (
    NotebookError,
    changed_cells,
    is_notebook,
    join_cells,
    parse_notebook,
    write_cells,
)
from ..io.source import SourceError, decode, encode
from ..manifests import manifest_kind
from ..manifests.add_noqa import KINDS as MANIFEST_KINDS
from ..manifests.add_noqa import ManifestNoqaError, add_noqa_to_manifest
from ..model import FileError, Finding
from .noqa import UNUSED_CODE, Directives, _suppressor, scan

_LINE_WITH_END = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


@dataclass
class AddNoqaResult:
    added: int = 0  # directives written or extended
    files: list[str] = field(default_factory=list)  # files changed
    errors: list[FileError] = field(default_factory=list)


_NEWLINES = re.compile(r"\r\n|\r")
#: Tokens a ``# noqa`` appended at the end of a line cannot change (NEWLINE moves, its text stays).
_LAYOUT = frozenset({tokenize.COMMENT, tokenize.NL})


class NoqaPlacementError(ValueError):
    """No ``# noqa`` can be written safely for a finding (the file is left alone)."""


def _tokens(text: str) -> list[tokenize.TokenInfo]:
    """The tokens of ``text`` as Python reads it (``\\r\\n`` and ``\\r`` end lines, as for the compiler)."""
    normal = _NEWLINES.sub("\n", text)
    try:
        return list(tokenize.generate_tokens(io.StringIO(normal).readline))
    except (tokenize.TokenError, SyntaxError) as exc:
        raise NoqaPlacementError(f"cannot be tokenized ({exc})") from None


def comment_lines(tokens: list[tokenize.TokenInfo]) -> list[int]:
    """The lines (sorted) whose end is outside every string and not a ``\\`` continuation.

    Only there can a comment go: Python ends each such line with a NEWLINE or NL token, and no
    other (a line inside a multi-line string, or continued with a backslash, has neither).
    """
    return sorted({t.start[0] for t in tokens if t.type in (tokenize.NEWLINE, tokenize.NL)})


def _signature(tokens: list[tokenize.TokenInfo]) -> list[tuple]:
    """What a comment at a line's end may not change: every token but comments and blank-line ends."""
    return [(t.type, t.string, t.start[0] if t.type == tokenize.NEWLINE else t.start)
            for t in tokens if t.type not in _LAYOUT]


def add_noqa_to_text(text: str, findings: list[Finding], directives: Directives | None = None) -> tuple[str, int]:
    """``text`` with suppressions for ``findings``, and how many lines got one.

    Each ``# noqa`` goes at the end of the first line, from the finding's, where a comment can
    end a line: past a multi-line string and past ``\\`` continuations, never inside a string.
    The result is checked before it is returned: its tokens (comments aside) are the original's,
    and a scan of it finds every finding suppressed, so a second run changes nothing. When that
    cannot be done, :class:`NoqaPlacementError` says why and nothing is changed.
    """
    directives = directives if directives is not None else scan(text)
    # NRN901 is fixed by removing a code, not by another noqa
    todo = [f for f in findings if f.code != UNUSED_CODE and f.line >= 1]
    if not todo:
        return text, 0
    tokens = _tokens(text)
    safe = comment_lines(tokens)
    wanted: dict[int, list[str]] = {}
    for f in todo:
        if _suppressor(f, directives) is not None:
            continue  # already silenced (a directive where the string or continued line ends)
        i = bisect.bisect_left(safe, f.line)
        if i == len(safe):
            raise NoqaPlacementError(f"no line at or after line {f.line} can hold a comment")
        codes = wanted.setdefault(safe[i], [])
        if f.code not in codes:
            codes.append(f.code)
    if not wanted:
        return text, 0
    lines = _LINE_WITH_END.findall(text)
    changed = 0
    for n, codes in sorted(wanted.items()):
        if not 1 <= n <= len(lines):
            continue
        raw = lines[n - 1]
        body = raw.rstrip("\r\n")
        ending = raw[len(body):]
        existing = directives.lines.get(n)
        if existing is not None:
            if existing.codes is None:
                continue  # a bare noqa already silences everything on this line
            missing = [c for c in sorted(codes) if c not in existing.codes]
            if not missing:
                continue
            at = existing.code_spans[-1][1]
            body = body[:at] + "".join(f", {c}" for c in missing) + body[at:]
        else:
            body = body.rstrip(" \t\f") + f"  # noqa: {', '.join(sorted(codes))}"
        lines[n - 1] = body + ending
        changed += 1
    new_text = "".join(lines)
    if _signature(_tokens(new_text)) != _signature(tokens):
        raise NoqaPlacementError("a comment would change the code; left alone")
    after = scan(new_text)
    if any(_suppressor(f, after) is None for f in todo):
        raise NoqaPlacementError("a comment here would not be read as a suppression; left alone")
    return new_text, changed


def write_atomic(path: Path, data: bytes, original: bytes | None = None, st: os.stat_result | None = None) -> None:
    """Replace a file's bytes in one step the way ``fix`` does (see :func:`neuron_lint.io.atomic_write.atomic_write`):
    mode kept, symlinks written through, signal-safe, refused if the file is not ``original`` any more."""
    from ..io.atomic_write import atomic_write

    if st is None or original is None:
        st = os.stat(path)
        original = Path(path).read_bytes()
    atomic_write(str(path), data, original, st)


def add_noqa(paths: list[str], settings: Settings, catalog: Catalog | None = None) -> AddNoqaResult:
    """Add suppressions for every finding in the files under ``paths``."""
    from ..config.per_file import settings_for
    from ..engine.pipeline import analyze_source
    from ..engine.runner import check_paths
    from ..errors import ParseError
    from ..io.atomic_write import FileChanged, ReadOnly

    catalog = catalog or load_catalog()
    result = AddNoqaResult()
    checked = check_paths(paths, settings, catalog)
    result.errors.extend(checked.errors)
    for shown in sorted({f.path for f in checked.findings if f.code != UNUSED_CODE}):
        path = Path(shown)
        kind = manifest_kind(shown) if not shown.endswith(PY_SUFFIXES) else None
        if not shown.endswith(PY_SUFFIXES) and not is_notebook(shown) and kind not in MANIFEST_KINDS:
            continue  # setup.cfg: silence it with per-file-ignores instead

        own = settings_for(settings, path)  # the file's own configuration
        try:
            st = os.stat(path)
            original = path.read_bytes()
            if kind is not None:
                data, n = _noqa_manifest(original, kind, shown, own, catalog)
            elif is_notebook(shown):
                data, n = _noqa_notebook(original, shown, own, catalog)
            else:
                source = decode(original)
                # analyse again: the file is written from exactly the text its findings came from
                findings, _ = analyze_source(source.text, shown, own, catalog)
                new_text, n = add_noqa_to_text(source.text, findings)
                data = encode(source, new_text)
            if n:
                write_atomic(path, data, original, st)
        except FileChanged:
            result.errors.append(FileError(shown, "changed on disk while noqa comments were being added; left alone"))
            continue
        except ReadOnly:
            result.errors.append(FileError(shown, "is read-only, or not writable by this user; left alone"))
            continue
        except (NoqaPlacementError, ManifestNoqaError) as exc:
            result.errors.append(FileError(shown, f"cannot add noqa: {exc}"))
            continue
        except (OSError, SourceError, ParseError, NotebookError) as exc:
            result.errors.append(FileError(shown, f"cannot add noqa: {getattr(exc, 'strerror', None) or exc}"))
            continue
        if n:
            result.added += n
            result.files.append(shown)
    return result


def _noqa_manifest(original: bytes, kind: str, shown: str, settings: Settings, catalog: Catalog) -> tuple[bytes, int]:
    """A requirements file, pyproject.toml or environment.yml with a ``# noqa`` on each line with findings."""
    bom = original.startswith(b"\xef\xbb\xbf")
    try:
        text = original.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SourceError("is not UTF-8 text") from None
    new_text, n = add_noqa_to_manifest(text, kind, shown, settings, catalog)
    return (b"\xef\xbb\xbf" if bom else b"") + new_text.encode("utf-8"), n


def _noqa_notebook(original: bytes, shown: str, settings: Settings, catalog: Catalog) -> tuple[bytes, int]:
    """A notebook with a ``# noqa`` for every finding, written into the cells' sources."""
    from ..engine.pipeline import analyze_source

    nb = parse_notebook(original)
    cells = nb.code_cells
    joined = join_cells([c.source for c in cells])
    findings, _ = analyze_source(joined.text, shown, settings, catalog)
    new_text, n = add_noqa_to_text(joined.text, findings)
    if not n:
        return original, 0
    sources = joined.split(new_text)
    if sources is None:
        raise NoqaPlacementError("a comment would land on a cell boundary or a magic; left alone")
    return write_cells(nb, changed_cells(nb, sources), original), n
