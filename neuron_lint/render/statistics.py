"""``--statistics``: how many findings each rule produced, and whether neuron-lint can fix them.

Text for the human formats; a JSON array (code, name, count, fixable) with ``--output-format json``.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import TextIO

from ..model import CheckResult


def rows(result: CheckResult) -> list[dict]:
    counts = Counter(f.code for f in result.findings)
    names = {f.code: f.name for f in result.findings}
    fixable = {f.code for f in result.findings if f.fix is not None}
    return [
        {"code": code, "name": names[code], "count": n, "fixable": code in fixable}
        for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def render_statistics(result: CheckResult, out: TextIO, as_json: bool = False) -> None:
    table = rows(result)
    if as_json:
        json.dump(table, out, indent=2)
        out.write("\n")
        return
    width = max((len(str(r["count"])) for r in table), default=1)
    for r in table:
        mark = "[*]" if r["fixable"] else "[ ]"
        out.write(f"{r['count']:>{width}}\t{r['code']}\t{mark} {r['name']}\n")
