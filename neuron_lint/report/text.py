"""Small wording helpers shared by the report renderers."""

from __future__ import annotations

FIX_WORDS = {
    "safe_fixable": "fixed by `neuron-lint fix`",
    "unsafe_fixable": "fixed with `--unsafe-fixes` (review the diff)",
    "manual": "need a person",
}

LEVEL_WORDS = {
    "auto": "auto (a safe fix)",
    "low": "low (a line or two)",
    "medium": "medium (a function or a dependency)",
    "high": "high (a kernel or subsystem rewrite)",
}


def rules_text(rules: dict[str, int]) -> str:
    return ", ".join(f"{code}×{n}" for code, n in sorted(rules.items(), key=lambda kv: (-kv[1], kv[0])))


def file_rules(row: dict) -> dict[str, int]:
    out: dict[str, int] = {}
    for level in row["effort"]["by_level"].values():
        for code, n in level["rules"].items():
            out[code] = out.get(code, 0) + n
    return out
