"""The numbers behind ``neuron-lint report``, computed from a :class:`CheckResult` and the catalog.

Nothing here reads code or runs rules: the report counts exactly the findings ``check`` returns
for the same paths and settings. Every renderer (terminal, markdown, html, json) draws from the
plain dictionary :func:`build_report` returns, whose shape is ``schema.SCHEMA``.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterable

from .. import __version__
from ..catalog.loading import FAMILIES, FAMILY_TITLES, Catalog, load_catalog
from ..model import CheckResult, Finding
from .legacy import legacy_section
from .project import package_of, project_name, shares

#: Effort level -> points, so that levels can be summed. Documented in README.
EFFORT_POINTS = {"auto": 0, "low": 1, "medium": 3, "high": 8}
EFFORT_LEVELS = tuple(EFFORT_POINTS)

#: Report families, in the catalog's order (NRN9xx, neuron-lint's own checks, are not readiness).
FAMILY_ORDER = tuple(c for c in FAMILIES.values() if c != "meta")

VERDICTS = {
    "ready": "Ready: nothing to change",
    "fixable": "Fixable: `neuron-lint fix` resolves every finding",
    "needs-work": "Needs work: manual changes, but nothing blocks the port",
    "blocked": "Blocked: some code cannot run on Trainium until it is rewritten",
    "nothing-checked": "Nothing checked: no Python file, notebook or manifest was found under the given paths",
}
#: A "ready" verdict when some files could not be checked says so (it is only ready as far as it could see).
READY_WITH_ERRORS = "Ready as far as it could see: nothing to change in the files checked, but {n} could not be checked"

EXCERPT_CONTEXT = 1  # lines before and after a blocker's line


def fixability(f: Finding) -> str:
    """``safe``, ``unsafe`` (needs ``--unsafe-fixes``) or ``manual``."""
    if f.fix is not None and f.fix.applicability in ("safe", "unsafe"):
        return f.fix.applicability
    return "manual"


def effort_of(f: Finding, catalog: Catalog) -> str:
    """The catalog's effort for the finding's rule; a finding with a safe fix costs nothing."""
    if fixability(f) == "safe":
        return "auto"
    rule = catalog.get(f.code)
    effort = rule.effort if rule is not None else "medium"
    return "low" if effort == "auto" else effort  # an 'auto' rule whose fix was not offered here


def is_blocker(f: Finding, effort: str) -> bool:
    """A finding a person must resolve before the code runs on Trainium at all.

    Anything of high effort, and unsupported APIs (NRN1xx) or CUDA-only packages (NRN6xx) above
    low effort, unless ``fix`` resolves it. A low-effort change (a line or two) never blocks.
    """
    if fixability(f) != "manual" or effort in ("auto", "low"):
        return False
    return effort == "high" or f.category in ("unsupported", "cuda-only-package")


def verdict(counts: dict) -> str:
    if counts["findings"] == 0:
        return "ready"
    if counts["blockers"]:
        return "blocked"
    if counts["manual"] == 0:
        return "fixable"
    return "needs-work"


def _relative(path: str, roots: list[str]) -> str:
    """``path`` relative to the scanned root that contains it (posix separators)."""
    absolute = os.path.abspath(path)
    best = None
    for root in roots:
        base = os.path.abspath(root)
        if os.path.isfile(base):
            base = os.path.dirname(base)
        if absolute == base or absolute.startswith(base.rstrip(os.sep) + os.sep):
            if best is None or len(base) > len(best):
                best = base
    rel = os.path.relpath(absolute, best) if best else path
    return Path(rel).as_posix()


def directory_of(rel: str) -> str:
    parent = rel.rpartition("/")[0]
    return parent or "."


class _Tally:
    """Counts for one scope (repository, package, file)."""

    def __init__(self) -> None:
        self.findings = 0
        self.fix = Counter()
        self.effort = Counter()
        self.blockers = 0
        self.families = Counter()
        self.rules: dict[str, Counter] = defaultdict(Counter)  # effort -> rule code -> count

    def add(self, f: Finding, effort: str, blocker: bool) -> None:
        self.findings += 1
        self.fix[fixability(f)] += 1
        self.effort[effort] += 1
        self.blockers += blocker
        self.families[f.category] += 1
        self.rules[effort][f.code] += 1

    def to_dict(self) -> dict:
        counts = {
            "findings": self.findings,
            "safe_fixable": self.fix["safe"],
            "unsafe_fixable": self.fix["unsafe"],
            "manual": self.fix["manual"],
            "blockers": self.blockers,
        }
        return {
            **counts,
            "families": {fam: self.families[fam] for fam in FAMILY_ORDER},
            "effort": {
                "points": sum(EFFORT_POINTS[e] * n for e, n in self.effort.items()),
                "by_level": {
                    level: {"findings": self.effort[level], "points": EFFORT_POINTS[level] * self.effort[level],
                            "rules": dict(sorted(self.rules[level].items()))}
                    for level in EFFORT_LEVELS
                },
            },
            "verdict": verdict(counts),
        }


def _excerpt(path: str, line: int, cache: dict, cell: int = 0) -> list[dict]:
    from ..io.excerpts import source_lines

    lines = source_lines(path, cell, cache) or []  # unreadable now: the finding stands without its excerpt
    lo, hi = max(1, line - EXCERPT_CONTEXT), min(len(lines), line + EXCERPT_CONTEXT)
    return [{"line": n, "text": lines[n - 1][:400]} for n in range(lo, hi + 1)]


def build_report(
    result: CheckResult,
    roots: Iterable[str] = (".",),
    catalog: Catalog | None = None,
    files: Iterable[str] | None = None,
    top_files: int = 10,
) -> dict:
    """The report as plain data (see ``schema.SCHEMA``).

    ``files``: every file that was checked (to show packages with nothing to change);
    ``top_files``: how many of the files needing most work to list.
    """
    catalog = catalog or load_catalog()
    roots = list(roots) or ["."]
    findings = [f for f in result.findings if f.category in FAMILY_ORDER]
    repo = _Tally()
    packages: dict[str, _Tally] = defaultdict(_Tally)
    per_file: dict[str, _Tally] = defaultdict(_Tally)
    directories: Counter = Counter()
    rules: dict[str, dict] = {}
    blockers: list[dict] = []
    excerpts: dict = {}
    for rel in (_relative(p, roots) for p in (files or ())):
        packages[package_of(rel)]  # noqa: B018 - create the entry
    for f in findings:
        rel = _relative(f.path, roots)
        effort = effort_of(f, catalog)
        blocker = is_blocker(f, effort)
        for tally in (repo, packages[package_of(rel)], per_file[f.path]):
            tally.add(f, effort, blocker)
        directories[directory_of(rel)] += 1
        rule = catalog.get(f.code)
        entry = rules.setdefault(f.code, {
            "code": f.code, "name": f.name, "category": f.category,
            "effort": rule.effort if rule else effort, "confidence": rule.confidence if rule else "",
            "findings": 0, "safe_fixable": 0, "unsafe_fixable": 0, "manual": 0, "points": 0, "url": f.url,
        })
        entry["findings"] += 1
        entry[{"safe": "safe_fixable", "unsafe": "unsafe_fixable"}.get(fixability(f), "manual")] += 1
        entry["points"] += EFFORT_POINTS[effort]
        if blocker:
            blockers.append({
                "path": f.path, "line": f.line, "column": f.col, "code": f.code, "name": f.name,
                "category": f.category, "effort": effort, "message": f.message, "suggestion": f.suggestion,
                "excerpt": _excerpt(f.path, f.line, excerpts, f.cell), **({"cell": f.cell} if f.cell else {}),
            })
    effort_rank = {"high": 0, "medium": 1, "low": 2, "auto": 3}
    blockers.sort(key=lambda b: (effort_rank[b["effort"]], b["path"], b["line"], b["column"], b["code"]))
    file_rows = [{"path": path, **t.to_dict()} for path, t in per_file.items()]
    file_rows.sort(key=lambda r: (-r["effort"]["points"], -r["findings"], r["path"]))
    repo_dict = repo.to_dict()
    if result.files_checked == 0 and not findings:  # an empty, ignored or missing path is never "ready"
        repo_dict["verdict"] = "nothing-checked"
    verdict_text = VERDICTS[repo_dict["verdict"]]
    if repo_dict["verdict"] == "ready" and result.errors:
        verdict_text = READY_WITH_ERRORS.format(n=len(result.errors))
    return {
        "schema_version": 1,
        "tool": {"name": "neuron-lint", "version": __version__},
        "project": project_name(roots),
        "roots": roots,
        "files_checked": result.files_checked,
        "files_with_findings": len(per_file),
        "errors": [{"path": e.path, "line": e.line, "reason": e.reason} for e in result.errors],
        "verdict": repo_dict["verdict"],
        "verdict_text": verdict_text,
        "summary": repo_dict,
        "shares": shares({k: repo_dict[k] for k in ("safe_fixable", "unsafe_fixable", "manual")}),
        "family_titles": {fam: FAMILY_TITLES[fam] for fam in FAMILY_ORDER},
        "effort_points": dict(EFFORT_POINTS),
        "packages": [{"name": name, **t.to_dict()} for name, t in sorted(packages.items(), key=lambda kv: (
            -kv[1].blockers, -kv[1].to_dict()["effort"]["points"], kv[0]))],
        "directories": [{"path": d, "findings": n} for d, n in sorted(directories.items(), key=lambda kv: (-kv[1], kv[0]))],
        "rules": sorted(rules.values(), key=lambda r: (-r["points"], -r["findings"], r["code"])),
        "blockers": blockers,
        "files": file_rows[:top_files],
        "files_total": len(file_rows),
        "legacy_xla": legacy_section(findings, result.files_checked, catalog, fixability),
    }
