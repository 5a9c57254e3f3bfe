"""Human output for `neuron-lint rules` (the catalog table) and `neuron-lint rule CODE`."""

from __future__ import annotations

from itertools import groupby

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from ..catalog import FAMILY_TITLES, Catalog, Rule
from .safe_output import console_width

_SAFETY_TEXT = {
    "safe": "safe: on a CUDA machine the rewritten code does exactly what the old code did",
    "unsafe": "unsafe: the rewrite can change behaviour; applied only with --unsafe-fixes",
    None: "none: neuron-lint reports this and suggests a change; a person makes it",
}


def print_rules_table(catalog: Catalog, console: Console | None = None) -> None:
    console = console or Console(highlight=False, width=console_width())
    for category, rules in groupby(catalog.rules, key=lambda r: r.category):
        table = Table(title=FAMILY_TITLES.get(category, category), title_justify="left", expand=False)
        table.add_column("Code", style="bold", no_wrap=True)
        table.add_column("Name", no_wrap=True)
        table.add_column("Category")
        table.add_column("Fix", no_wrap=True)
        table.add_column("Confidence")
        for r in rules:
            table.add_row(r.code, r.name, r.category, r.fix.safety if r.fix else "-", r.confidence)
        console.print(table)
    console.print(f"{len(catalog.rules)} rules. `neuron-lint rule CODE` explains one.")


def print_rule(rule: Rule, console: Console | None = None) -> None:
    console = console or Console(highlight=False, width=console_width())
    console.print(Text(f"{rule.code} {rule.name}", style="bold"), Text(f"  ({rule.category}, {rule.confidence})"))
    console.print()
    sections = [
        ("What it flags", rule.message.replace("{name}", "…")),
        ("Why it matters on Trainium", rule.rationale),
        ("What to write instead", rule.suggestion),
        ("Fix", _SAFETY_TEXT[rule.fix.safety if rule.fix else None] + (f". {rule.fix.note}" if rule.fix and rule.fix.note else "")),
        ("Effort", rule.effort),
        ("Source", rule.source),
    ]
    if rule.confidence == "likely":
        sections.append(("Confidence", "likely: the fact behind this rule is secondary or inferred, so it may not apply to every TorchNeuron release"))
    for title, body in sections:
        console.print(Text(title, style="bold underline"))
        console.print(escape(" ".join(body.split())))
        console.print()
    console.print(Text("Example (flagged)", style="bold underline"))
    console.print(Panel(Syntax(rule.bad[0].strip("\n"), "python", theme="ansi_dark", background_color="default"), expand=False))
    if rule.fixed:
        console.print(Text("After `neuron-lint fix`", style="bold underline"))
        console.print(Panel(Syntax(rule.fixed[0].strip("\n"), "python", theme="ansi_dark", background_color="default"), expand=False))
    console.print(Text("Not flagged", style="bold underline"))
    console.print(Panel(Syntax(rule.good[0].strip("\n"), "python", theme="ansi_dark", background_color="default"), expand=False))
