"""Read Python source files the way Python itself does: BOM, coding cookie, line endings."""

from __future__ import annotations

import codecs
import os
import re
import stat
from dataclasses import dataclass

_COOKIE_RE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


class SourceError(Exception):
    """The file cannot be decoded; the message says why."""


@dataclass(frozen=True)
class Source:
    text: str  # decoded, with the original line endings
    encoding: str  # the codec to write it back with
    bom: bool
    newline: str  # the dominant line ending ("\n", "\r\n" or "\r")


def read_source_bytes(path, limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes.

    Raises :class:`SourceError` for a FIFO, device or socket (opened without blocking, never read,
    so ``/dev/zero`` or a pipe named ``x.py`` cannot hang or fill memory) and for a file over the
    limit, even one that grows after it was measured. Other failures raise ``OSError``.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    with open(fd, "rb", closefd=True) as fh:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise SourceError("is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise SourceError("skipped: not a regular file (a pipe, device or socket)")
        if st.st_size > limit:
            raise SourceError(_over_limit(st.st_size, limit))
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise SourceError(_over_limit(len(data), limit, grew=True))
    return data


def _over_limit(size: int, limit: int, grew: bool = False) -> str:
    mib = 1024 * 1024
    what = "grew past" if grew else f"{size / mib:.1f} MB is over"
    return f"skipped: {what} the {limit / mib:g} MB size limit for one file"


def detect_encoding(data: bytes) -> tuple[str, bool]:
    """PEP 263: a UTF-8 BOM, else a coding cookie on line 1 or 2, else UTF-8."""
    if data.startswith(codecs.BOM_UTF8):
        return "utf-8", True
    lines = data.split(b"\n", 2)[:2]
    for i, line in enumerate(lines):
        m = _COOKIE_RE.match(line)
        if m:
            name = m.group(1).decode("ascii", "replace")
            try:
                info = codecs.lookup(name)
            except LookupError:
                raise SourceError(f"unknown encoding {name!r} in coding cookie") from None
            if not getattr(info, "_is_text_encoding", True):  # rot13, base64, zlib, hex...: Python refuses them too
                raise SourceError(f"cannot be decoded: `{name}` is not a text encoding")
            return info.name, False
        if i == 0 and line.strip() and not line.lstrip().startswith(b"#"):
            break  # the cookie may only be on line 2 if line 1 is a comment or blank
    return "utf-8", False


def dominant_newline(text: str) -> str:
    crlf = text.count("\r\n")
    cr = text.count("\r") - crlf
    lf = text.count("\n") - crlf
    if crlf > lf and crlf >= cr:
        return "\r\n"
    if cr > lf and cr > crlf:
        return "\r"
    return "\n"


def decode(data: bytes) -> Source:
    if b"\x00" in data:
        raise SourceError("contains a NUL byte (binary file?)")
    encoding, bom = detect_encoding(data)
    body = data[len(codecs.BOM_UTF8):] if bom else data
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as exc:
        raise SourceError(
            f"cannot be decoded as {encoding} (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
        ) from None
    except LookupError:  # a codec that decodes to bytes, not text
        raise SourceError(f"cannot be decoded: `{encoding}` is not a text encoding") from None
    except (UnicodeError, ValueError, TypeError) as exc:  # a codec's own complaint (idna, punycode...)
        raise SourceError(f"cannot be decoded as {encoding}: {exc}") from None
    return Source(text, encoding, bom, dominant_newline(text))


def encode(source: Source, text: str) -> bytes:
    data = text.encode(source.encoding)
    return codecs.BOM_UTF8 + data if source.bom else data
