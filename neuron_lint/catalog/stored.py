"""The parsed TOML of the rule files, kept between runs.

Reading the catalog's 75 TOML files with ``tomllib`` is about a tenth of a one-file ``check``.
Their parsed contents are kept as one JSON file in the user's cache folder
(``$XDG_CACHE_HOME/neuron-lint``, default ``~/.cache/neuron-lint``, beside the cache's key), named
after the catalog's folder and each file's name, size and modification time, so that a changed,
added or removed rule file is read again (what ``tomllib`` makes of a file depends on nothing
else). The data is validated by :mod:`neuron_lint.catalog.loading` exactly as if it came from the
files. A cache file that is not
this user's, is writable by others, or does not read back is ignored; one that cannot be written is
not written. ``NEURON_LINT_NO_CACHE=1`` turns it off.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Callable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

MAX_BYTES = 16 << 20


def rule_data(files: list[Path], parse_error: Callable[[Path, Exception], Exception]) -> list[dict]:
    """The parsed TOML of each of ``files``; ``parse_error(path, exc)`` is raised for a file that is
    not valid TOML."""
    stored = _stored_path(files)
    if stored is not None:
        data = _read(stored, len(files))
        if data is not None:
            return data
    data = []
    for path in files:
        try:
            data.append(tomllib.loads(path.read_text(encoding="utf-8")))
        except tomllib.TOMLDecodeError as exc:
            raise parse_error(path, exc) from None
    if stored is not None:
        _write(stored, data)
    return data


def _stored_path(files: list[Path]) -> Path | None:
    if os.environ.get("NEURON_LINT_NO_CACHE", "") not in ("", "0"):
        return None
    from ..io.user_cache import user_cache_dir

    folder = user_cache_dir()
    if folder is None:
        return None
    try:
        stats = [(f.name, st.st_size, st.st_mtime_ns) for f in files for st in (os.stat(f),)]
    except OSError:
        return None
    where = str(files[0].parent.resolve()) if files else ""
    digest = hashlib.sha256(json.dumps([where, stats]).encode()).hexdigest()[:24]
    return folder / f"catalog-{digest}.json"


def _read(path: Path, count: int) -> list[dict] | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if hasattr(os, "getuid") and (st.st_uid != os.getuid() or st.st_mode & 0o022) or st.st_size > MAX_BYTES:
            return None
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = json.loads(fh.read())
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    if not isinstance(data, list) or len(data) != count or not all(isinstance(d, dict) for d in data):
        return None
    return data


def _write(path: Path, data: list[dict]) -> None:
    """Write ``data`` in one step (a concurrent run writes the same bytes), if JSON keeps it as it is."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        text = json.dumps(data)
        if json.loads(text) != data:  # a TOML date or time: not worth keeping
            return
        os.makedirs(path.parent, mode=0o700, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except (OSError, TypeError, ValueError):
        try:
            os.unlink(tmp)
        except OSError:
            pass
