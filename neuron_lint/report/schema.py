"""JSON Schema of ``neuron-lint report --format json`` (schema_version 1). README documents it."""

from __future__ import annotations

_COUNT = {"type": "integer", "minimum": 0}
_FAMILIES = {
    "type": "object",
    "required": ["unsupported", "cuda-specific", "numerics", "compile", "cpu-fallback", "cuda-only-package"],
    "additionalProperties": _COUNT,
}
_LEVEL = {
    "type": "object",
    "required": ["findings", "points", "rules"],
    "properties": {"findings": _COUNT, "points": _COUNT, "rules": {"type": "object", "additionalProperties": _COUNT}},
}
_TALLY_PROPS = {
    "findings": _COUNT,
    "safe_fixable": _COUNT,
    "unsafe_fixable": _COUNT,
    "manual": _COUNT,
    "blockers": _COUNT,
    "families": _FAMILIES,
    "effort": {
        "type": "object",
        "required": ["points", "by_level"],
        "properties": {
            "points": _COUNT,
            "by_level": {"type": "object", "required": ["auto", "low", "medium", "high"], "additionalProperties": _LEVEL},
        },
    },
    "verdict": {"enum": ["ready", "fixable", "needs-work", "blocked", "nothing-checked"]},
}
_TALLY = {"type": "object", "required": list(_TALLY_PROPS), "properties": _TALLY_PROPS}


def _with(extra: dict, required: list[str]) -> dict:
    return {"type": "object", "required": list(_TALLY_PROPS) + required, "properties": {**_TALLY_PROPS, **extra}}


SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "neuron-lint migration readiness report",
    "type": "object",
    "required": [
        "schema_version", "tool", "roots", "files_checked", "files_with_findings", "errors", "verdict",
        "verdict_text", "summary", "packages", "directories", "rules", "blockers", "files", "files_total",
    ],
    "properties": {
        "schema_version": {"const": 1},
        "tool": {"type": "object", "required": ["name", "version"]},
        "roots": {"type": "array", "items": {"type": "string"}},
        "files_checked": _COUNT,
        "files_with_findings": _COUNT,
        "errors": {"type": "array", "items": {"type": "object", "required": ["path", "reason"]}},
        "verdict": {"enum": ["ready", "fixable", "needs-work", "blocked", "nothing-checked"]},
        "verdict_text": {"type": "string"},
        "project": {"type": "string"},
        "shares": {"type": "object", "required": ["safe_fixable", "unsafe_fixable", "manual"],
                   "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 100}},
        "summary": _TALLY,
        "family_titles": {"type": "object", "additionalProperties": {"type": "string"}},
        "effort_points": {"type": "object", "additionalProperties": _COUNT},
        "packages": {"type": "array", "items": _with({"name": {"type": "string"}}, ["name"])},
        "directories": {"type": "array", "items": {
            "type": "object", "required": ["path", "findings"],
            "properties": {"path": {"type": "string"}, "findings": _COUNT}}},
        "rules": {"type": "array", "items": {
            "type": "object",
            "required": ["code", "name", "category", "effort", "findings", "safe_fixable", "unsafe_fixable", "manual", "points"],
            "properties": {"code": {"type": "string", "pattern": "^NRN[0-9]{3}$"}, "effort": {"enum": ["auto", "low", "medium", "high"]},
                           "findings": _COUNT, "points": _COUNT}}},
        "blockers": {"type": "array", "items": {
            "type": "object",
            "required": ["path", "line", "column", "code", "category", "effort", "message", "suggestion", "excerpt"],
            "properties": {"line": {"type": "integer", "minimum": 1}, "excerpt": {"type": "array", "items": {
                "type": "object", "required": ["line", "text"]}}}}},
        "files": {"type": "array", "items": _with({"path": {"type": "string"}}, ["path"])},
        "files_total": _COUNT,
        "legacy_xla": {
            "type": "object",
            "required": ["files", "files_checked", "lines", "findings", "safe_fixable", "unsafe_fixable", "manual",
                         "mixed_workload_files", "rules", "needs_a_person"],
            "properties": {
                "files": _COUNT, "files_checked": _COUNT, "lines": _COUNT, "findings": _COUNT, "safe_fixable": _COUNT,
                "unsafe_fixable": _COUNT, "manual": _COUNT, "mixed_workload_files": _COUNT, "imports_pending": _COUNT,
                "rules": {"type": "array", "items": {"type": "object", "required": [
                    "code", "name", "findings", "safe_fixable", "unsafe_fixable", "manual"]}},
                "needs_a_person": {"type": "array", "items": {"type": "object", "required": ["code", "findings", "suggestion"]}},
            },
        },
    },
}
