"""``--format json``: the report's data, for dashboards. Its shape is ``schema.SCHEMA``."""

from __future__ import annotations

import json
from typing import TextIO

from ..output.safe_output import unicode_safe


def render(report: dict, out: TextIO) -> None:
    # strict UTF-8 even for a file name that is not: each undecodable byte becomes U+FFFD
    out.write(unicode_safe(json.dumps(report, indent=2, ensure_ascii=False)) + "\n")
