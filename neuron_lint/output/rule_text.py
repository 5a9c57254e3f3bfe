"""The rule catalog as plain text and JSON: what ``rules`` and ``rule`` print when not on a terminal.

Plain text is never cut to a width: every column of ``rules`` is as wide as its longest value, and
``rule`` prints its examples whole, as Markdown code blocks.
"""

from __future__ import annotations

from ..catalog.loading import FAMILY_TITLES, Catalog, Rule
from ..catalog.sources import references

SAFETY_TEXT = {
    "safe": "safe: on a CUDA machine the rewritten code does exactly what the old code did",
    "unsafe": "unsafe: the rewrite can change behaviour; applied only with --unsafe-fixes",
    None: "none: neuron-lint reports this and suggests a change; a person makes it",
}
LIKELY_TEXT = ("likely: the fact behind this rule is secondary or inferred, so it may not apply to every "
               "TorchNeuron release")


def fix_text(rule: Rule) -> str:
    text = SAFETY_TEXT[rule.fix.safety if rule.fix else None]
    return text + (f". {rule.fix.note}" if rule.fix and rule.fix.note else "")


def sections(rule: Rule) -> list[tuple[str, str]]:
    """(title, text) of a rule page, in order (the examples come after)."""
    out = [
        ("What it flags", rule.message.replace("{name}", "…")),
        ("Why it matters on Trainium", rule.rationale),
        ("What to write instead", rule.suggestion),
        ("Fix", fix_text(rule)),
        ("Effort", rule.effort),
    ]
    if rule.confidence == "likely":
        out.append(("Confidence", LIKELY_TEXT))
    return [(title, " ".join(body.split())) for title, body in out]


def source_lines(rule: Rule) -> list[str]:
    """The public pages behind the rule's facts, one per line (the rule's own words when it cites none)."""
    return references(rule.source) or [" ".join(rule.source.split())]


def examples(rule: Rule) -> list[tuple[str, str]]:
    out = [("Example (flagged)", rule.bad[0])]
    if rule.fixed:
        out.append(("After `neuron-lint fix`", rule.fixed[0]))
    out.append(("Not flagged", rule.good[0]))
    return [(title, text.strip("\n")) for title, text in out]


def _fence(text: str) -> str:
    longest = max((len(run) for run in text.split("\n") if set(run) == {"`"}), default=0)
    return "`" * max(3, longest + 1)


def rule_lines(rule: Rule) -> list[str]:
    """One rule page as Markdown, whole."""
    lines = [f"# {rule.code} {rule.name}", "", f"{rule.category}, confidence {rule.confidence}", ""]
    for title, body in sections(rule):
        lines += [f"## {title}", "", body, ""]
    lines += ["## Sources", ""] + [f"- {s}" for s in source_lines(rule)] + [""]
    language = "text" if rule.manifest_only else "python"
    for title, text in examples(rule):
        fence = _fence(text)
        lines += [f"## {title}", "", f"{fence}{language}", *text.split("\n"), fence, ""]
    lines.append(f"Rule file: {rule.url}")
    return lines


def rule_summary(rule: Rule) -> dict:
    """A row of ``rules --output-format json``."""
    return {"code": rule.code, "name": rule.name, "category": rule.category, "confidence": rule.confidence,
            "effort": rule.effort, "fix": rule.fix.safety if rule.fix else None, "message": rule.message, "url": rule.url}


def rule_json(rule: Rule) -> dict:
    """A rule page as data (``rule --output-format json``): the summary fields and every section."""
    return {
        **rule_summary(rule),
        "family": FAMILY_TITLES.get(rule.category, rule.category),
        "rationale": " ".join(rule.rationale.split()),
        "suggestion": " ".join(rule.suggestion.split()),
        "fix_note": rule.fix.note if rule.fix else "",
        "references": references(rule.source),
        "examples": {"bad": list(rule.bad), "good": list(rule.good), "fixed": list(rule.fixed)},
    }


def rules_lines(catalog: Catalog) -> list[str]:
    """``rules`` as plain columns: family headings, then one rule per line, nothing cut."""
    header = ("Code", "Name", "Category", "Fix", "Confidence")
    rows = [(r.code, r.name, r.category, r.fix.safety if r.fix else "-", r.confidence) for r in catalog.rules]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(values) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip()

    out: list[str] = []
    category = None
    for rule, row in zip(catalog.rules, rows):
        if rule.category != category:
            category = rule.category
            if out:
                out.append("")
            out += [FAMILY_TITLES.get(category, category), line(header)]
        out.append(line(row))
    out += ["", f"{len(catalog.rules)} rules. `neuron-lint rule CODE` explains one."]
    return out
