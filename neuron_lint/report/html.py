"""``--format html``: one self-contained page (no network) with charts drawn by inline JavaScript.

Every piece of text that comes from the scanned code (paths, messages, code excerpts) is escaped
with :func:`html.escape` in the tables, and the data the charts draw from is embedded as JSON with
``<``, ``>`` and ``&`` written as ``\\u003c``, ``\\u003e``, ``\\u0026``, so nothing in it can end the
``<script>`` element. The script builds the charts with DOM calls (``textContent``, never
``innerHTML``), so a file containing markup stays text.
"""

from __future__ import annotations

import json
import re
from html import escape
from typing import TextIO

from ..model import position_text
from ..output.safe_output import unicode_safe
from .legacy import summary_lines
from .text import FIX_WORDS, LEVEL_WORDS, file_rules, rules_text

VERDICT_CLASS = {"ready": "ok", "fixable": "fix", "needs-work": "work", "blocked": "blocked", "nothing-checked": "work"}
MAX_BLOCKERS = 200


def script_json(data: dict) -> str:
    """JSON that is safe inside a ``<script>`` element."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def e(value) -> str:
    return escape(str(value), quote=True)


def t(value) -> str:
    """Escaped prose, with `backtick spans` shown as code."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", e(value))


CSS = """
:root{--red:#c0392b;--amber:#d68910;--green:#1e8449;--blue:#2471a3;--cyan:#148f77;--grey:#7f8c8d;--ink:#1c2833;--line:#d5d8dc}
*{box-sizing:border-box}body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);margin:0;background:#f4f6f7}
header{background:#17202a;color:#fff;padding:20px 32px}header h1{margin:0 0 4px;font-size:22px}header p{margin:0;color:#d0d3d4}
main{padding:20px 32px;max-width:1280px}
.verdict{display:inline-block;padding:6px 14px;border-radius:6px;font-weight:600;font-size:16px;margin:6px 0 0}
.verdict.blocked{background:#fadbd8;color:var(--red)}.verdict.work{background:#fdebd0;color:#9c640c}
.verdict.fix{background:#d1f2eb;color:var(--cyan)}.verdict.ok{background:#d5f5e3;color:var(--green)}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:16px 0}.card{background:#fff;border:1px solid var(--line);border-radius:8px;padding:12px 16px;min-width:150px}
.card b{display:block;font-size:26px}.card span{color:var(--grey)}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(560px,1fr));gap:16px}
section{background:#fff;border:1px solid var(--line);border-radius:8px;padding:14px 18px;margin:0 0 16px}
section h2{font-size:16px;margin:0 0 10px}
svg text{font-size:12px;fill:var(--ink)}svg .val{fill:var(--grey)}svg .big{font-size:22px;font-weight:700}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:5px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{font-weight:600;background:#f8f9f9}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
.blocker{border-left:4px solid var(--red);padding:6px 12px;margin:10px 0;background:#fdfefe}
.blocker .where{font-weight:600}.blocker .help{color:var(--cyan)}
pre{background:#f4f6f7;border:1px solid var(--line);border-radius:4px;padding:6px 8px;overflow-x:auto;margin:6px 0 0}
pre .hit{background:#fadbd8;display:inline-block;width:100%}
.tag{font-size:11px;border-radius:3px;padding:1px 5px;background:#eaecee;margin-left:4px}
.legend span{margin-right:14px}.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px}
footer{color:var(--grey);padding:8px 32px 24px}
"""

# The charts: drawn from the embedded JSON with DOM calls only (textContent, setAttribute).
SCRIPT = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var NS = "http://www.w3.org/2000/svg";
  var COLORS = {"unsupported": "#c0392b", "cuda-specific": "#d68910", "numerics": "#8e44ad",
                "compile": "#148f77", "cpu-fallback": "#2471a3", "cuda-only-package": "#922b21", "legacy-xla": "#6c3483"};
  function el(name, attrs, text) {
    var node = document.createElementNS(NS, name);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, String(attrs[k])); });
    if (text !== undefined) node.textContent = String(text);
    return node;
  }
  function bars(id, rows) {
    var svg = document.getElementById(id);
    var width = 560, rowH = 26, labelW = 230, valueW = 50;
    var height = Math.max(rows.length, 1) * rowH + 10;
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    svg.setAttribute("height", height);
    if (!rows.length) { svg.appendChild(el("text", {x: 8, y: 20}, "No findings")); }
    var max = Math.max.apply(null, [1].concat(rows.map(function (r) { return r.value; })));
    rows.forEach(function (r, i) {
      var y = i * rowH + 5;
      var label = r.label.length > 34 ? "\u2026" + r.label.slice(-33) : r.label;
      var t = svg.appendChild(el("text", {x: labelW - 8, y: y + 16, "text-anchor": "end"}, label));
      t.appendChild(el("title", {}, r.label));
      var w = (width - labelW - valueW) * r.value / max;
      svg.appendChild(el("rect", {x: labelW, y: y + 3, width: r.value ? Math.max(w, 2) : 0, height: rowH - 8, rx: 2,
                                  fill: r.color, "class": "bar", "data-label": r.key || r.label, "data-value": r.value}));
      svg.appendChild(el("text", {x: labelW + w + 6, y: y + 16, "class": "val"}, r.value));
    });
    svg.setAttribute("data-drawn", rows.length);
  }
  function donut(id, parts, total) {
    var svg = document.getElementById(id);
    svg.setAttribute("viewBox", "0 0 560 190");
    svg.setAttribute("height", 190);
    var cx = 95, cy = 95, r = 70, stroke = 30, circ = 2 * Math.PI * r, offset = 0;
    svg.appendChild(el("circle", {cx: cx, cy: cy, r: r, fill: "none", stroke: "#eaecee", "stroke-width": stroke}));
    parts.forEach(function (p, i) {
      var len = total ? circ * p.value / total : 0;
      svg.appendChild(el("circle", {cx: cx, cy: cy, r: r, fill: "none", stroke: p.color, "stroke-width": stroke,
        "stroke-dasharray": len + " " + (circ - len), "stroke-dashoffset": -offset,
        transform: "rotate(-90 " + cx + " " + cy + ")", "class": "slice", "data-label": p.key, "data-value": p.value}));
      offset += len;
      var y = 45 + i * 34;
      svg.appendChild(el("rect", {x: 200, y: y - 11, width: 12, height: 12, rx: 2, fill: p.color}));
      svg.appendChild(el("text", {x: 220, y: y}, p.label + ": " + p.value));
    });
    var share = data.shares ? data.shares[parts[0].key] : (total ? Math.round(100 * parts[0].value / total) : 0);
    svg.appendChild(el("text", {x: cx, y: cy + 8, "text-anchor": "middle", "class": "big", id: "auto-share"}, share + "%"));
    svg.setAttribute("data-drawn", parts.length);
  }
  var s = data.summary;
  bars("chart-families", Object.keys(s.families).map(function (k) {
    return {key: k, label: data.family_titles[k].split(" ")[0] + " " + k, value: s.families[k], color: COLORS[k] || "#7f8c8d"};
  }));
  bars("chart-directories", data.directories.slice(0, 15).map(function (d) {
    return {label: d.path, value: d.findings, color: "#2471a3"};
  }));
  donut("chart-fixable", [
    {key: "safe_fixable", label: "neuron-lint fix", value: s.safe_fixable, color: "#1e8449"},
    {key: "unsafe_fixable", label: "--unsafe-fixes", value: s.unsafe_fixable, color: "#d68910"},
    {key: "manual", label: "manual", value: s.manual, color: "#c0392b"}
  ], s.findings);
  var levelColors = {auto: "#1e8449", low: "#2471a3", medium: "#d68910", high: "#c0392b"};
  bars("chart-effort", Object.keys(s.effort.by_level).map(function (k) {
    return {key: k, label: k + " (" + data.effort_points[k] + " pt each)", value: s.effort.by_level[k].points, color: levelColors[k]};
  }));
  document.body.setAttribute("data-charts-drawn", document.querySelectorAll("svg[data-drawn]").length);
})();
"""


def _cards(report: dict) -> str:
    s = report["summary"]
    n = s["findings"]
    cards = [
        (n, "findings"),
        (f"{report['files_with_findings']} / {report['files_checked']}", "files with findings / checked"),
        (s["blockers"], "blockers"),
        (f"{report['shares']['safe_fixable']}%", "fixed automatically"),
        (s["effort"]["points"], "effort points"),
    ]
    return '<div class="cards">' + "".join(
        f'<div class="card" data-metric="{e(label)}"><b>{e(value)}</b><span>{e(label)}</span></div>' for value, label in cards
    ) + "</div>"


def _table(head: list[tuple[str, bool]], rows: list[list[str]]) -> str:
    th = "".join(f'<th class="n">{e(h)}</th>' if num else f"<th>{e(h)}</th>" for h, num in head)
    body = "".join(
        "<tr>" + "".join(f'<td class="n">{c}</td>' if head[i][1] else f"<td>{c}</td>" for i, c in enumerate(r)) + "</tr>"
        for r in rows
    )
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _blockers(report: dict) -> str:
    items = []
    for b in report["blockers"][:MAX_BLOCKERS]:
        lines = "\n".join(
            f'<span class="{"hit" if x["line"] == b["line"] else ""}">{x["line"]:>5} | {e(x["text"])}</span>' for x in b["excerpt"]
        )
        items.append(
            f'<div class="blocker" data-code="{e(b["code"])}"><div class="where"><code>{e(b["path"])}:{position_text(b["line"], b["column"], b.get("cell", 0))}</code> '
            f'{e(b["code"])}<span class="tag">{e(b["effort"])}</span> {t(b["message"])}</div>'
            f'<div class="help">{t(b["suggestion"])}</div>' + (f"<pre>{lines}</pre>" if lines else "") + "</div>"
        )
    more = len(report["blockers"]) - MAX_BLOCKERS
    if more > 0:
        items.append(f"<p>… and {more} more (see <code>--format json</code>).</p>")
    return "".join(items) or "<p>No blockers.</p>"


def render(report: dict, out: TextIO) -> None:
    s = report["summary"]
    n = s["findings"]
    fams = _table([("family", False), ("findings", True)],
                  [[e(report["family_titles"][k]), str(v)] for k, v in s["families"].items()])
    fix = _table([("", False), ("findings", True), ("share", True)],
                 [[t(words), str(s[k]), f"{report['shares'][k]}%"] for k, words in FIX_WORDS.items()])
    effort = _table([("level", False), ("findings", True), ("points", True), ("rules behind it", False)],
                    [[t(LEVEL_WORDS[k]), str(v["findings"]), str(v["points"]), e(rules_text(v["rules"]))]
                     for k, v in s["effort"]["by_level"].items() if v["findings"]]
                    + [["<b>total</b>", str(n), str(s["effort"]["points"]), ""]])
    packages = _table([("package", False), ("verdict", False), ("findings", True), ("blockers", True), ("points", True)],
                      [[f"<code>{e(p['name'])}</code>", f'<span class="verdict {VERDICT_CLASS[p["verdict"]]}" style="font-size:12px;padding:1px 8px">{e(p["verdict"])}</span>',
                        str(p["findings"]), str(p["blockers"]), str(p["effort"]["points"])] for p in report["packages"]])
    files = _table([("file", False), ("findings", True), ("blockers", True), ("points", True), ("rules", False)],
                   [[f"<code>{e(f['path'])}</code>", str(f["findings"]), str(f["blockers"]), str(f["effort"]["points"]),
                     e(rules_text(file_rules(f)))] for f in report["files"]])
    rules = _table([("rule", False), ("family", False), ("effort", False), ("findings", True), ("auto", True), ("manual", True), ("points", True)],
                   [[f"<code>{e(r['code'])}</code> {e(r['name'])}", e(r["category"]), e(r["effort"]), str(r["findings"]),
                     str(r["safe_fixable"]), str(r["manual"]), str(r["points"])] for r in report["rules"]])
    legacy_html = ""
    legacy = report.get("legacy_xla") or {}
    if legacy.get("findings"):
        legacy_html = ("<section id=\"legacy-xla\"><h2>Legacy PyTorch/XLA path</h2>"
                       + "".join(f"<p>{t(line)}</p>" for line in summary_lines(legacy))
                       + _table([("rule", False), ("uses", True), ("fix", True), ("--unsafe-fixes", True), ("a person", True)],
                                [[f"<code>{e(r['code'])}</code> {e(r['name'])}", str(r["findings"]), str(r["safe_fixable"]),
                                  str(r["unsafe_fixable"]), str(r["manual"])] for r in legacy["rules"]])
                       + "</section>")
    errors = ""
    if report["errors"]:
        errors = "<section><h2>Files that could not be checked</h2>" + _table(
            [("file", False), ("reason", False)], [[f"<code>{e(x['path'])}</code>", e(x["reason"])] for x in report["errors"]]) + "</section>"
    roots = ", ".join(report["roots"])
    project = report.get("project") or roots
    out.write(unicode_safe(f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline';">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>Trainium migration readiness: {e(project)}</title>
<style>{CSS}</style></head>
<body data-verdict="{e(report['verdict'])}">
<header><h1>Trainium migration readiness: {e(project)}</h1><p>{e(roots)} · neuron-lint {e(report['tool']['version'])}</p>
<div class="verdict {VERDICT_CLASS[report['verdict']]}" id="verdict">{e(report['verdict_text'])}</div></header>
<main>
{_cards(report)}
<div class="grid">
<section><h2>Findings per family</h2><svg id="chart-families" width="100%" role="img" aria-label="findings per family"></svg>{fams}</section>
<section><h2>Who fixes it</h2><svg id="chart-fixable" width="100%" role="img" aria-label="auto-fixable share"></svg>{fix}</section>
<section><h2>Findings per directory</h2><svg id="chart-directories" width="100%" role="img" aria-label="findings per directory"></svg></section>
<section><h2>Effort points per level</h2><svg id="chart-effort" width="100%" role="img" aria-label="effort per level"></svg>{effort}</section>
</div>
<section><h2>Per top-level package</h2>{packages}</section>
<section id="blockers"><h2>Blockers ({len(report['blockers'])})</h2>{_blockers(report)}</section>
<section><h2>Files that need most work (top {len(report['files'])} of {report['files_total']})</h2>{files}</section>
<section><h2>Rules behind the numbers</h2>{rules}</section>
{legacy_html}
{errors}
</main>
<footer>Generated by <code>neuron-lint report --format html</code>. Effort points: {e(', '.join(f'{k} = {v}' for k, v in report['effort_points'].items()))}.</footer>
<script type="application/json" id="report-data">{script_json(report)}</script>
<script>{SCRIPT}</script>
</body></html>
"""))  # strict UTF-8: an undecodable byte in a file name becomes U+FFFD
