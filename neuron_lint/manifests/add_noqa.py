"""``--add-noqa`` for dependency manifests: ``# noqa: CODES`` at the end of each line with findings.

Only where an end-of-line ``#`` starts a comment: requirements files, ``pyproject.toml`` (TOML) and
conda ``environment*.yml`` and Cog's ``cog.yaml`` (YAML). ``setup.cfg`` is left alone (setuptools would read an inline
``#`` as part of the value); ``setup.py`` is Python and gets its comments as any Python file.
Before anything is written the new text is read again: it must give exactly the same entries (and,
for ``pyproject.toml``, the same TOML data) and no finding left on the lines it suppressed; else
the file is left alone with an error.
"""

from __future__ import annotations

from .checks import check_manifest_text
from .entries import tomllib
from .kinds import scan_text
from .suppression import with_codes

#: Manifest kinds a ``# noqa`` comment can be added to.
KINDS = ("requirements", "pyproject", "conda", "cog")


class ManifestNoqaError(ValueError):
    """No ``# noqa`` can be written safely (the file is left alone)."""


def add_noqa_to_manifest(text: str, kind: str, path: str, settings, catalog) -> tuple[str, int]:
    """``text`` with a ``# noqa`` for every finding, and the number of codes written."""
    findings = check_manifest_text(text, kind, path, settings, catalog)
    wanted: dict[int, set[str]] = {}
    for f in findings:
        wanted.setdefault(f.line, set()).add(f.code)
    lines = text.splitlines(keepends=True)
    added = 0
    for number, codes in sorted(wanted.items()):
        raw = lines[number - 1]
        body = raw.rstrip("\r\n")
        if body.rstrip().endswith("\\"):
            raise ManifestNoqaError(f"line {number} continues on the next one, where a comment would end it; left alone")
        body, n = with_codes(body, codes)
        lines[number - 1] = body + raw[len(raw.rstrip("\r\n")):]
        added += n
    new_text = "".join(lines)
    if added:
        _verify(text, new_text, kind, path, settings, catalog, set(wanted))
    return new_text, added


def _verify(old: str, new: str, kind: str, path: str, settings, catalog, lines: set[int]) -> None:
    try:
        same = scan_text(old, kind) == scan_text(new, kind)
        if same and kind == "pyproject":
            same = tomllib.loads(old) == tomllib.loads(new)
    except (ValueError, SyntaxError):
        same = False
    if not same:
        raise ManifestNoqaError("a comment would change what the file declares; left alone")
    if any(f.line in lines for f in check_manifest_text(new, kind, path, settings, catalog)):
        raise ManifestNoqaError("the comments would not silence every finding; left alone")
