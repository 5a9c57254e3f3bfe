"""Rules with ``manifest = [...]`` matches, fired on a manifest's entries."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path
from typing import Iterable

from ..catalog.loading import Catalog, Match, Rule, load_catalog
from ..config.settings import Settings
from ..engine.finding_text import finding_text
from ..model import CheckResult, FileError, Finding
from .entries import Entry, normalize, tomllib
from .kinds import manifest_kind, scan_text
from .suppression import suppressed


def pattern_matches(pattern: str, entry: Entry) -> bool:
    if pattern.startswith("url:"):
        return bool(entry.url) and fnmatch.fnmatchcase(entry.url.lower(), pattern[4:].lower())
    if entry.kind != "requirement" or not entry.name:
        return False
    name, plus, local = pattern.partition("+")
    if not fnmatch.fnmatchcase(entry.name, normalize(name) if not any(c in name for c in "*?[") else name.lower()):
        return False
    return not plus or (bool(entry.local) and fnmatch.fnmatchcase(entry.local.lower(), local.lower()))


def manifest_rules(catalog: Catalog, codes: Iterable[str]) -> list[Rule]:
    wanted = set(codes)
    return [r for r in catalog.rules if r.code in wanted and any(m.kind == "manifest" for m in r.matches)]


def _first_match(rule: Rule, entry: Entry) -> Match | None:
    for m in rule.matches:
        if m.kind == "manifest" and any(pattern_matches(p, entry) for p in m.patterns):
            return m
    return None


def _by_url(m: Match, entry: Entry) -> bool:
    """Did only a ``url:`` pattern of this match select the entry?"""
    return not any(pattern_matches(p, entry) for p in m.patterns if not p.startswith("url:"))


def findings_for(entries: list[Entry], text: str, path: str, rules: list[Rule]) -> list[Finding]:
    lines = text.splitlines()
    out: list[Finding] = []
    seen: set[tuple] = set()
    for entry in entries:
        matched = [(rule, m) for rule in rules if (m := _first_match(rule, entry)) is not None]
        if any(not _by_url(m, entry) for _, m in matched):
            # `xformers @ https://download.pytorch.org/whl/cu121/...`: the package's own finding says
            # it all; the CUDA index in its URL is not a second finding on the same line
            matched = [(rule, m) for rule, m in matched if not _by_url(m, entry)]
        for rule, m in matched:
            line_text = lines[entry.line - 1] if 0 < entry.line <= len(lines) else ""
            key = (rule.code, entry.line, entry.col)
            if key in seen or suppressed(line_text, rule.code):
                continue
            seen.add(key)
            subject = entry.text if len(entry.text) <= 80 else entry.text[:77] + "..."
            message, suggestion = finding_text(rule, m, subject)
            out.append(Finding(
                path=path, line=entry.line, col=entry.col, end_line=entry.line, end_col=entry.end_col,
                code=rule.code, name=rule.name, category=rule.category,
                message=message, suggestion=suggestion, url=rule.url,
            ))
    out.sort(key=lambda f: f.sort_key)
    return out


def check_manifest_text(text: str, kind: str, path: str = "requirements.txt", settings: Settings | None = None,
                        catalog: Catalog | None = None) -> list[Finding]:
    """Findings for a manifest's text. Raises ValueError (bad TOML) or SyntaxError (bad setup.py)."""
    settings = settings or Settings()
    catalog = catalog or load_catalog()
    rules = manifest_rules(catalog, settings.codes_for(path, catalog))
    if not rules:
        return []
    return findings_for(scan_text(text, kind), text, path, rules)


def check_manifest(path: Path | str, settings: Settings | None = None, catalog: Catalog | None = None,
                   shown: str | None = None, data: bytes | None = None) -> CheckResult:
    """Check one manifest file. Unreadable files become a :class:`FileError`, never an exception.

    ``setup.py`` is also Python: its syntax errors are reported by the Python check, and it is
    counted there, so here it counts as no extra file. ``data``: its bytes, when already read
    (standard input).
    """
    from ..io.source import SourceError, decode, read_source_bytes

    kind = manifest_kind(path)
    shown = shown if shown is not None else os.fspath(path)
    result = CheckResult()
    if kind is None:
        return result
    try:
        if data is None:
            data = read_source_bytes(path, settings.max_file_bytes if settings else Settings().max_file_bytes)
    except (OSError, SourceError) as exc:  # a pipe, device or huge file is never read
        if kind != "setup.py":
            reason = f"cannot be read: {exc.strerror or exc}" if isinstance(exc, OSError) else str(exc)
            result.errors.append(FileError(shown, reason))
        return result
    try:
        text = decode(data).text if kind == "setup.py" else data.decode("utf-8-sig")
    except (SourceError, UnicodeDecodeError):
        if kind != "setup.py":
            result.errors.append(FileError(shown, "is not UTF-8 text"))
        return result
    try:
        result.findings.extend(check_manifest_text(text, kind, shown, settings, catalog))
    except tomllib.TOMLDecodeError as exc:
        result.errors.append(FileError(shown, f"not valid TOML: {exc}"))
    except (SyntaxError, ValueError, RecursionError):
        pass  # setup.py: the Python check reports it
    if kind != "setup.py":
        result.files_checked = 1
    return result
