"""``--output-format sarif``: SARIF 2.1.0 for GitHub code scanning and other SARIF viewers.

The run carries every rule's metadata (name, description, help text, link, category,
confidence), each finding's region and, where neuron-lint can rewrite the code, its fix.
Columns count Unicode code points (``columnKind``), as neuron-lint's do.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TextIO
from urllib.parse import quote

from .. import __version__
from ..catalog.loading import Rule, load_catalog
from ..model import CheckResult, Finding
from . import RenderOptions
from .github import level
from .rule_text import source_lines
from .safe_output import unicode_safe, uri_path

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFO_URI = "https://github.com/neuron-lint/neuron-lint"


def _uri(path: str) -> dict:
    """The file's URI, percent-encoding its bytes as the file system has them (a name that is not
    UTF-8 keeps its exact bytes: ``bad%FF.py``)."""
    p = Path(path)
    if p.is_absolute():
        return {"uri": p.as_uri()}  # as_uri quotes the path's bytes already
    return {"uri": quote(uri_path(p.as_posix())), "uriBaseId": "%SRCROOT%"}


def _rule(rule: Rule) -> dict:
    message = " ".join(rule.message.replace("{name}", "…").split())
    rationale = " ".join(rule.rationale.split())
    suggestion = " ".join(rule.suggestion.split())
    fix = f"Fix: {rule.fix.safety} (`neuron-lint fix`)." if rule.fix else "Fix: none; a person makes the change."
    lang = "" if getattr(rule, "manifest_only", False) else "python"
    sources = source_lines(rule)  # the public pages behind the rule's facts
    help_text = f"{rationale}\n\nWhat to write instead: {suggestion}\n\n{fix}\n\nSources: {' '.join(sources)}"
    help_md = (
        f"**Why it matters on Trainium.** {rationale}\n\n**What to write instead.** {suggestion}\n\n"
        f"**{fix}**\n\n*Sources:* {', '.join(sources)}\n\n```{lang}\n{rule.bad[0].strip()}\n```"
    )
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": message},
        "fullDescription": {"text": rationale},
        "help": {"text": help_text, "markdown": help_md},
        "helpUri": rule.url,
        "defaultConfiguration": {"level": level(rule.category)},
        "properties": {
            "category": rule.category,
            "confidence": rule.confidence,
            "effort": rule.effort,
            "fix": rule.fix.safety if rule.fix else None,
            "tags": ["neuron", "trainium", rule.category],
        },
    }


def _region(line: int, col: int, end_line: int, end_col: int) -> dict:
    return {"startLine": line, "startColumn": col, "endLine": end_line, "endColumn": end_col}


def _cell(cell: int) -> dict:
    """In a notebook, regions count lines within a cell: ``properties.cell`` names it (1-based)."""
    return {"properties": {"cell": cell}} if cell else {}


def _result(f: Finding, index: dict[str, int]) -> dict:
    out: dict = {
        "ruleId": f.code,
        "level": level(f.category),
        "message": {"text": f"{f.message}. {f.suggestion}" if f.suggestion else f.message},
        "locations": [{"physicalLocation": {
            "artifactLocation": _uri(f.path),
            "region": _region(f.line, f.col, f.end_line, f.end_col),
        }, **_cell(f.cell)}],
    }
    if f.code in index:
        out["ruleIndex"] = index[f.code]
    if f.fix is not None and f.fix.edits:
        out["fixes"] = [{
            "description": {"text": f.fix.message or f"{f.fix.applicability} fix for {f.code}"},
            "artifactChanges": [{
                "artifactLocation": _uri(f.path),
                "replacements": [{
                    "deletedRegion": _region(e.line, e.col, e.end_line, e.end_col),
                    "insertedContent": {"text": e.content},
                    **_cell(e.cell),
                } for e in f.fix.edits],
            }],
        }]
        out["properties"] = {"applicability": f.fix.applicability}
    if f.fix_note:  # why no fix is offered (or what the fix leaves)
        out.setdefault("properties", {})["fixNote"] = f.fix_note
    return out


def sarif_log(result: CheckResult) -> dict:
    rules = load_catalog().rules
    index = {r.code: i for i, r in enumerate(rules)}
    notifications = [{
        "level": "error",
        "message": {"text": e.reason},
        "locations": [{"physicalLocation": {
            "artifactLocation": _uri(e.path),
            **({"region": {"startLine": e.line, **({"startColumn": e.col} if e.col else {})}} if e.line else {}),
        }, **_cell(e.cell)}],
    } for e in result.errors]
    root = Path(os.getcwd()).as_uri().rstrip("/") + "/"
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "neuron-lint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFO_URI,
                "rules": [_rule(r) for r in rules],
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": root}},
            "columnKind": "unicodeCodePoints",
            "invocations": [{
                "executionSuccessful": not result.errors,
                "toolExecutionNotifications": notifications,
            }],
            "results": [_result(f, index) for f in result.findings],
        }],
    }


def render(result: CheckResult, out: TextIO, options: RenderOptions) -> None:
    # strict UTF-8: an undecodable byte in a message becomes U+FFFD (URIs keep it, percent-encoded)
    out.write(unicode_safe(json.dumps(sarif_log(result), indent=2, ensure_ascii=False)) + "\n")
