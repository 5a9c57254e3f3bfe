"""``--statistics``: how many findings each rule produced, and how many neuron-lint can fix.

Text for the human formats (one line per rule, then the total); a JSON array (code, name, count,
fixable, fixable_count) with ``--output-format json``. ``[*]`` and ``fixable`` mean what ``[*]``
means next to a finding: a safe fix, or an unsafe one when ``--unsafe-fixes`` is on.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import TextIO

from ..model import CheckResult
from .summary import fixable, summary_lines


def rows(result: CheckResult, unsafe_fixes: bool = False) -> list[dict]:
    counts = Counter(f.code for f in result.findings)
    names = {f.code: f.name for f in result.findings}
    can_fix = Counter(f.code for f in result.findings if fixable(f, unsafe_fixes))
    return [
        {"code": code, "name": names[code], "count": n, "fixable": can_fix[code] > 0, "fixable_count": can_fix[code]}
        for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def render_statistics(result: CheckResult, out: TextIO, as_json: bool = False, unsafe_fixes: bool = False,
                      quiet: bool = False) -> None:
    table = rows(result, unsafe_fixes)
    if as_json:
        json.dump(table, out, indent=2)
        out.write("\n")
        return
    width = max((len(str(r["count"])) for r in table), default=1)
    for r in table:
        mark = "[*]" if r["fixable"] else "[ ]"
        out.write(f"{r['count']:>{width}}\t{r['code']}\t{mark} {r['name']}\n")
    if not quiet:
        for line in summary_lines(result, unsafe_fixes):
            out.write(line + "\n")
