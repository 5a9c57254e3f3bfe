"""Replace a file's bytes in one step: a temporary file in the same folder, then a rename.

The write is refused when the file changed on disk after it was read (:class:`FileChanged`) or
may not be written (:class:`ReadOnly`); the new file keeps the old one's mode and, where allowed,
owner; SIGINT and SIGTERM wait until the swap or the clean-up is done.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import tempfile
import threading


class FileChanged(Exception):
    """The file on disk is not the one that was read."""


def _same_file(path: str, data: bytes, st: os.stat_result) -> bool:
    try:
        now = os.stat(path)
        with open(path, "rb") as fh:
            current = fh.read()
    except OSError:
        return False
    return current == data and now.st_size == st.st_size and now.st_mtime_ns == st.st_mtime_ns


def atomic_write(path: str, data: bytes, original: bytes, st: os.stat_result) -> None:
    """Replace ``path`` with ``data`` unless it no longer holds ``original``; keeps the file mode."""
    target = os.path.realpath(path)
    if not _same_file(target, original, st):
        raise FileChanged(path)
    # The rename below needs only a writable folder; the file's own protection is what counts:
    # no write bit at all (respected even by root), or a file this user may not write.
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not _may_write(target):
        raise ReadOnly(path)
    directory, name = os.path.split(target)
    with signals_deferred():  # SIGINT/SIGTERM land after the swap or the clean-up, never between
        # a short name whatever the file's (a 255-byte name leaves no room for a long suffix)
        fd, tmp = tempfile.mkstemp(prefix=f".{name[:TEMP_NAME_CHARS]}.", suffix=".nl-tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            _keep_owner(tmp, st)  # before chmod: changing the owner clears setuid and setgid
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
            if not _same_file(target, original, st):  # last look, right before the swap
                raise FileChanged(path)
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise


class ReadOnly(Exception):
    """The file has no write permission bit, or this user may not write it; a fix leaves it alone."""


#: Characters of the file's name kept in the temporary file's name.
TEMP_NAME_CHARS = 32


def _may_write(path: str) -> bool:
    """May the effective user write ``path`` itself (not only replace it in its folder)?"""
    try:
        if os.access in os.supports_effective_ids:
            return os.access(path, os.W_OK, effective_ids=True)
        return os.access(path, os.W_OK)
    except OSError:
        return False


def _keep_owner(tmp: str, st: os.stat_result) -> None:
    """Give the new file the old one's owner and group where we may (as root, or a group we are in)."""
    if not hasattr(os, "chown"):
        return
    try:
        os.chown(tmp, st.st_uid, st.st_gid)
    except OSError:
        try:
            os.chown(tmp, -1, st.st_gid)
        except OSError:
            pass


@contextlib.contextmanager
def signals_deferred():
    """Hold SIGINT and SIGTERM until the block is done, then deliver them as they would have been.

    Only the main thread can handle signals; elsewhere the block runs unprotected.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    wanted = [s for s in (getattr(signal, "SIGINT", None), getattr(signal, "SIGTERM", None)) if s is not None]
    previous = {}
    for sig in wanted:
        try:
            previous[sig] = signal.signal(sig, lambda signum, frame: caught.append(signum))
        except (ValueError, OSError):  # not allowed here
            pass
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        for sig in caught[:1]:
            signal.raise_signal(sig)
