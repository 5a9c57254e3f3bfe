"""One file through the pipeline: read and decode, parse, walk, findings (with planned fixes), noqa.

:func:`check_file` is what the runner (:mod:`neuron_lint.engine.runner`) calls for each file, in this
process or in a worker; :func:`check_source` is the same for text in memory. The public library
API re-exports them (:mod:`neuron_lint.api`).
"""

from __future__ import annotations

import ast
import functools
import os
import traceback
from dataclasses import replace
from pathlib import Path

from .. import checks  # noqa: F401  (registers the rules' own matchers)
from ..catalog.index import build_index
from ..catalog.loading import Catalog, load_catalog
from ..catalog.prefilter import active as active_matches
from ..catalog.registry import MATCHERS
from ..config.settings import Settings
from ..errors import ParseError
from ..fixes import plan_fix
from ..fixes.guard_settle import BLOCKING_FAMILIES
from ..fixes.guard_settle import settle as settle_guards
from ..fixes.kept_tests import TEST_CODES, keep_decided
from ..fixes.plan import PlanContext
from ..io.notebook import (
    NotebookError,
    findings_in_cells,
    is_notebook,
    join_cells,
    parse_notebook,
)
from ..io.positions import LineIndex
from ..io.source import SourceError, decode, read_source_bytes
from ..manifests import check_manifest, manifest_kind
from ..model import CheckResult, FileError, Finding
from ..suppress import noqa
from .analyzer import Analyzer
from .finding_text import finding_text
from .hits import Hit
from .parents import TreeParents
from .parsing import parse
from .recursion import call_deep

__all__ = ["check_source", "check_file", "analyze_source", "read_file", "display_path"]


def analyze_source(
    text: str,
    path: str = "<string>",
    settings: Settings | None = None,
    catalog: Catalog | None = None,
) -> tuple[list[Finding], bool]:
    """Findings for one module's text, and whether its tree was walked (False: prefiltered out).

    Raises :class:`ParseError` when the text is not valid Python.
    """
    settings = settings or Settings()
    catalog = catalog or load_catalog()
    codes = settings.codes_for(path, catalog)
    index = build_index(catalog, _walked(catalog, codes))
    # Always parse, so a syntax error is reported in every file (files no match can fire in are only
    # 1-9% of the bytes of real projects: README "Speed"); walk the tree only when some match can
    # fire, and then do only the work of those that can (prefilter.active).
    tree = parse(text, path)
    # Tokenizing for comments is as slow as the walk: only done up front when a file-level
    # directive may be present (or NRN901 needs every directive); else after the walk, if anything was found.
    directives = noqa.scan(text) if noqa.UNUSED_CODE in codes or noqa.may_exempt_file(text) else None
    if directives is not None and noqa.file_exempt(directives) and noqa.UNUSED_CODE not in codes:
        return [], False  # `# neuron-lint: noqa`: nothing in this file is reported
    if not index.rules:
        return [], False
    active = active_matches(text, index) if settings.prefilter else None
    if settings.prefilter and active is None:
        return [], False
    work = functools.partial(_tree_findings, text, path, settings, catalog, codes, index, directives, active)
    try:
        findings = work(tree)
    except RecursionError:  # a tree deeper than the recursion limit: again, with room for it
        findings = call_deep(work, tree)
    return findings, True


def _walked(catalog: Catalog, codes: frozenset[str]) -> frozenset[str]:
    """The rules the walk looks for: ``codes`` and, when one of them has a fix, every rule whose
    finding in a device guard's decided code keeps the guard (:mod:`neuron_lint.fixes.guards`),
    selected or not, so that ``--select NRN2`` rewrites the same guards as a run of every rule.
    Only ``codes`` are reported."""
    rules = [r for r in catalog.rules if not getattr(r, "manifest_only", False)]
    if not any(r.fix for r in rules if r.code in codes):
        return codes
    extra = frozenset(r.code for r in rules if r.code[:4] in BLOCKING_FAMILIES) - codes
    return codes | extra if extra else codes


def _tree_findings(text, path, settings, catalog, codes, index, directives, active, tree) -> list[Finding]:
    """Walk a parsed module and turn its hits into findings (with fixes), less those under noqa."""
    analyzer = Analyzer(index, MATCHERS, path=path, active=active)
    hits = analyzer.run(tree)
    lines = LineIndex(text)
    ctx = None
    findings: list[Finding] = []
    nodes: list = []  # where each finding was found
    seen: set[tuple] = set()
    for hit in hits:
        span = lines.node_span(hit.node)
        key = (hit.rule.code, span)
        if key in seen:
            continue
        seen.add(key)
        fix = None
        if hit.rule.fix is not None:
            if ctx is None:
                ctx = _Context(text, tree, lines, settings, analyzer.import_bindings, path=path,
                                  flagged=frozenset(id(h.node) for h in hits), _parents=TreeParents(tree),
                                  peers=functools.partial(peer_findings, settings=settings, catalog=catalog))
            fix = plan_fix(ctx, hit)
        findings.append(_finding(hit, span, path, fix, ctx))
        nodes.append(hit.node)
    walked_only = {id(f) for f in findings if f.code not in codes}  # rules walked only for the guards
    if ctx is not None:  # a device guard keeps its fix only with everything it decides
        # (what an unselected rule found is not fixed in this run: it keeps the guard), and what a
        # CUDA test that stays decides stays with it
        planned = [replace(f, fix=None) if f.code not in codes else f
                   for f in keep_decided(ctx, findings, nodes, walked_only)]
        findings = _keep_what_settled_tests_decide(ctx, planned, settle_guards(planned), nodes, codes)
    if walked_only:
        findings = [f for f in findings if f.code in codes]
    if findings or directives is not None:  # nothing found and no NRN901: nothing to filter
        findings = noqa.filter_findings(findings, text, path, codes, catalog, directives)
    findings.sort(key=lambda f: f.sort_key)
    if settings.fix_edits and any(f.fix is not None and f.fix.fixer for f in findings):
        # LibCST: only for files whose fixes must be spelled out
        from ..fixes.first_party import current_file
        from ..fixes.line_length import current_line_length, line_length_of
        from ..fixes.passes import advertised
        from ..fixes.rewrite import forget, with_edits

        # Each fix's own edits, then less the fixes `fix` would drop (a line grown past the
        # project's line length, a result that does not parse), so that check offers what fix does.
        # Both work on one LibCST parse of the text, let go of afterwards.
        limit = line_length_of(os.path.dirname(os.path.abspath(path)))
        with current_line_length(limit), current_file(path):
            findings = advertised(text, with_edits(text, findings, settings), settings, path, limit)
        forget()
    return findings


def file_context(path) -> str:
    """What a file's result depends on besides its bytes and the settings, for the cache's key: the
    line length of its project (``pyproject.toml``, ``ruff.toml``, ``setup.cfg``...), which decides
    which fixes are offered and what their edits are (a fix that would grow a line past it is not)."""
    from ..fixes.line_length import line_length_of

    try:
        return f"line-length={line_length_of(os.path.dirname(os.path.abspath(path)))}"
    except (OSError, ValueError):
        return ""


#: Modules whose findings :func:`peer_findings` is working out (an import cycle asks no further).
_PEERS_UNDER_WAY: set[str] = set()
_PEERS: dict[tuple, list | None] = {}


def peer_findings(path: str, settings: Settings, catalog: Catalog) -> list[Finding] | None:
    """What ``check`` reports in another module (by its path), fixes planned, for a fix that must agree
    with that module's; None when it cannot be read or parsed, or is being worked out already. Kept
    per version of the file."""
    key = os.path.abspath(path)
    try:
        st = os.stat(key)
    except OSError:
        return None
    version = (key, st.st_mtime_ns, st.st_size, settings)
    if version not in _PEERS:
        if key in _PEERS_UNDER_WAY:
            return None
        _PEERS_UNDER_WAY.add(key)
        try:
            result = check_file(key, replace(settings, fix_edits=False), catalog)
        finally:
            _PEERS_UNDER_WAY.discard(key)
        if len(_PEERS) > 256:
            _PEERS.clear()
        _PEERS[version] = None if result.errors else list(result.findings)
    return _PEERS[version]


class _Context(PlanContext):
    """:class:`PlanContext` with its whole-module scans done in one loop each (same answers)."""

    @functools.cached_property
    def bound(self) -> dict[str, int]:
        return bound_names(self.tree)


def bound_names(tree: ast.AST) -> dict[str, int]:
    """``fixes.plan.bound_names`` (how many times each name is bound in the module), without ast.walk."""
    counts: dict[str, int] = {}
    get = counts.get
    fields_of: dict[type, tuple[str, ...]] = {}
    AST, Name, Store, Del, arg = ast.AST, ast.Name, ast.Store, ast.Del, ast.arg
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    imports, declarations = (ast.Import, ast.ImportFrom), (ast.Global, ast.Nonlocal)
    todo = [tree]
    for node in todo:
        cls = node.__class__
        if cls is Name:
            if node.ctx.__class__ is Store or node.ctx.__class__ is Del:  # type: ignore[attr-defined]
                counts[node.id] = get(node.id, 0) + 1  # type: ignore[attr-defined]
            continue  # a Name holds no other name
        if cls is arg:
            counts[node.arg] = get(node.arg, 0) + 1  # type: ignore[attr-defined]
        elif cls in defs:
            counts[node.name] = get(node.name, 0) + 1  # type: ignore[attr-defined]
        elif cls in imports:
            for a in node.names:  # type: ignore[attr-defined]
                key = a.asname or a.name.split(".")[0]
                counts[key] = get(key, 0) + 1
        elif cls in declarations:
            for n in node.names:  # type: ignore[attr-defined]
                counts[n] = get(n, 0) + 1
        fields = fields_of.get(cls)
        if fields is None:
            fields = fields_of[cls] = tuple(f for f in cls._fields if f not in ("ctx", "op", "ops"))
        for name in fields:
            value = getattr(node, name, None)
            if isinstance(value, AST):
                todo.append(value)
            elif isinstance(value, list):
                todo.extend(item for item in value if isinstance(item, AST))
    return counts




def _finding(hit: Hit, span, path: str, fix, ctx) -> Finding:
    rule, m = hit.rule, hit.match
    message, suggestion = finding_text(rule, m, hit.subject)
    note = ctx.notes.get(id(hit), "") if ctx is not None else ""
    return Finding(
        path=path, line=span[0], col=span[1], end_line=span[2], end_col=span[3],
        code=rule.code, name=rule.name, category=rule.category,
        message=message, suggestion=suggestion, url=rule.url, fix=fix, fix_note=note,
    )


def check_source(
    text: str,
    path: str = "<string>",
    settings: Settings | None = None,
    catalog: Catalog | None = None,
) -> list[Finding]:
    """Findings for one module's text. Raises :class:`ParseError` on invalid Python."""
    return analyze_source(text, path, settings, catalog)[0]


def display_path(path: Path | str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return str(path)
    return str(path) if rel.startswith("..") else rel


def read_file(path: Path | str, settings: Settings) -> bytes | FileError:
    """The bytes of a source file (a regular file under the size limit), or the error to report."""
    shown = display_path(path)
    try:
        return read_source_bytes(path, settings.max_file_bytes)
    except SourceError as exc:
        return FileError(shown, str(exc))
    except FileNotFoundError:
        reason = "is a broken symbolic link" if os.path.islink(path) else "vanished before it could be read"
        return FileError(shown, reason)
    except IsADirectoryError:
        return FileError(shown, "is a directory")
    except OSError as exc:
        return FileError(shown, f"cannot be read: {exc.strerror or exc}")


def check_file(path: Path | str, settings: Settings | None = None, catalog: Catalog | None = None,
               data: bytes | FileError | None = None) -> CheckResult:
    """Check one file. Problems reading or parsing it become a :class:`FileError`, never an exception.

    ``data``: what :func:`read_file` gave for it, when the caller has read it already (the cache key
    and the findings then describe the same bytes).
    """
    settings = settings or Settings()
    shown = display_path(path)
    kind = manifest_kind(path)
    given = data if isinstance(data, bytes) else None
    if kind is not None and kind != "setup.py":  # requirements, pyproject, setup.cfg, environment.yml
        return check_manifest(path, settings, catalog, shown, data=given)
    result = CheckResult()
    if data is None:
        data = read_file(path, settings)
    if isinstance(data, FileError):
        result.errors.append(data)
        return result
    try:
        if is_notebook(shown):
            return _check_notebook(data, shown, settings, catalog)
        source = decode(data)
        findings, parsed = analyze_source(source.text, shown, settings, catalog)
    except SourceError as exc:
        result.errors.append(FileError(shown, str(exc)))
        return result
    except ParseError as exc:
        result.errors.append(FileError(shown, str(exc), exc.line, exc.col))
        return result
    except (RecursionError, MemoryError) as exc:  # one pathological file never ends the scan
        result.errors.append(FileError(shown, f"too complex to analyze ({type(exc).__name__})"))
        return result
    except Exception as exc:  # a bug of ours: name it and the file, and check the others
        result.errors.append(FileError(shown, f"internal error: {type(exc).__name__}: {exc} (please report this file)",
                                       detail=traceback.format_exc()))
        return result
    result.findings.extend(findings)
    result.files_checked = 1
    result.files_skipped = 0 if parsed else 1
    if kind == "setup.py":  # Python, and a manifest too
        result.extend(check_manifest(path, settings, catalog, shown, data=given))
    return result


def _check_notebook(data: bytes, shown: str, settings: Settings, catalog: Catalog | None) -> CheckResult:
    """A notebook's code cells, checked as one module; findings and errors located in their cells."""
    result = CheckResult()
    try:
        nb = parse_notebook(data)
    except NotebookError as exc:
        result.errors.append(FileError(shown, str(exc)))
        return result
    if not nb.is_python:
        result.warnings.append(FileError(shown, f"a notebook in {nb.language}, not Python; skipped"))
        return result
    cells = nb.code_cells
    numbers = [c.number for c in cells]
    joined = join_cells([c.source for c in cells])
    try:
        findings, parsed = analyze_source(joined.text, shown, settings, catalog)
    except ParseError as exc:
        if exc.line is None or not cells:
            result.errors.append(FileError(shown, str(exc)))
        else:
            i, line = joined.locate(exc.line)
            result.errors.append(FileError(shown, str(exc), line, exc.col, cell=numbers[i]))
        return result
    result.findings.extend(findings_in_cells(findings, joined, numbers))
    result.files_checked = 1
    result.files_skipped = 0 if parsed else 1
    return result


def _keep_what_settled_tests_decide(ctx, planned: list, findings: list, nodes: list, codes) -> list:
    """A test that settling kept because something it guards has no fix at all (EasyNMT's
    ``"cuda:{}".format(i)`` under its ``torch.cuda.is_available()``, read set 72) keeps the rest of
    what it decides too (its GPU count), as the tests kept while planning do. A test kept only
    because a fix under it is unsafe and it is safe is no such test: with ``--unsafe-fixes`` the
    two go together. ``planned``: the findings before settling, ``findings``: after. Settled again
    when that drops a fix."""
    if not any(p.fix is not None and f.fix is None and f.code in TEST_CODES
               for p, f in zip(planned, findings)):
        return findings  # settling kept no CUDA test (most files): nothing more to do
    # what settling gives when every fix counts as unsafe: the tests it keeps then stay whatever the run
    unsafe = [replace(f, fix=replace(f.fix, applicability="unsafe")) if f.fix is not None else f for f in planned]
    lasting = settle_guards(unsafe)
    view = [f if f.fix is not None or g.fix is None else g for f, g in zip(findings, lasting)]
    again = keep_decided(ctx, view, nodes, {id(f) for f in view if f.code not in codes})
    if all(a is b for a, b in zip(again, view)):
        return findings
    return settle_guards([f if a is v else a for f, a, v in zip(findings, again, view)])

