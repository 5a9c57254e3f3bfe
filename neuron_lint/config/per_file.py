"""Each file's own settings: its nearest configuration file, with the command line on top.

In a monorepo ``pkg_a/pyproject.toml`` may ignore a rule that ``pkg_b`` keeps. The settings a file
gets depend only on where it lies, never on the other files of the run: a file takes the
``neuron-lint.toml`` or ``pyproject.toml`` (with a neuron-lint section) nearest to it, from its own
folder up, exactly as if it had been checked alone. Configuration files are not merged; one shares a
base with ``extend`` (see :func:`neuron_lint.config.files.load_config`). ``--config`` and ``--isolated``
give every file the same settings.

Run-level settings (``output-format``, ``respect-gitignore``) are those of the folder holding every
checked path (:func:`neuron_lint.config.files.resolve`), as ruff takes them from the configuration it
finds first.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from ..manifests import manifest_files
from .files import OWN_FILE, Resolved, _has_section, settings_from
from .settings import Settings


class SettingsTree:
    """``for_path(path)``: the :class:`Settings` of one file or folder. Picklable (worker processes
    get it whole); lookups are remembered per folder, so a walk costs two ``stat`` calls per folder."""

    def __init__(self, resolved: Resolved) -> None:
        self.resolved = resolved
        self.base: Settings = resolved.settings
        self._fixed = resolved.isolated or resolved.named
        self._config_of: dict[str, Path | None] = {}  # folder -> its nearest configuration file
        self._root_of: dict[str, str | None] = {}  # folder -> project folder (for min-torch)
        self._by_key: dict[tuple, Resolved] = {}
        self._by_folder: dict[str, Resolved] = {}  # folder -> its settings (the lookups above, once)
        if not self._fixed:
            start = resolved.start or Path.cwd()
            where = resolved.config_file.resolve().parent if resolved.config_file else start
            self._by_key[self._key(resolved.config_file, where)] = resolved

    # -- run-level values are the base settings'
    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in _FIELDS:
            raise AttributeError(name)
        return getattr(self.base, name)

    def replace(self, **changes: Any) -> "SettingsTree":
        """The same tree with ``changes`` (Settings fields) applied to every file's settings."""
        given = {**self.resolved.given, **changes}
        resolved = dataclasses.replace(self.resolved, settings=dataclasses.replace(self.base, **changes), given=given)
        return SettingsTree(resolved)

    # -- lookups
    def for_path(self, path: str | os.PathLike, is_dir: bool = False) -> Settings:
        """The settings of the file (or, with ``is_dir``, the folder) ``path``."""
        return self.resolved_for(path, is_dir).settings

    def resolved_for(self, path: str | os.PathLike, is_dir: bool = False) -> Resolved:
        """How ``path``'s settings were resolved: the file they came from, where min-torch came from."""
        if self._fixed:
            return self.resolved
        absolute = os.path.abspath(path)
        folder = absolute if is_dir else os.path.dirname(absolute)
        found = self._by_folder.get(folder)
        if found is not None:
            return found
        config = self._nearest_config(folder)
        where = str(config.resolve().parent) if config is not None else folder
        key = self._key(config, Path(where))
        found = self._by_key.get(key)
        if found is None:
            found = settings_from(config, self.resolved.given, start=Path(where))
            self._by_key[key] = found
        self._by_folder[folder] = found
        return found

    def _key(self, config: Path | None, where: Path) -> tuple:
        """Two files share settings when they share a configuration file and a project folder."""
        if "min_torch" in self.resolved.given:
            return (config and str(config.resolve()), None)
        return (config and str(config.resolve()), self._project(str(where)))

    def _nearest_config(self, folder: str) -> Path | None:
        chain: list[str] = []
        found: Path | None = None
        current = folder
        while True:
            if current in self._config_of:
                found = self._config_of[current]
                break
            chain.append(current)
            own = os.path.join(current, OWN_FILE)
            pyproject = os.path.join(current, "pyproject.toml")
            # os.path.isfile never raises (a folder without search permission just has no file)
            if os.path.isfile(own):
                found = Path(own)
                break
            if os.path.isfile(pyproject) and _has_section(Path(pyproject)):
                found = Path(pyproject)
                break
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        for seen in chain:
            self._config_of[seen] = found
        return found

    def _project(self, folder: str) -> str | None:
        """:func:`neuron_lint.fixes.min_torch.project_root`, remembered for every folder on the way."""
        chain: list[str] = []
        current = folder
        while current not in self._root_of:
            chain.append(current)
            if manifest_files(Path(current)):
                self._root_of[current] = current
                break
            parent = os.path.dirname(current)
            if os.path.exists(os.path.join(current, ".git")) or parent == current:
                self._root_of[current] = None  # the repository root (or /): the walk stops here
                break
            current = parent
        root = self._root_of[current]
        for seen in chain:
            self._root_of[seen] = root
        return root


_FIELDS = frozenset(f.name for f in dataclasses.fields(Settings))


def settings_for(settings: Settings | SettingsTree, path: str | os.PathLike, is_dir: bool = False) -> Settings:
    """``path``'s settings, whether the run has one :class:`Settings` or a :class:`SettingsTree`."""
    return settings.for_path(path, is_dir) if isinstance(settings, SettingsTree) else settings


def base_of(settings: Settings | SettingsTree) -> Settings:
    """The run-level settings."""
    return settings.base if isinstance(settings, SettingsTree) else settings
