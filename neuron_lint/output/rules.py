"""Human output for `neuron-lint rules` (the catalog table) and `neuron-lint rule CODE`."""

from __future__ import annotations

from itertools import groupby

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from ..catalog.loading import FAMILY_TITLES, Catalog, Rule
from .rule_text import examples, sections, source_lines
from .safe_output import console_width


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
    """One rule page, drawn for a terminal (:func:`neuron_lint.output.rule_text.rule_lines` is the plain form)."""
    console = console or Console(highlight=False, width=console_width())
    console.print(Text(f"{rule.code} {rule.name}", style="bold"), Text(f"  ({rule.category}, {rule.confidence})"))
    console.print()
    for title, body in sections(rule):
        console.print(Text(title, style="bold underline"))
        console.print(escape(body))
        console.print()
    console.print(Text("Sources", style="bold underline"))
    for line in source_lines(rule):
        console.print(Text(line, overflow="fold"))
    console.print()
    language = "text" if rule.manifest_only else "python"
    for title, text in examples(rule):
        console.print(Text(title, style="bold underline"))
        console.print(Panel(Syntax(text, language, theme="ansi_dark", background_color="default", word_wrap=True), expand=False))
