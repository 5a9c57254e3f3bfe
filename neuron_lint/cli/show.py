"""``check --show-files`` and ``check --show-settings``: what a run would check, and with what.

``--show-files`` lists the files a run would check, one per line, and checks none. ``--show-settings``
shows, for the first of those files, the configuration file it takes (and the files that one
extends), where its ``min-torch`` came from, every setting as the configuration would spell it, and
the rules that run on it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..output.safe_output import err_line, escape, out_line

EXIT_OK, EXIT_ERROR = 0, 2


def _files(paths: list[str], tree):
    """(files, missing, skipped) as a run would find them."""
    from ..engine.pipeline import display_path
    from ..io.discovery import Missing, Skipped, iter_python_files

    files, missing, skipped = [], [], []
    for item in iter_python_files(list(paths), tree):
        if isinstance(item, Missing):
            missing.append(item)
        elif isinstance(item, Skipped):
            skipped.append(item)
        else:
            files.append(display_path(item))
    for item in skipped:
        err_line(f"warning: {item.path}: {item.reason}")
    for item in missing:
        err_line(f"error: {item.path}: {item.reason}")
    return files, missing


def show_files(paths: list[str], tree) -> int:
    files, missing = _files(paths, tree)
    for name in files:
        out_line(escape(name))
    if not files and not missing:
        err_line("warning: No Python files found under the given paths")
    return EXIT_ERROR if missing else EXIT_OK


def show_settings(paths: list[str], tree) -> int:
    files, missing = _files(paths, tree)
    if not files:
        if not missing:
            err_line("warning: No Python files found under the given paths")
        return EXIT_ERROR if missing else EXIT_OK
    for line in settings_lines(files[0], tree):
        out_line(line)
    return EXIT_ERROR if missing else EXIT_OK


def settings_lines(path: str, tree) -> list[str]:
    """The settings ``path`` is checked with, as text."""
    from ..catalog.loading import load_catalog
    from ..config.files import KEYS

    resolved = tree.resolved_for(path)
    settings = resolved.settings
    lines = [f"Resolved settings for: {escape(path)}"]
    if resolved.config_file is None:
        how = "(none: the defaults" + (", --isolated)" if resolved.isolated else ")")
    else:
        how = " -> ".join(escape(_shown(p)) for p in (resolved.config_file, *extends_chain(resolved.config_file)))
        how += " (--config)" if resolved.named else ""
    lines.append(f"Settings path: {how}")
    given = sorted(k.replace("_", "-") for k in resolved.given if k != "fix_edits")
    if given:
        lines.append(f"From the command line: {', '.join(given)}")
    if resolved.min_torch_from:
        lines.append(f"min-torch from: {escape(resolved.min_torch_from)}")
    lines.append("")
    for key, (field_name, _check) in KEYS.items():
        value = getattr(settings, field_name)
        if field_name == "per_file_ignores":
            value = "{" + ", ".join(f"{json.dumps(g)} = {_toml(list(c))}" for g, c in value) + "}"
        else:
            value = _toml(value)
        lines.append(f"{key} = {value}")
    rules = sorted(settings.codes_for(path, load_catalog()))
    lines.append(f"# rules that run on this file ({len(rules)})")
    lines.append(f"rules = {_toml(rules)}")
    return lines


def extends_chain(config: Path) -> list[Path]:
    """The files ``config`` extends, nearest first (already validated when the settings were read)."""
    from ..config.files import EXTEND_KEY, _read_toml, _section

    chain: list[Path] = []
    current = config
    while len(chain) < 64:
        section, _ = _section(current, _read_toml(current))
        value = section.get(EXTEND_KEY) if isinstance(section, dict) else None
        if not isinstance(value, str):
            break
        current = (current.resolve().parent / os.path.expanduser(value)).resolve()
        chain.append(current)
    return chain


def _shown(path: Path) -> str:
    from ..engine.pipeline import display_path

    return display_path(path)


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(json.dumps(v) for v in value) + "]"
    return json.dumps(value)
