"""The default report: a verdict, the numbers, the blockers and the files that need most work (rich)."""

from __future__ import annotations

import os
from typing import TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..model import position_text
from ..output.safe_output import console_width, escape
from .legacy import summary_lines
from .text import FIX_WORDS, LEVEL_WORDS, file_rules, rules_text

VERDICT_STYLE = {"ready": "bold green", "fixable": "bold cyan", "needs-work": "bold yellow", "blocked": "bold red",
                 "nothing-checked": "bold yellow"}
MAX_BLOCKERS = 20


def _console(out: TextIO) -> Console:
    no_color = bool(os.environ.get("NO_COLOR"))
    return Console(file=out, highlight=False, emoji=False, no_color=no_color, soft_wrap=False,
                   width=console_width(out))


def render(report: dict, out: TextIO) -> None:
    c = _console(out)
    s = report["summary"]
    n = s["findings"]
    head = Text("Migration readiness: ", style="bold")
    head.append(report["verdict_text"], style=VERDICT_STYLE[report["verdict"]])
    c.print(head)
    c.print(Text(f"{escape(report.get('project', ''))}: ", style="bold"), end="")
    c.print(f"{n} finding{'s' if n != 1 else ''} in {report['files_with_findings']} of {report['files_checked']} files checked; "
            f"{s['blockers']} blocker{'s' if s['blockers'] != 1 else ''}; effort {s['effort']['points']} points.")
    if report["errors"]:
        c.print(Text(f"{len(report['errors'])} file(s) could not be checked (listed on stderr).", style="yellow"))
    if not n:
        return
    c.print()

    fams = Table(title="Findings per family", title_justify="left", show_edge=False)
    fams.add_column("family")
    fams.add_column("findings", justify="right")
    for fam, count in s["families"].items():
        fams.add_row(report["family_titles"][fam], str(count), style="dim" if not count else "")
    c.print(fams)
    c.print()

    fix = Table(title="Who fixes it", title_justify="left", show_edge=False)
    fix.add_column("findings", justify="right")
    fix.add_column("share", justify="right")
    fix.add_column("")
    for key, words in FIX_WORDS.items():
        fix.add_row(str(s[key]), f"{report['shares'][key]}%", words)
    c.print(fix)
    c.print()

    eff = Table(title=f"Effort ({', '.join(f'{k}={v}' for k, v in report['effort_points'].items())} points each)",
                title_justify="left", show_edge=False)
    for col, just in (("level", "left"), ("findings", "right"), ("points", "right"), ("rules behind it", "left")):
        eff.add_column(col, justify=just)  # type: ignore[arg-type]
    for level, row in s["effort"]["by_level"].items():
        if row["findings"]:
            eff.add_row(LEVEL_WORDS[level], str(row["findings"]), str(row["points"]), rules_text(row["rules"]))
    eff.add_row(Text("total", style="bold"), str(n), str(s["effort"]["points"]), "")
    c.print(eff)
    c.print()

    pk = Table(title="Per top-level package", title_justify="left", show_edge=False)
    pk.add_column("package", overflow="fold")
    pk.add_column("verdict")
    for col in ("findings", "blockers", "points"):
        pk.add_column(col, justify="right")
    for p in report["packages"]:
        pk.add_row(Text(escape(p["name"])), Text(p["verdict"], style=VERDICT_STYLE[p["verdict"]]), str(p["findings"]),
                   str(p["blockers"]), str(p["effort"]["points"]))
    c.print(pk)
    c.print()

    if report["blockers"]:
        c.print(Text(f"Blockers ({len(report['blockers'])})", style="bold red"))
        for b in report["blockers"][:MAX_BLOCKERS]:
            line = Text(f"  {escape(b['path'])}:{position_text(b['line'], b['column'], b.get('cell', 0))}: ", style="bold")
            line.append(b["code"], style="red")
            line.append(f" [{b['effort']}] {escape(b['message'])}")
            c.print(line)
            c.print(Text(f"      = help: {escape(b['suggestion'])}", style="cyan"))
        if len(report["blockers"]) > MAX_BLOCKERS:
            c.print(Text(f"  ... and {len(report['blockers']) - MAX_BLOCKERS} more (see --format html or json)", style="dim"))
        c.print()

    legacy = report.get("legacy_xla") or {}
    if legacy.get("findings"):
        c.print(Text("Legacy PyTorch/XLA path", style="bold"))
        for line in summary_lines(legacy):
            c.print("  " + line)
        lx = Table(show_edge=False)
        for col, just in (("rule", "left"), ("uses", "right"), ("fix", "right"), ("--unsafe-fixes", "right"), ("a person", "right")):
            lx.add_column(col, justify=just)  # type: ignore[arg-type]
        for r in legacy["rules"]:
            lx.add_row(f"{r['code']} {r['name']}", str(r["findings"]), str(r["safe_fixable"]), str(r["unsafe_fixable"]), str(r["manual"]))
        c.print(lx)
        c.print()

    files = Table(title=f"Files that need most work (top {len(report['files'])} of {report['files_total']})",
                  title_justify="left", show_edge=False)
    files.add_column("file", overflow="fold")
    for col in ("findings", "blockers", "points"):
        files.add_column(col, justify="right")
    files.add_column("rules")
    for f in report["files"]:
        files.add_row(Text(escape(f["path"])), str(f["findings"]), str(f["blockers"]), str(f["effort"]["points"]), rules_text(file_rules(f)))
    c.print(files)
