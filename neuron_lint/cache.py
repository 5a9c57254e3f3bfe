"""A content-addressed cache of per-file results, so an unchanged file is never parsed twice.

Layout: ``<project root>/.neuron_lint_cache/`` (the nearest directory above the working
directory holding ``pyproject.toml`` or ``.git``, else the working directory), with its own
``.gitignore`` (``*``) so git never sees it. Each entry is one small JSON file named by a hash of

* the file's bytes and the path it is reported under (findings carry the path, and
  per-file settings depend on it),
* neuron-lint's version and a fingerprint of its own code (so an edited checkout never serves
  stale results),
* a hash of the rule catalog (every ``rules/*.toml`` byte),
* every setting that can change a finding (all :class:`Settings` fields except the few that only
  choose files or the output format).

Entries hold a file's whole result: findings and file errors (a syntax error is cached too). The cache is a
courtesy: a corrupt, unreadable or unwritable cache never fails a run, it is simply not used.
Entries are JSON, not pickle, so a cache planted in a repository cannot run code.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

from . import __version__

CACHE_DIR_NAME = ".neuron_lint_cache"
#: Bump when the entry format changes.
FORMAT = 1
#: Settings that only decide which files are read or how results are printed.
_NOT_IN_KEY = frozenset({"output_format", "exclude", "extend_exclude", "respect_gitignore", "follow_symlinks"})


def project_root(start: Path | None = None) -> Path:
    """The nearest directory (from ``start``, default the working directory) with pyproject.toml or .git."""
    start = (start or Path.cwd()).absolute()
    for d in (start, *start.parents):
        if (d / "pyproject.toml").is_file() or (d / ".git").exists():
            return d
    return start


def default_cache_dir() -> Path:
    return project_root() / CACHE_DIR_NAME


def _hash_files(h, files) -> None:
    for f in sorted(files):
        try:
            data = f.read_bytes()
        except OSError:
            data = b""
        h.update(f.name.encode() + b"\0" + len(data).to_bytes(8, "little") + data)


def engine_fingerprint() -> str:
    """neuron-lint's version, the format, and a hash of its own Python files and rule files."""
    from .catalog import rules_dir

    here = Path(__file__).resolve().parent
    h = hashlib.blake2b(f"{__version__}\0{FORMAT}\0".encode(), digest_size=16)
    _hash_files(h, (p for p in here.rglob("*.py")))
    _hash_files(h, rules_dir().glob("*.toml"))
    return h.hexdigest()


def settings_fingerprint(settings) -> str:
    """Every setting that can change a finding, including ones added after this was written."""
    parts = []
    for f in dataclasses.fields(settings):
        if f.name not in _NOT_IN_KEY:
            parts.append(f"{f.name}={getattr(settings, f.name)!r}")
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=16).hexdigest()


# ---------------------------------------------------------------------------- encoding
def _encode(value):
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"@": type(value).__name__, **{f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    return value


@lru_cache(maxsize=1)
def _decoder():
    from . import model

    known = {name: getattr(model, name) for name in ("CheckResult", "Finding", "Fix", "Edit", "FileError")}
    tuple_fields = {"Fix": ("edits", "target", "data")}

    def tuples(v):  # a fix's plan is tuples all the way down (it is hashed and compared)
        return tuple(tuples(x) for x in v) if isinstance(v, list) else v

    def decode(value):
        if isinstance(value, dict):
            kind = value.get("@")
            fields = {k: decode(v) for k, v in value.items() if k != "@"}
            if kind is None:
                return fields
            cls = known[kind]  # KeyError: an entry from elsewhere; treated as a miss
            for name in tuple_fields.get(kind, ()):
                if name in fields:
                    fields[name] = tuples(fields[name]) if name != "edits" else tuple(fields[name])
            return cls(**fields)
        if isinstance(value, list):
            return [decode(v) for v in value]
        return value

    return decode


class Cache:
    """Per-file results keyed by content, engine, catalog and settings. Never raises."""

    def __init__(self, directory: Path, settings) -> None:
        self.directory = Path(directory)
        self.prefix = hashlib.blake2b(
            f"{engine_fingerprint()}\0{settings_fingerprint(settings)}".encode(), digest_size=16
        ).hexdigest()
        self.writable = True
        self.hits = self.misses = 0

    def key(self, data: bytes, shown_path: str) -> str:
        h = hashlib.blake2b(data, digest_size=20)
        h.update(b"\0" + shown_path.encode("utf-8", "surrogateescape") + b"\0" + self.prefix.encode())
        return h.hexdigest()

    def _entry(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key[2:]}.json"

    def get(self, key: str):
        """``(result, lookups)`` stored under ``key``, or None.

        ``lookups`` are the (file, package, answer) file-system questions the result depended on;
        the caller re-asks them before trusting the result.
        """
        try:
            with open(self._entry(key), "rb") as fh:
                entry = json.loads(fh.read())
            result = _decoder()(entry["result"])
            lookups = [(str(p), str(t), bool(a)) for p, t, a in entry.get("lookups", ())]
            if type(result).__name__ != "CheckResult":
                raise TypeError("not a result")
        except Exception:  # missing, truncated, from another format: a miss
            self.misses += 1
            return None
        self.hits += 1
        return result, lookups

    def put(self, key: str, result, lookups=()) -> None:
        """Remember a file's :class:`~neuron_lint.model.CheckResult` (findings and errors)."""
        if not self.writable:
            return
        try:
            entry = {"result": _encode(result), "lookups": [list(x) for x in lookups]}
            payload = json.dumps(entry, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
            target = self._entry(key)
            if not target.parent.is_dir():
                self._prepare()
                target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(payload)
                os.replace(tmp, target)  # readers see the old entry or the new one, never half
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except Exception:  # read-only project, full disk, ...: run on without the cache
            self.writable = False

    def _prepare(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        ignore = self.directory / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# Created by neuron-lint; the cache is never committed.\n*\n", encoding="utf-8")


def clean(directory: Path | None = None) -> bool:
    """Remove the cache folder. True when there was one."""
    directory = Path(directory) if directory is not None else default_cache_dir()
    if not directory.exists():
        return False
    if directory.name != CACHE_DIR_NAME and not (directory / ".gitignore").is_file():
        raise ValueError(f"{directory} does not look like a neuron-lint cache; not removing it")
    shutil.rmtree(directory)
    return True
