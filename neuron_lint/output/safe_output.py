"""The one output layer: everything neuron-lint writes to standard output and standard error.

Text that comes from the scanned tree (file names, messages built from it, source lines) can hold
anything a file system allows: terminal control sequences (ESC, BEL), bytes that are not UTF-8
(they reach Python as lone surrogates, ``\\udcff`` for the byte ``0xff``), bidirectional overrides.
The streams themselves can be hostile too: an ASCII-only locale, a reader that goes away
(``| head -1``), a full disk, ``COLUMNS=0``. This module is where all of that is handled:

- :func:`escape` shows control characters visibly (``\\x1b``, ``\\u202e``; an undecodable byte as
  ``\\xff``); the terminal formats (full, concise, github, the report's terminal view, every
  message on stderr) pass each piece of untrusted text through it.
- :func:`unicode_safe` makes a machine document (JSON, SARIF, HTML) valid UTF-8: an undecodable
  byte becomes U+FFFD. :func:`uri_path` percent-encodes a path's real bytes (SARIF URIs).
- :func:`install` wraps ``sys.stdout`` and ``sys.stderr``: a character the stream's encoding
  cannot hold is written as a backslash escape; a closed pipe ends the output quietly (the run
  keeps its exit code); any other write error (ENOSPC, EIO) on stdout is one line on stderr and,
  through :func:`finish`, exit code 2.
- :func:`console_width` is the width for rich consoles: an unusable ``COLUMNS`` (0, negative,
  not a number) means "unknown", not "zero columns".

Stdlib only: the start-up path (``--version``, concise ``check``) imports it.
"""

from __future__ import annotations

import codecs
import errno
import os
import re
import sys
from collections.abc import Callable
from typing import TextIO

EXIT_OUTPUT_FAILED = 2
#: The width used when COLUMNS is set but unusable and the stream is not a terminal.
FALLBACK_WIDTH = 80
#: The codec error handler installed on stdout (registered below).
STDOUT_ERRORS = "neuron_lint.output"

# C0 controls, DEL, C1 controls, lone surrogates (undecodable bytes), and the bidirectional
# formatting characters that reorder what a terminal shows ("Trojan source").
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_SURROGATES = re.compile("[\ud800-\udfff]")


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _visible(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    o = ord(ch)
    if 0xDC80 <= o <= 0xDCFF:  # a byte that was not UTF-8, as os.fsdecode gives it back
        return f"\\x{o - 0xDC00:02x}"
    if o < 0x100:
        return f"\\x{o:02x}"
    return f"\\u{o:04x}"


def escape(text: object, keep: str = "") -> str:
    """``text`` safe for a terminal: each control character (except those in ``keep``) made visible."""
    text = str(text)
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(lambda m: m.group() if m.group() in keep else _visible(m.group()), text)


def unicode_safe(text: str) -> str:
    """``text`` encodable as strict UTF-8: each lone surrogate (an undecodable byte) becomes U+FFFD."""
    return _SURROGATES.sub("\ufffd", text) if _SURROGATES.search(text) else text


def uri_path(path: str) -> bytes:
    """The bytes of ``path`` as the file system has them, for percent-encoding into a URI."""
    try:
        return os.fsencode(path)
    except UnicodeEncodeError:  # a surrogate os.fsdecode cannot have made: keep what can be kept
        return path.encode("utf-8", "replace")


def _stdout_errors(exc: UnicodeError) -> tuple[str | bytes, int]:
    """Codec error handler for stdout: an undecodable byte goes out as itself (a diff stays
    applicable), any other character the encoding lacks as a backslash escape."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    ch = exc.object[exc.start]
    o = ord(ch)
    if 0xDC80 <= o <= 0xDCFF:
        return bytes([o - 0xDC00]), exc.start + 1
    return ch.encode("ascii", "backslashreplace").decode("ascii"), exc.start + 1


codecs.register_error(STDOUT_ERRORS, _stdout_errors)


class GuardedStream:
    """A text stream that never raises for the reader's or the disk's sake.

    Writes pass to the wrapped stream. A closed pipe (EPIPE, ECONNRESET) makes it quiet: later
    writes are dropped, and the file descriptor is pointed at ``/dev/null`` so that Python's own
    flush at exit has nothing to complain about. Any other ``OSError`` does the same after calling
    ``on_failure`` once. ``buffer`` is hidden on purpose, so that nothing (click's ``echo`` on an
    ASCII stream) writes around the guard.
    """

    def __init__(self, inner: TextIO, on_failure: Callable[[OSError], None] | None = None) -> None:
        self._inner = inner
        self._on_failure = on_failure
        self.reader_gone = False
        self.failure: OSError | None = None

    @property
    def dead(self) -> bool:
        return self.reader_gone or self.failure is not None

    def _fail(self, exc: OSError) -> None:
        if self.dead:
            return
        if isinstance(exc, BrokenPipeError) or exc.errno in (errno.EPIPE, errno.ECONNRESET):
            self.reader_gone = True
        else:
            self.failure = exc
        self._silence()
        if self.failure is not None and self._on_failure is not None:
            self._on_failure(exc)

    def _silence(self) -> None:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self._inner.fileno())
            finally:
                os.close(devnull)
        except (OSError, ValueError, AttributeError):
            return
        try:  # what is still buffered drains into /dev/null now, not at exit
            self._inner.flush()
        except (OSError, ValueError):
            pass

    def write(self, text: str) -> int:
        if self.dead:
            return len(text)
        try:
            try:
                return self._inner.write(text)
            except UnicodeEncodeError:  # a stream whose error handler could not be set
                encoding = getattr(self._inner, "encoding", None) or "ascii"
                self._inner.write(text.encode(encoding, "backslashreplace").decode(encoding, "replace"))
                return len(text)
        except OSError as exc:
            self._fail(exc)
            return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def write_bytes(self, data: bytes) -> int:
        """Bytes as they are (``fix -`` writes the file's own encoding and line endings), guarded the same way."""
        if self.dead:
            return len(data)
        try:
            self._inner.flush()
            self._inner.buffer.write(data)
            self._inner.buffer.flush()
        except OSError as exc:
            self._fail(exc)
        return len(data)

    def flush(self) -> None:
        if self.dead:
            return
        try:
            self._inner.flush()
        except OSError as exc:
            self._fail(exc)
        except ValueError:  # already closed
            pass

    def __getattr__(self, name: str):
        if name == "buffer":
            raise AttributeError(name)
        return getattr(self._inner, name)


class _Closed:
    """What ``sys.stdout`` is when the process was started without one (``>&-``): writes vanish."""

    encoding = "utf-8"
    errors = "strict"

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError(errno.EBADF, "standard output is closed")


class BinaryOut:
    """A binary stream over standard output that goes through its guard when there is one."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, data: bytes) -> int:
        if hasattr(self._stream, "write_bytes"):
            return self._stream.write_bytes(data)
        self._stream.flush()
        written = self._stream.buffer.write(data)
        self._stream.buffer.flush()
        return written


def _report_stdout_failure(exc: OSError) -> None:
    reason = exc.strerror or str(exc)
    sys.stderr.write(f"neuron-lint: error: cannot write the output: {escape(reason)}\n")
    sys.stderr.flush()


def install() -> None:
    """Route ``sys.stdout`` and ``sys.stderr`` through :class:`GuardedStream` (once per process)."""
    if not isinstance(sys.stderr, GuardedStream):
        err = sys.stderr if sys.stderr is not None else _Closed()
        sys.stderr = GuardedStream(err)  # type: ignore[assignment]
    if not isinstance(sys.stdout, GuardedStream):
        out = sys.stdout
        if out is None:
            out = _Closed()
        else:
            try:
                out.reconfigure(errors=STDOUT_ERRORS)  # type: ignore[union-attr]
            except (AttributeError, ValueError, OSError):
                pass
        sys.stdout = GuardedStream(out, _report_stdout_failure)  # type: ignore[assignment]


def finish(code: object) -> object:
    """Flush both streams; the exit code to use (2 when standard output could not be written)."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, GuardedStream):
            stream.flush()
    out = sys.stdout
    if isinstance(out, GuardedStream) and out.failure is not None and code in (None, 0, 1):
        return EXIT_OUTPUT_FAILED
    return code


def out_line(text: str) -> None:
    """One line of text on stdout, control characters made visible."""
    sys.stdout.write(escape(text) + "\n")


def err_line(text: str) -> None:
    """One line on stderr (a message, an error), control characters made visible."""
    sys.stderr.write(escape(text) + "\n")
    sys.stderr.flush()


class EscapingWriter:
    """A stream for line-oriented messages that may hold file names: controls are made visible,
    newlines kept (``neuron-lint fix``'s "Fixed ... in PATH" lines and its errors)."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        self._inner.write(escape(text, keep="\n"))
        return len(text)

    def flush(self) -> None:
        self._inner.flush()

    def __getattr__(self, name: str):
        return getattr(self._inner, name)


def console_width(stream: TextIO | None = None) -> int | None:
    """The width to give a rich console: None (rich decides) unless COLUMNS is set but unusable,
    in which case the stream's terminal width, or :data:`FALLBACK_WIDTH`."""
    raw = os.environ.get("COLUMNS")
    if raw is None:
        return None
    try:
        width = int(raw.strip())
    except ValueError:
        width = 0
    if width > 0:
        return width
    try:
        target = stream if stream is not None else sys.stdout
        if target.isatty():
            return os.get_terminal_size(target.fileno()).columns or FALLBACK_WIDTH
    except (AttributeError, OSError, ValueError):
        pass
    return FALLBACK_WIDTH
