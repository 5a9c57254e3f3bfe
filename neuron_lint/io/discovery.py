"""Find the Python files to check under the paths a user names.

Directories are walked recursively (in sorted order, so runs are reproducible), honouring
``.gitignore`` files and skipping version-control folders, virtual environments and build
output. A file named explicitly is always checked. Symbolic links are not followed unless
asked, so a scan never leaves the tree it was given or loops.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..config.per_file import SettingsTree, base_of, settings_for
from ..config.settings import GlobSet, Settings
from ..manifests import manifest_kind
from .source import SourceError, read_source_bytes

SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", "__pycache__", "node_modules", "site-packages", "build", "dist",
    ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".neuron_lint_cache", ".eggs",
})
PY_SUFFIXES = (".py", ".pyi")
#: What a walk collects: Python files, notebooks (and manifests, see manifests.manifest_kind).
CHECKED_SUFFIXES = PY_SUFFIXES + (".ipynb",)
IGNORE_FILE_LIMIT = 1024 * 1024  # a .gitignore larger than this is not read


@dataclass(frozen=True)
class Missing:
    path: str
    reason: str


@dataclass(frozen=True)
class Skipped:
    """A file named on the command line that is neither Python, a notebook nor a manifest."""

    path: str
    reason: str = "not a Python file, skipped"


def _python_script(path: Path) -> bool:
    """A file without a suffix is checked when it starts with a Python shebang (``bin/train``).

    Anything but a regular file is passed on, for the reader to say what it is (never opened here:
    a FIFO would block)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return True
        with open(path, "rb") as fh:
            first = fh.readline(256)
    except OSError:
        return True  # the reader names the problem
    return first.startswith(b"#!") and b"python" in first


def is_checkable(path: Path) -> bool:
    """Whether a named file is one neuron-lint reads: Python, a notebook, a manifest, or a script."""
    name = path.name
    if name.endswith(CHECKED_SUFFIXES) or manifest_kind(path) is not None:
        return True
    return "." not in name.lstrip(".") and _python_script(path)


class _Ignore:
    """The .gitignore rules in force in one directory (stacked from the repository root)."""

    def __init__(self, base: Path, spec, parent: "_Ignore | None") -> None:
        self.base, self.spec, self.parent = base, spec, parent

    def ignored(self, path: Path, is_dir: bool) -> bool:
        node: _Ignore | None = self
        while node is not None:
            if node.spec is not None:
                try:
                    rel = path.relative_to(node.base).as_posix()
                except ValueError:
                    rel = None
                if rel is not None:
                    if is_dir:
                        rel += "/"
                    result = node.spec.check_file(rel)
                    if result.include is not None:  # a pattern (or a negation) decided
                        return bool(result.include)
            node = node.parent
        return False


def _read_gitignore(directory: Path, parent: _Ignore | None, names=(".gitignore",)) -> _Ignore | None:
    lines: list[str] = []
    for name in names:
        try:  # bounded, and never a pipe or device: a hostile checkout may plant either
            lines += read_source_bytes(directory / name, IGNORE_FILE_LIMIT).decode("utf-8", "replace").splitlines()
        except (OSError, SourceError):
            continue
    if not lines:
        return parent
    import pathspec

    try:
        spec = pathspec.GitIgnoreSpec.from_lines(lines)
    except Exception:  # a malformed pattern must not stop the scan
        return parent
    return _Ignore(directory, spec, parent)


def _repo_root(start: Path) -> Path | None:
    for d in (start, *start.parents):
        if os.path.exists(d / ".git"):  # never raises (Path.exists() does on 3.11 for EACCES)
            return d
    return None


def _ancestor_ignores(directory: Path) -> _Ignore | None:
    """The .gitignore files between the repository root and ``directory`` (exclusive), less the
    patterns that ignore ``directory`` itself: a folder named on the command line is checked even
    when an enclosing .gitignore ignores it (as ruff does); the other patterns still apply inside it."""
    root = _repo_root(directory)
    if root is None:
        return None
    chain: _Ignore | None = None
    exclude = root / ".git" / "info" / "exclude"
    if os.path.isfile(exclude):
        chain = _read_gitignore(root / ".git" / "info", None, ("exclude",))
        if chain is not None:
            chain.base = root
    rel_parts = directory.relative_to(root).parts
    for i in range(len(rel_parts)):  # root .. parent of `directory`; the walk reads its own
        chain = _read_gitignore(root.joinpath(*rel_parts[:i]), chain)
    return _without_patterns_ignoring(chain, directory)


def _without_patterns_ignoring(chain: _Ignore | None, directory: Path) -> _Ignore | None:
    """``chain`` with each pattern that matches ``directory`` (or a folder above it) dropped."""
    if chain is None:
        return None
    parent = _without_patterns_ignoring(chain.parent, directory)
    if chain.spec is None:
        return _Ignore(chain.base, None, parent)
    rel = directory.relative_to(chain.base).as_posix() + "/"
    kept = [p for p in chain.spec.patterns if not (p.include and p.match_file(rel) is not None)]
    if len(kept) == len(chain.spec.patterns):
        return _Ignore(chain.base, chain.spec, parent)
    import pathspec

    return _Ignore(chain.base, pathspec.GitIgnoreSpec(kept) if kept else None, parent)


def _excluded(path: Path, patterns: GlobSet) -> bool:
    """Whether ``exclude``/``extend-exclude`` (compiled once per run, see Settings.exclude_globs)
    match ``path``: its name, the whole path, a tail after a ``/``, or, for the patterns a
    configuration file anchored to its folder (see config.anchored), the absolute path."""
    return patterns.match(path)


def _force_excluded(path: Path, patterns: GlobSet) -> bool:
    """With ``force_exclude``: a named file is skipped when it or a folder above it is excluded."""
    if not patterns:
        return False
    rel = Path(os.path.normpath(path))
    return any(_excluded(p, patterns) for p in (rel, *rel.parents) if p.name)


def _kind(path: Path) -> tuple[str | None, str]:
    """("dir" | "file" | "other", "") for a path that exists, else (None, why it cannot be used).

    ``os.stat`` with the error kept, not ``Path.exists()``/``is_dir()``: on Python 3.11 those raise
    ``PermissionError`` for a path under a folder without search permission, and ``os.path.exists``
    would call such a path missing.
    """
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return (None, "no such file or directory") if not os.path.islink(path) else ("other", "")
    except ValueError:  # a NUL in the name
        return None, "no such file or directory"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "other", ""  # a symlink loop: the reader says so
        return None, f"cannot be read: {exc.strerror or exc}"
    return ("dir" if stat.S_ISDIR(st.st_mode) else "file" if stat.S_ISREG(st.st_mode) else "other"), ""


def iter_python_files(paths: list[str], settings: Settings | SettingsTree) -> Iterator[Path | Missing | Skipped]:
    """Yield files to check, without repeats: ``Missing`` for named paths that do not exist (an
    error), ``Skipped`` for named files that are not Python (a warning). With a
    :class:`~neuron_lint.config.per_file.SettingsTree`, excludes come from each file's own configuration."""
    seen: set[str] = set()
    respect_gitignore = base_of(settings).respect_gitignore
    for raw in paths:
        path = Path(raw)
        kind, why = _kind(path)
        if kind is None:
            yield Missing(raw, why)
            continue
        if kind == "dir":
            start = path.resolve() if not os.path.islink(path) else path.absolute()
            ignores = _ancestor_ignores(start) if respect_gitignore else None
            for file in _walk(path, ignores, settings, respect_gitignore):
                if isinstance(file, Missing):  # a folder that cannot be listed
                    yield file
                    continue
                key = os.path.normpath(os.path.abspath(file))
                if key not in seen:
                    seen.add(key)
                    yield file
        else:
            own = settings_for(settings, path)
            if own.force_exclude and _force_excluded(path, own.exclude_globs()):
                continue
            if kind == "file" and not is_checkable(path):
                yield Skipped(raw)
                continue
            key = os.path.normpath(os.path.abspath(path))
            if key not in seen:
                seen.add(key)
                yield path


def _has_pyvenv_cfg(directory: Path) -> bool:
    """Whether ``directory`` holds a virtual environment's ``pyvenv.cfg``.

    Raises ``OSError`` when the folder cannot be searched (``Path.exists()`` raised it on 3.11 and
    aborted the run; ``os.path.exists`` would hide it): the caller names the folder and goes on.
    """
    try:
        os.stat(directory / "pyvenv.cfg")
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return False  # a pyvenv.cfg that is a symlink loop is no virtual environment
        raise
    return True


def _walk(top: Path, ignores: _Ignore | None, settings, respect_gitignore: bool) -> Iterator[Path | Missing]:
    """The files under ``top``; each folder's entries are excluded by that folder's own settings
    (its nearest configuration file's ``exclude``, when ``settings`` is a SettingsTree)."""
    follow = base_of(settings).follow_symlinks
    stack: list[tuple[Path, _Ignore | None]] = [(top, ignores)]
    visited: set[tuple[int, int]] = set()
    while stack:
        directory, inherited = stack.pop()
        try:
            st = directory.stat()
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in visited:
            continue  # a symlink loop when following links
        visited.add((st.st_dev, st.st_ino))
        try:
            venv = _has_pyvenv_cfg(directory)
        except OSError as exc:  # no search permission: nothing in it can be checked
            yield Missing(str(directory), f"directory cannot be read: {exc.strerror or exc}")
            continue
        if venv and directory != top:
            continue  # a virtual environment
        here = _read_gitignore(directory.absolute(), inherited) if respect_gitignore else None
        excludes = settings_for(settings, directory, is_dir=True).exclude_globs()
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            continue  # removed (or replaced by a file) since it was found: nothing left to check
        except OSError as exc:  # no permission, I/O error: say so once, check the rest
            yield Missing(str(directory), f"directory cannot be read: {exc.strerror or exc}")
            continue
        subdirs: list[Path] = []
        for entry in entries:
            child = Path(entry.path)
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=follow)
                is_file = not is_dir and entry.is_file(follow_symlinks=follow)
            except OSError:
                continue
            if is_link and not follow:
                continue
            if is_dir:
                if entry.name in SKIP_DIRS or _excluded(child, excludes):
                    continue
                if here is not None and here.ignored(child.absolute(), True):
                    continue
                subdirs.append(child)
            elif is_file and (entry.name.endswith(CHECKED_SUFFIXES) or manifest_kind(child) is not None):
                if _excluded(child, excludes):
                    continue
                if here is not None and here.ignored(child.absolute(), False):
                    continue
                yield child
        stack.extend((d, here) for d in reversed(subdirs))
