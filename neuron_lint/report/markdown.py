"""``--format markdown``: the report as a pull-request comment or a wiki page (GitHub-flavoured)."""

from __future__ import annotations

import html
import re
from typing import TextIO

from ..model import position_text
from ..output.safe_output import escape
from .legacy import summary_lines
from .text import FIX_WORDS, LEVEL_WORDS, file_rules, rules_text

VERDICT_MARK = {"ready": "✅", "fixable": "🔧", "needs-work": "🟡", "blocked": "⛔", "nothing-checked": "⚠️"}
MAX_BLOCKERS = 50


def md(text: str) -> str:
    """Text for a table cell: no raw HTML outside code spans, no cell breaks, one line."""
    text = escape(str(text).replace("\r", " ").replace("\n", " "), keep="\t")
    parts = re.split(r"(`[^`]*`)", text)
    parts = [p if p.startswith("`") and p.endswith("`") and len(p) > 1 else html.escape(p, quote=False) for p in parts]
    return "".join(parts).replace("|", "\\|")


def code(text: str) -> str:
    """An inline code span that survives any backticks in ``text``."""
    text = escape(str(text).replace("\n", " "), keep="\t")
    ticks = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}".replace("|", "\\|")


def _fence(lines: list[str]) -> str:
    body = "\n".join(lines)
    fence = "`" * max(3, max((len(m) + 1 for m in re.findall(r"`{3,}", body)), default=3))
    return f"{fence}\n{body}\n{fence}"


def render(report: dict, out: TextIO) -> None:
    s = report["summary"]
    n = s["findings"]
    w = out.write
    w(f"## Trainium migration readiness: {VERDICT_MARK[report['verdict']]} {md(report['verdict_text'])}\n\n")
    w(f"{code(report.get('project', ''))}: **{n}** findings in **{report['files_with_findings']}** of {report['files_checked']} files checked · "
      f"**{s['blockers']}** blockers · effort **{s['effort']['points']}** points "
      f"({', '.join(f'{k} = {v}' for k, v in report['effort_points'].items())}).\n\n")
    if report["errors"]:
        w(f"{len(report['errors'])} file(s) could not be checked: "
          + ", ".join(code(f"{e['path']}: {e['reason']}") for e in report["errors"][:10]) + "\n\n")
    if not n:
        return
    w("| family | findings |\n|---|---:|\n")
    for fam, count in s["families"].items():
        w(f"| {md(report['family_titles'][fam])} | {count} |\n")
    w("\n| | findings | share |\n|---|---:|---:|\n")
    for key, words in FIX_WORDS.items():
        w(f"| {md(words)} | {s[key]} | {report['shares'][key]}% |\n")
    w("\n### Effort\n\n| level | findings | points | rules behind it |\n|---|---:|---:|---|\n")
    for level, row in s["effort"]["by_level"].items():
        if row["findings"]:
            w(f"| {md(LEVEL_WORDS[level])} | {row['findings']} | {row['points']} | {md(rules_text(row['rules']))} |\n")
    w(f"| **total** | {n} | {s['effort']['points']} | |\n")
    w("\n### Per top-level package\n\n| package | verdict | findings | blockers | points |\n|---|---|---:|---:|---:|\n")
    for p in report["packages"]:
        w(f"| {code(p['name'])} | {VERDICT_MARK[p['verdict']]} {p['verdict']} | {p['findings']} | {p['blockers']} | {p['effort']['points']} |\n")
    if report["blockers"]:
        w(f"\n### Blockers ({len(report['blockers'])})\n\n")
        for b in report["blockers"][:MAX_BLOCKERS]:
            where = f"{b['path']}:{position_text(b['line'], b['column'], b.get('cell', 0))}"
            w(f"- {code(where)} **{b['code']}** ({b['effort']}): {md(b['message'])}  \n"
              f"  {md(b['suggestion'])}\n")
            if b["excerpt"]:
                width = len(str(b["excerpt"][-1]["line"]))
                lines = [f"{e['line']:>{width}} | {escape(e['text'], keep=chr(9))}" for e in b["excerpt"]]
                w("\n" + "\n".join("  " + l for l in _fence(lines).splitlines()) + "\n\n")
        if len(report["blockers"]) > MAX_BLOCKERS:
            w(f"\n…and {len(report['blockers']) - MAX_BLOCKERS} more (`neuron-lint report --format json`).\n")
    legacy = report.get("legacy_xla") or {}
    if legacy.get("findings"):
        w("\n### Legacy PyTorch/XLA path\n\n" + "  \n".join(md(t) for t in summary_lines(legacy)) + "\n\n")
        w("| rule | uses | `fix` | `--unsafe-fixes` | a person |\n|---|---:|---:|---:|---:|\n")
        for r in legacy["rules"]:
            w(f"| {r['code']} {md(r['name'])} | {r['findings']} | {r['safe_fixable']} | {r['unsafe_fixable']} | {r['manual']} |\n")
        if legacy["needs_a_person"]:
            w("\nWhat needs a person:\n\n")
            for r in legacy["needs_a_person"]:
                w(f"- **{r['code']}** {md(r['name'])} ×{r['findings']}: {md(r['suggestion'])}\n")
    w(f"\n### Files that need most work (top {len(report['files'])} of {report['files_total']})\n\n"
      "| file | findings | blockers | points | rules |\n|---|---:|---:|---:|---|\n")
    for f in report["files"]:
        w(f"| {code(f['path'])} | {f['findings']} | {f['blockers']} | {f['effort']['points']} | {md(rules_text(file_rules(f)))} |\n")
    w(f"\n<sub>neuron-lint {md(report['tool']['version'])} · `neuron-lint report --format markdown`</sub>\n")
