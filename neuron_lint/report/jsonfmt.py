"""``--format json``: the report's data, for dashboards. Its shape is ``schema.SCHEMA``."""

from __future__ import annotations

import json
from typing import TextIO


def render(report: dict, out: TextIO) -> None:
    json.dump(report, out, indent=2, ensure_ascii=False)
    out.write("\n")
