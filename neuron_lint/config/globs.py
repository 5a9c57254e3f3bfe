"""Glob patterns compiled once and matched the way ``exclude`` and ``per-file-ignores`` match a path.

A configuration may hold thousands of globs; matching each path against each of them with
``fnmatch`` made a run quadratic. :class:`GlobSet` files the patterns by their literal prefix and
suffix and compiles them into a few regular expressions on first use, so a path costs a few
lookups however many patterns there are (the results are those of ``fnmatch.fnmatchcase``).
"""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path
from typing import Iterable, Iterator

_MAGIC = re.compile(r"[*?[]")
_CHUNK = 500  # patterns per combined regex


def _compile(patterns: list[str]) -> tuple[re.Pattern, ...]:
    """fnmatch ``patterns`` as a few alternations, each tried in one call."""
    regexes = [fnmatch.translate(p) for p in patterns]
    out: list[re.Pattern] = []
    for i in range(0, len(regexes), _CHUNK):
        part = regexes[i:i + _CHUNK]
        try:
            out.append(re.compile("|".join(part)))
        except (re.error, RecursionError, OverflowError):  # pragma: no cover - translate output compiles
            for one in part:
                try:
                    out.append(re.compile(one))
                except (re.error, RecursionError, OverflowError):
                    continue  # a pattern that cannot be compiled matches nothing
    return tuple(out)


class _Bucket:
    """Patterns that share a literal prefix and suffix; compiled when a string first reaches them."""

    __slots__ = ("patterns", "_any", "_each")

    def __init__(self) -> None:
        self.patterns: list[str] = []
        self._any: tuple[re.Pattern, ...] | None = None
        self._each: dict[str, re.Pattern | None] = {}

    def any(self, text: str) -> bool:
        if self._any is None:
            self._any = _compile(self.patterns)
        return any(r.match(text) for r in self._any)

    def each(self, text: str) -> Iterator[str]:
        if len(self.patterns) > 1 and not self.any(text):
            return  # one call rules out the lot (the usual case)
        for p in self.patterns:
            if p not in self._each:
                compiled = _compile([p])
                self._each[p] = compiled[0] if compiled else None
            r = self._each[p]
            if r is not None and r.match(text):
                yield p


class _Index:
    """fnmatch patterns, each matched against a whole string (``fnmatch.fnmatchcase``).

    Patterns without wildcards are a set. The others are filed by their literal prefix (the text
    before the first wildcard) and, for those without ``[`` or ``?`` after the last ``*``, their
    literal suffix; a string is only tried against the patterns whose prefix and suffix it has,
    so a string costs a few dictionary lookups however many patterns there are.
    """

    def __init__(self, patterns: Iterable[str]) -> None:
        self.literal: set[str] = set()
        self.buckets: dict[str, dict[str, _Bucket]] = {}
        for p in dict.fromkeys(patterns):
            m = _MAGIC.search(p)
            if m is None:
                self.literal.add(p)
                continue
            tail = p[p.rfind("*") + 1:]
            suffix = tail if "[" not in p and "?" not in tail else ""
            self.buckets.setdefault(p[:m.start()], {}).setdefault(suffix, _Bucket()).patterns.append(p)
        self.prefix_lengths = sorted({len(k) for k in self.buckets})
        self.suffix_lengths = {k: sorted({len(x) for x in v}) for k, v in self.buckets.items()}

    def __bool__(self) -> bool:
        return bool(self.literal or self.buckets)

    def _candidates(self, text: str) -> Iterator[_Bucket]:
        n = len(text)
        for k in self.prefix_lengths:
            if k > n:
                break
            prefix = text[:k]
            by_suffix = self.buckets.get(prefix)
            if by_suffix is None:
                continue
            for m in self.suffix_lengths[prefix]:
                if m > n:
                    break
                bucket = by_suffix.get(text[n - m:])
                if bucket is not None:
                    yield bucket

    def any(self, text: str) -> bool:
        return text in self.literal or any(b.any(text) for b in self._candidates(text))

    def every(self, text: str) -> Iterator[str]:
        if text in self.literal:
            yield text
        for b in self._candidates(text):
            yield from b.each(text)


class GlobSet:
    """Glob patterns matched the way ``exclude`` and ``per-file-ignores`` match a path, compiled once.

    A pattern matches when it matches the file name, the whole path, or the path after any ``/``
    (``fnmatch`` rules: ``*`` crosses ``/``); an absolute pattern (one a configuration file anchored
    to its folder) also matches the absolute path. A path costs a few lookups per ``/`` in it,
    however many patterns there are.
    """

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(dict.fromkeys(patterns))
        self._relative = _Index(self.patterns)
        self._absolute = _Index(p for p in self.patterns if os.path.isabs(p))

    def __bool__(self) -> bool:
        return bool(self.patterns)

    @staticmethod
    def _texts(path: str | Path) -> Iterator[str]:
        """The path, then every tail after a ``/`` (the last is the name): ``*/P`` matches the path
        exactly when ``P`` matches one of its tails."""
        posix = Path(path).as_posix()
        yield posix
        i = posix.find("/")
        while i >= 0:
            yield posix[i + 1:]
            i = posix.find("/", i + 1)

    def _full(self, path: str | Path) -> str:
        return Path(os.path.abspath(path)).as_posix()

    def match(self, path: str | Path) -> bool:
        if not self.patterns:
            return False
        if any(self._relative.any(t) for t in self._texts(path)):
            return True
        return bool(self._absolute) and self._absolute.any(self._full(path))

    def matching(self, path: str | Path) -> set[str]:
        """Every pattern that matches ``path``."""
        found: set[str] = set()
        if not self.patterns:
            return found
        for t in self._texts(path):
            found.update(self._relative.every(t))
        if self._absolute:
            found.update(self._absolute.every(self._full(path)))
        return found
