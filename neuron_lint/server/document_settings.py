"""Settings for each document: the project's configuration file, then the editor's own settings.

A document gets the settings ``neuron-lint check`` would use for its file: the nearest
``neuron-lint.toml`` or ``pyproject.toml`` with ``[tool.neuron-lint]`` above it, and the default
``min-torch`` from the project's dependency manifests (:func:`neuron_lint.config.files.from_command_line`).
They are resolved once per folder and cached until a configuration file or manifest changes.

The editor may set ``unsafeFixes`` (``initializationOptions``, ``workspace/didChangeConfiguration``
or ``workspace/configuration``, section ``neuron-lint``); when it does, that wins over the file's
``unsafe-fixes``. A configuration file with a mistake is reported once, and the document is checked
with the defaults meanwhile.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from ..config.settings import Settings

#: Files whose change can change a document's settings: configuration files, the formatter's line
#: length, and the manifests the default ``min-torch`` is read from.
CONFIG_NAMES = frozenset({"pyproject.toml", "neuron-lint.toml", "ruff.toml", ".ruff.toml"})
WATCHED_GLOBS = (
    "**/pyproject.toml", "**/neuron-lint.toml", "**/ruff.toml", "**/.ruff.toml",
    "**/setup.cfg", "**/setup.py", "**/*requirements*.txt", "**/requirements/*.txt", "**/environment*.yml",
    "**/environment*.yaml",
)
#: Names the editor's settings may sit under.
SECTIONS = ("neuron-lint", "neuronLint", "neuron_lint")


def is_config_file(path: str | None) -> bool:
    """Does a change to ``path`` call for resolving settings again?"""
    if not path:
        return False
    from ..manifests import manifest_kind

    return os.path.basename(path) in CONFIG_NAMES or manifest_kind(path) is not None


@dataclass(frozen=True)
class EditorOptions:
    """What the editor's settings say; None: not said (the configuration file decides)."""

    unsafe_fixes: bool | None = None


def editor_options(value, current: EditorOptions | None = None) -> EditorOptions:
    """Options from an ``initializationOptions`` or settings object (``{"unsafeFixes": true}``,
    also nested under ``settings`` or ``neuron-lint``); what it does not say stays as it was."""
    current = current or EditorOptions()
    table = _our_table(value)
    if table is None:
        return current
    for key in ("unsafeFixes", "unsafe-fixes", "unsafe_fixes"):
        if key in table and (table[key] is None or isinstance(table[key], bool)):
            return dataclasses.replace(current, unsafe_fixes=table[key])  # null: the file decides again
    return current


def _our_table(value) -> dict | None:
    for _ in range(3):  # {"settings": {"neuron-lint": {...}}} at the deepest
        if not isinstance(value, dict):
            return None
        inner = next((value[k] for k in ("settings", *SECTIONS) if isinstance(value.get(k), dict)), None)
        if inner is None:
            return value
        value = inner
    return value if isinstance(value, dict) else None


@dataclass(frozen=True)
class DocumentSettings:
    settings: Settings
    config_file: Path | None
    line_length: int
    error: str = ""  # the configuration file's mistake (the defaults are used)


class SettingsCache:
    """Resolved settings per folder; safe to use from the engine's thread and the event loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_folder: dict[str, DocumentSettings] = {}
        self.editor = EditorOptions()

    def for_path(self, path: str | None, fallback_folder: str | None = None) -> DocumentSettings:
        """The settings of the file at ``path`` (or of a new file in ``fallback_folder``)."""
        folder = os.path.dirname(os.path.abspath(path)) if path else os.path.abspath(fallback_folder or os.getcwd())
        with self._lock:
            found = self._by_folder.get(folder)
        if found is None:
            found = _resolve(folder)
            with self._lock:
                self._by_folder[folder] = found
        if self.editor.unsafe_fixes is not None and self.editor.unsafe_fixes != found.settings.unsafe_fixes:
            found = dataclasses.replace(found, settings=dataclasses.replace(found.settings, unsafe_fixes=self.editor.unsafe_fixes))
        return found

    def clear(self) -> None:
        """Forget every folder's settings (a configuration file or manifest changed)."""
        from ..fixes.line_length import line_length_of

        with self._lock:
            self._by_folder.clear()
        line_length_of.cache_clear()


def _resolve(folder: str) -> DocumentSettings:
    from ..config.files import ConfigError, from_command_line
    from ..fixes.line_length import line_length_of

    probe = os.path.join(folder, "__neuron_lint_document__.py")  # settings are found from the file's folder
    error = ""
    try:
        resolved = from_command_line([probe])
    except ConfigError as exc:
        error = str(exc)
        resolved = from_command_line([probe], isolated=True)
    except OSError as exc:  # an unreadable folder on the way up
        error = f"cannot read the configuration: {exc.strerror or exc}"
        resolved = from_command_line([probe], isolated=True)
    return DocumentSettings(resolved.settings, resolved.config_file, line_length_of(folder), error)


def engine_path(path: str | None, uri: str) -> str:
    """The path the engine is given for a document: its file's absolute path (``per-file-ignores``
    match it as they match ``neuron-lint check``'s, and what the fixes read of the file's folders
    and project is found from it whatever the server's working folder); for a document without a
    file, its URI's last part."""
    if not path:
        return uri.rsplit("/", 1)[-1] or "untitled.py"
    return os.path.abspath(path)


def _config_relative(path: str, settings: DocumentSettings) -> str:
    """``path`` relative to its configuration file's folder when it lies under it, else absolute."""
    path = os.path.abspath(path)
    if settings.config_file is not None:
        base = os.path.dirname(os.path.abspath(settings.config_file))
        try:
            rel = os.path.relpath(path, base)
        except ValueError:  # another drive
            return path
        if not rel.startswith(".."):
            return rel
    return path


def is_excluded(path: str | None, settings: DocumentSettings) -> bool:
    """Whether ``exclude``/``extend-exclude`` skip this file (as ``--force-exclude`` does: the file
    or a folder above it, up to the configuration file's folder, matches)."""
    if not path or not (settings.settings.exclude or settings.settings.extend_exclude):
        return False
    globs = settings.settings.exclude_globs()
    rel = Path(_config_relative(path, settings))
    return any(globs.match(p) for p in (rel, *rel.parents) if p.name)
