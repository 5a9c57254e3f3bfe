"""The report's legacy-XLA section: how much of a repository is on the PyTorch/XLA path.

Counts the NRN7xx findings (and NRN110, a module mixing torch_xla with the native device): the
files and lines on the XLA path, how many of those findings ``neuron-lint fix`` rewrites (safe,
or with ``--unsafe-fixes``), and, per rule, what is left for a person. The section is
``report["legacy_xla"]``; it is empty (``files == 0``) for a repository that never used XLA.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from ..catalog.loading import Catalog
from ..model import Finding


def is_legacy(f: Finding) -> bool:
    return f.code.startswith("NRN7") or f.code == "NRN110"


def legacy_section(findings: list[Finding], files_checked: int, catalog: Catalog, fixability) -> dict:
    legacy = [f for f in findings if is_legacy(f)]
    files = {f.path for f in legacy}
    lines = {(f.path, f.line) for f in legacy}
    fix = Counter(fixability(f) for f in legacy)
    # an import still used at check time: `fix` removes it once the uses it serves are rewritten
    pending = sum(1 for f in legacy if f.code == "NRN701" and f.fix is None and "not removed yet" in f.fix_note)
    per_rule: dict[str, Counter] = defaultdict(Counter)
    for f in legacy:
        per_rule[f.code][fixability(f)] += 1
    rules = []
    for code, counts in per_rule.items():
        rule = catalog.get(code)
        rules.append({
            "code": code, "name": rule.name if rule else "", "confidence": rule.confidence if rule else "",
            "findings": sum(counts.values()), "safe_fixable": counts["safe"], "unsafe_fixable": counts["unsafe"],
            "manual": counts["manual"], "suggestion": rule.suggestion if rule else "",
        })
    rules.sort(key=lambda r: (-r["findings"], r["code"]))
    people = sorted((r for r in rules if r["manual"]), key=lambda r: (-r["manual"], r["code"]))
    return {
        "files": len(files),
        "files_checked": files_checked,
        "lines": len(lines),
        "findings": len(legacy),
        "safe_fixable": fix["safe"],
        "unsafe_fixable": fix["unsafe"],
        "manual": fix["manual"],
        "imports_pending": pending,
        "mixed_workload_files": len({f.path for f in legacy if f.code == "NRN110"}),
        "rules": rules,
        "needs_a_person": [{"code": r["code"], "name": r["name"], "findings": r["manual"], "suggestion": r["suggestion"]}
                           for r in people],
    }


def summary_lines(section: dict) -> list[str]:
    """Plain sentences for the renderers (no markup)."""
    n = section["findings"]
    if not n:
        return []

    from .project import shares

    def pct(a, b):
        return f"{100 * a / b:.0f}%" if b else "0%"

    share = shares({k: section[k] for k in ("safe_fixable", "unsafe_fixable", "manual")})  # they add up to 100%
    out = [
        f"{section['files']} of {section['files_checked']} files ({pct(section['files'], section['files_checked'])}) "
        f"are on the legacy PyTorch/XLA path: {n} uses on {section['lines']} lines.",
        f"`neuron-lint fix` rewrites {section['safe_fixable']} ({share['safe_fixable']}%), "
        f"`--unsafe-fixes` {section['unsafe_fixable']} more ({share['unsafe_fixable']}%); "
        f"{section['manual']} ({share['manual']}%) need a person"
        + (f", of which {section['imports_pending']} are `torch_xla` imports that `fix` removes once the uses they serve "
           "are gone." if section.get("imports_pending") else "."),
    ]
    if section["mixed_workload_files"]:
        out.append(f"{section['mixed_workload_files']} file(s) mix torch_xla with the native `neuron` device (NRN110): "
                   "pick one path.")
    return out
