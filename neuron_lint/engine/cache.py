"""A content-addressed cache of per-file results, so an unchanged file is never parsed twice.

Layout: ``<project root>/.neuron_lint_cache/`` (the nearest directory above the working
directory holding ``pyproject.toml`` or ``.git``, else the working directory), with its own
``.gitignore`` (``*``) so git never sees it. Each entry is one small file named by a hash of

* the file's bytes and the path it is reported under (findings carry the path, and
  per-file settings depend on it),
* neuron-lint's version and a fingerprint of its own code (so an edited checkout never serves
  stale results),
* a hash of the rule catalog (every ``rules/*.toml`` byte),
* every setting that can change a finding (all :class:`Settings` fields except the few that only
  choose files or the output format),
* the line length of the file's project (its formatter's configuration), which the fixes a
  finding offers keep within.

Entries hold a file's whole result: findings and file errors (a syntax error is cached too). The cache is a
courtesy: a corrupt, unreadable or unwritable cache never fails a run, it is simply not used.

Trust: the cache folder sits in the project, so a repository can commit one. Nothing in it is
believed on its own say-so:

* an entry is ``<HMAC-SHA256 hex>\\n<JSON>``; the MAC covers the entry's name and its JSON and is
  keyed by a random secret kept outside the project (:func:`key_path`, mode 0600), so a planted
  or edited entry is a miss, never a result;
* entries are JSON, not pickle (a cache cannot run code), and the decoded objects are checked
  field by field against the dataclasses of :mod:`neuron_lint.model` before use;
* entries, shard folders and the cache folder are opened without following links, entries only
  when they are regular files of at most :data:`MAX_ENTRY_BYTES`; a cache folder that is a
  symbolic link is not used at all, and nothing is written through a link.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import os
import secrets
import shutil
import stat
import tempfile
from pathlib import Path

from .. import __version__
from .cache_entries import Invalid, decode_entry, encode

CACHE_DIR_NAME = ".neuron_lint_cache"
#: Bump when the entry format changes.
FORMAT = 2
#: Settings that only decide which files are read or how results are printed.
_NOT_IN_KEY = frozenset({"output_format", "exclude", "extend_exclude", "respect_gitignore", "follow_symlinks"})
#: The largest entry read or written (bytes, MAC line included); a larger result is simply not kept.
MAX_ENTRY_BYTES = 8 * 1024 * 1024
#: Length of the secret the entries are authenticated with.
KEY_BYTES = 32
_MAC_HEX = 64  # hex digits of an HMAC-SHA256

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_READ_FLAGS = os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC | _O_BINARY
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC | _O_BINARY
_DIR_FLAGS = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
#: Open every component relative to its folder's descriptor, never by a path a link could redirect.
_DIR_FD = bool(_O_NOFOLLOW and _O_DIRECTORY and os.open in os.supports_dir_fd and os.mkdir in os.supports_dir_fd)
_GITIGNORE = b"# Created by neuron-lint; the cache is never committed.\n*\n"


def project_root(start: Path | None = None) -> Path:
    """The nearest directory (from ``start``, default the working directory) with pyproject.toml or .git."""
    start = (start or Path.cwd()).absolute()
    for d in (start, *start.parents):
        if os.path.isfile(d / "pyproject.toml") or os.path.exists(d / ".git"):  # never raise (an unsearchable folder)
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
    from ..catalog.loading import rules_dir

    package = Path(__file__).resolve().parent.parent  # all of neuron_lint/, not only engine/
    h = hashlib.blake2b(f"{__version__}\0{FORMAT}\0".encode(), digest_size=16)
    _hash_files(h, (p for p in package.rglob("*.py")))
    _hash_files(h, rules_dir().glob("*.toml"))
    return h.hexdigest()


def settings_fingerprint(settings) -> str:
    """Every setting that can change a finding, including ones added after this was written."""
    parts = []
    for f in dataclasses.fields(settings):
        if f.name not in _NOT_IN_KEY:
            parts.append(f"{f.name}={getattr(settings, f.name)!r}")
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=16).hexdigest()


# ---------------------------------------------------------------------------- bounded reads
def _read_open_file(fd: int, limit: int) -> bytes | None:
    """The contents of the open ``fd`` if it is a regular file of at most ``limit`` bytes, else None.

    Reads at most ``limit + 1`` bytes whatever the file claims (it may grow while read).
    """
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
        return None
    chunks, total = [], 0
    while total <= limit:
        chunk = os.read(fd, min(limit + 1 - total, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return None if total > limit else b"".join(chunks)


def _read_bounded(name, limit: int, dir_fd: int | None = None) -> bytes | None:
    """Open ``name`` without following a link (where the system can) or waiting on a pipe, and read
    it if it is a regular file of at most ``limit`` bytes."""
    fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd) if dir_fd is not None else os.open(name, _READ_FLAGS)
    try:
        return _read_open_file(fd, limit)
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------- the secret
def key_path() -> Path | None:
    """Where the secret that authenticates entries lives: ``$XDG_CACHE_HOME/neuron-lint/key``
    (default ``~/.cache/neuron-lint/key``), outside every project. None without a home."""
    from ..io.user_cache import user_cache_dir

    folder = user_cache_dir()
    return folder / "key" if folder is not None else None


def _read_key(path: Path) -> bytes:
    fd = os.open(path, _READ_FLAGS)
    try:
        st = os.fstat(fd)
        if hasattr(os, "getuid") and (st.st_uid != os.getuid() or st.st_mode & 0o077):
            raise PermissionError(f"{path} must belong to this user and be readable by no one else")
        data = _read_open_file(fd, KEY_BYTES)
    finally:
        os.close(fd)
    if data is None or len(data) != KEY_BYTES:
        raise ValueError(f"{path} is not a neuron-lint key")
    return data


def _create_key(path: Path) -> None:
    """Create the key file at once with its whole contents (a concurrent run keeps the first one)."""
    os.makedirs(path.parent, mode=0o700, exist_ok=True)
    tmp = path.parent / f".key-{secrets.token_hex(8)}"
    fd = os.open(tmp, _WRITE_FLAGS, 0o600)
    try:
        try:
            _write_all(fd, secrets.token_bytes(KEY_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # fails if another run made one meanwhile: use theirs
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links
            if not os.path.lexists(path):
                os.replace(tmp, path)
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


_SECRETS: dict[str, bytes] = {}


def load_secret() -> bytes | None:
    """This user's secret (created on first use), or None when it cannot be made or trusted."""
    path = key_path()
    if path is None:
        return None
    known = _SECRETS.get(str(path))
    if known is not None:
        return known
    try:
        try:
            secret = _read_key(path)
        except FileNotFoundError:
            _create_key(path)
            secret = _read_key(path)
    except Exception:  # no home, a read-only one, a key someone else could read...: no cache
        return None
    _SECRETS[str(path)] = secret
    return secret


def _mac(secret: bytes, key: str, payload: bytes) -> bytes:
    msg = b"neuron-lint cache entry\0" + key.encode("ascii") + b"\0" + payload
    return hmac.new(secret, msg, hashlib.sha256).hexdigest().encode("ascii")


# ---------------------------------------------------------------------------- the cache
class _Unusable(Exception):
    """The cache folder is a link (or otherwise not to be trusted): run without the cache."""


class Cache:
    """Per-file results keyed by content, engine, catalog and settings. Never raises."""

    def __init__(self, directory: Path, settings) -> None:
        self.directory = Path(directory)
        self.settings = settings
        self._engine = engine_fingerprint()
        self.prefix = self._prefix(settings)
        self.hits = self.misses = 0
        self._secret = load_secret()
        #: False: not read and not written for the rest of the run (no secret, or a linked folder).
        self.enabled = self._secret is not None and not os.path.islink(self.directory)
        self.writable = self.enabled

    def key(self, data: bytes, shown_path: str, settings=None, context: str = "") -> str:
        """The entry's key: the bytes, the path they are reported under, and the engine and settings
        (``settings``: the file's own, when they are not the run's); ``context``: what else about the
        file's surroundings its result depends on (the line length its fixes keep within)."""
        prefix = self.prefix if settings is None or settings is self.settings else self._prefix(settings)
        h = hashlib.blake2b(data, digest_size=20)
        h.update(b"\0" + shown_path.encode("utf-8", "surrogateescape") + b"\0" + prefix.encode())
        h.update(b"\0" + context.encode("utf-8", "surrogateescape"))
        return h.hexdigest()

    def _prefix(self, settings) -> str:
        """The engine and the settings, hashed once per Settings object."""
        def make() -> str:
            return hashlib.blake2b(f"{self._engine}\0{settings_fingerprint(settings)}".encode(), digest_size=16).hexdigest()

        memo = getattr(settings, "_memo", None)
        return memo(("cache-prefix", self._engine), make) if memo is not None else make()

    def _entry(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key[2:]}.json"

    # -- folders, opened so that no link is ever followed
    def _open_root(self, create: bool = False) -> int | None:
        """A descriptor of the cache folder; None when there is none (and ``create`` is false)."""
        try:
            return os.open(self.directory, _DIR_FLAGS)
        except FileNotFoundError:
            if not create:
                return None
        except OSError:
            if os.path.islink(self.directory):
                self.enabled = self.writable = False
                raise _Unusable(str(self.directory)) from None
            raise
        self.directory.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(self.directory)
        except FileExistsError:  # made meanwhile, or a link planted meanwhile: the open below decides
            pass
        return self._open_root()

    def _open_shard(self, root: int, name: str, create: bool) -> int | None:
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=root)
        except FileNotFoundError:
            if not create:
                return None
        try:
            fd = os.open(".gitignore", _WRITE_FLAGS, 0o644, dir_fd=root)
        except FileExistsError:  # there already (or something else is: it is not written through)
            pass
        else:
            try:
                os.write(fd, _GITIGNORE)
            finally:
                os.close(fd)
        try:
            os.mkdir(name, dir_fd=root)
        except FileExistsError:
            pass
        return os.open(name, _DIR_FLAGS, dir_fd=root)

    def _read(self, key: str) -> bytes | None:
        if not _DIR_FD:
            return self._read_by_path(key)
        root = self._open_root()
        if root is None:
            return None
        try:
            shard = self._open_shard(root, key[:2], create=False)
            if shard is None:
                return None
            try:
                return _read_bounded(f"{key[2:]}.json", MAX_ENTRY_BYTES, dir_fd=shard)
            finally:
                os.close(shard)
        finally:
            os.close(root)

    def _read_by_path(self, key: str) -> bytes | None:
        """Where descriptors relative to a folder are missing (Windows): ask about links first."""
        entry = self._entry(key)
        if os.path.islink(self.directory):
            self.enabled = self.writable = False
            return None
        if os.path.islink(entry.parent) or os.path.islink(entry):
            return None
        return _read_bounded(entry, MAX_ENTRY_BYTES)

    def get(self, key: str):
        """``(result, lookups)`` stored under ``key``, or None.

        ``lookups`` are the file-system questions the result depended on (a package lookup, a project
        read as a whole: :mod:`~neuron_lint.engine.project_facts`); the caller re-asks them before
        trusting the result.
        """
        try:
            if not self.enabled:
                raise _Unusable("disabled")
            data = self._read(key)
            if data is None or len(data) <= _MAC_HEX or data[_MAC_HEX:_MAC_HEX + 1] != b"\n":
                raise Invalid("missing or not an entry")
            payload = data[_MAC_HEX + 1:]
            if not hmac.compare_digest(data[:_MAC_HEX], _mac(self._secret, key, payload)):
                raise Invalid("not made by this user's neuron-lint")
            result, lookups = decode_entry(payload)
        except Exception:  # missing, truncated, forged, from another format, a link or a pipe: a miss
            self.misses += 1
            return None
        self.hits += 1
        return result, lookups

    def put(self, key: str, result, lookups=()) -> None:
        """Remember a file's :class:`~neuron_lint.model.CheckResult` (findings and errors)."""
        if not self.writable:
            return
        try:
            entry = {"result": encode(result), "lookups": [list(x) for x in lookups]}
            payload = json.dumps(entry, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
            data = _mac(self._secret, key, payload) + b"\n" + payload
            if len(data) > MAX_ENTRY_BYTES:
                return  # too large to read back: that file is simply checked every time
            if _DIR_FD:
                self._write(key, data)
            else:
                self._write_by_path(key, data)
        except Exception:  # read-only project, full disk, a link in the way...: run on without the cache
            self.writable = False

    def _write(self, key: str, data: bytes) -> None:
        root = self._open_root(create=True)
        try:
            shard = self._open_shard(root, key[:2], create=True)
            try:
                tmp = f".tmp-{secrets.token_hex(8)}"
                fd = os.open(tmp, _WRITE_FLAGS, 0o600, dir_fd=shard)
                try:
                    try:
                        _write_all(fd, data)
                    finally:
                        os.close(fd)
                    # readers see the old entry or the new one, never half; a link there is replaced, not followed
                    os.replace(tmp, f"{key[2:]}.json", src_dir_fd=shard, dst_dir_fd=shard)
                except BaseException:
                    try:
                        os.unlink(tmp, dir_fd=shard)
                    except OSError:
                        pass
                    raise
            finally:
                os.close(shard)
        finally:
            os.close(root)

    def _write_by_path(self, key: str, data: bytes) -> None:
        target = self._entry(key)
        if os.path.islink(self.directory) or os.path.islink(target.parent):
            raise _Unusable(str(target.parent))
        target.parent.mkdir(parents=True, exist_ok=True)
        ignore = self.directory / ".gitignore"
        if not os.path.lexists(ignore):
            ignore.write_bytes(_GITIGNORE)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        try:
            try:
                _write_all(fd, data)
            finally:
                os.close(fd)
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def clean(directory: Path | None = None) -> bool:
    """Remove the cache folder. True when there was one."""
    directory = Path(directory) if directory is not None else default_cache_dir()
    if not os.path.exists(directory):
        return False
    if directory.name != CACHE_DIR_NAME and not os.path.isfile(directory / ".gitignore"):
        raise ValueError(f"{directory} does not look like a neuron-lint cache; not removing it")
    shutil.rmtree(directory)
    return True
