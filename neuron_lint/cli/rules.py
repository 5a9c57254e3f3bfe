"""``neuron-lint rules`` and ``neuron-lint rule``: the rule catalog, as tables, pages or JSON.

On a terminal they are drawn with rich; piped or redirected they are plain text that no width cuts
(``neuron-lint rules | grep cuda-only-package``, ``neuron-lint rule NRN201 | less``).
"""

from __future__ import annotations

import json
import sys
from typing import Optional

import typer

from ..output.safe_output import out_line
from .typer_app import app, fail


def _catalog():
    from ..catalog.loading import CatalogError, load_catalog

    try:
        return load_catalog()
    except CatalogError as exc:
        raise fail(f"rule catalog: {exc}")


def _is_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


@app.command("rules")
def rules_cmd(
    output_format: str = typer.Option("table", "--output-format", metavar="FORMAT", show_default=False,
                                      help="table (default; plain text columns when piped) or json."),
) -> None:
    """List every rule: code, name, category, fix and confidence."""
    if output_format not in ("table", "json"):
        raise fail(f"unknown output format {output_format!r} (choose table or json)")
    catalog = _catalog()
    if output_format == "json":
        from ..output.rule_text import rule_summary

        sys.stdout.write(json.dumps([rule_summary(r) for r in catalog.rules], indent=2) + "\n")
        return
    if _is_terminal():
        from ..output.rules import print_rules_table

        print_rules_table(catalog)
        return
    from ..output.rule_text import rules_lines

    for line in rules_lines(catalog):
        out_line(line)


@app.command("rule")
def rule_cmd(
    code: Optional[str] = typer.Argument(None, metavar="CODE", help="A rule code such as NRN201, or its name (cuda-call).", show_default=False),
    all_rules: bool = typer.Option(False, "--all", metavar="", help="Every rule, one page after the other."),
    output_format: str = typer.Option("text", "--output-format", metavar="FORMAT", show_default=False,
                                      help="text (default; drawn on a terminal, plain when piped) or json."),
) -> None:
    """Explain a rule: what it flags, why it matters on Trainium, what to write instead, the fix and its sources."""
    if output_format not in ("text", "json"):
        raise fail(f"unknown output format {output_format!r} (choose text or json)")
    if (code is None) == (not all_rules):
        raise fail("name one rule (`neuron-lint rule NRN201`), or pass --all")
    catalog = _catalog()
    if all_rules:
        rules = list(catalog.rules)
    else:
        rule = catalog.get(code.upper()) or next((r for r in catalog.rules if r.name == code.lower()), None)
        if rule is None:
            raise fail(f"unknown rule {code!r} (see `neuron-lint rules`)")
        rules = [rule]
    if output_format == "json":
        from ..output.rule_text import rule_json

        pages = [rule_json(r) for r in rules]
        sys.stdout.write(json.dumps(pages if all_rules else pages[0], indent=2, ensure_ascii=False) + "\n")
        return
    if _is_terminal():
        from ..output.rules import print_rule

        for rule in rules:
            print_rule(rule)
        return
    from ..output.rule_text import rule_lines

    for i, rule in enumerate(rules):
        if i:
            out_line("")
        for line in rule_lines(rule):
            out_line(line)
