"""``--output-format json``: a JSON array with one object per finding (schema in README, "Output formats").

The schema is stable: fields are only ever added. Positions are 1-based; columns count characters
and ``end_location`` is just past the last character. A file that could not be read or parsed is an
item too, with ``"code": null`` and ``"category": "error"`` (as ruff writes a syntax error), located
where the parser stopped (or at 1:1), so a script sees which file failed and why.
"""

from __future__ import annotations

import json
from typing import TextIO

from ..model import CheckResult, FileError
from . import RenderOptions
from .safe_output import unicode_safe

#: ``name`` of the item that stands for a file that could not be checked.
FILE_ERROR_NAME = "file-error"


def error_dict(error: FileError) -> dict:
    """A file that could not be checked, in the shape of a finding."""
    position = {"row": max(error.line or 1, 1), "column": max(error.col or 1, 1)}
    return {
        "code": None,
        "name": FILE_ERROR_NAME,
        "category": "error",
        "message": error.reason,
        "suggestion": "",
        "url": "",
        "filename": error.path,
        "cell": error.cell or None,
        "location": position,
        "end_location": dict(position),
        "fix": None,
        "fix_note": None,
    }


def finding_dicts(result: CheckResult) -> list[dict]:
    """Findings and file errors, sorted by file, cell, row and column."""
    keyed = [((f.path, f.cell, f.line, f.col, f.code), f.to_dict()) for f in result.findings]
    keyed += [((e.path, e.cell, e.line or 0, e.col or 0, ""), error_dict(e)) for e in result.errors]
    keyed.sort(key=lambda kv: kv[0])
    return [d for _, d in keyed]


def render(result: CheckResult, out: TextIO, options: RenderOptions) -> None:
    # strict UTF-8 even for a file name that is not: each undecodable byte becomes U+FFFD
    out.write(unicode_safe(json.dumps(finding_dicts(result), indent=2, ensure_ascii=False)) + "\n")
