"""``--output-format json``: a JSON array with one object per finding (schema in README, "Output formats").

The schema is stable: fields are only ever added. Positions are 1-based; columns count characters
and ``end_location`` is just past the last character.
"""

from __future__ import annotations

import json
from typing import TextIO

from ..model import CheckResult
from . import RenderOptions
from .safe_output import unicode_safe


def finding_dicts(result: CheckResult) -> list[dict]:
    return [f.to_dict() for f in result.findings]


def render(result: CheckResult, out: TextIO, options: RenderOptions) -> None:
    # strict UTF-8 even for a file name that is not: each undecodable byte becomes U+FFFD
    out.write(unicode_safe(json.dumps(finding_dicts(result), indent=2, ensure_ascii=False)) + "\n")
