"""Compile the catalog's match tables into lookup structures for the tree walk.

The walker never loops over rules: each node kind asks one dictionary (plus a few globs)
which (rule, match) pairs could fire on it. Building the index happens once per process
and per set of enabled rules.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from functools import lru_cache

from .catalog import Catalog, Match, Rule

_GLOB_CHARS = re.compile(r"[*?\[]")


def is_glob(pattern: str) -> bool:
    return bool(_GLOB_CHARS.search(pattern))


def literal_runs(pattern: str) -> list[str]:
    """The pieces of a glob that must appear verbatim in any string it matches."""
    return [p for p in re.split(r"\[[^\]]*\]|[*?]", pattern) if p]


def longest_literal(pattern: str) -> str:
    runs = literal_runs(pattern)
    return max(runs, key=len) if runs else ""


Payload = tuple[Rule, Match]
#: Distinct names remembered per index before the memo starts afresh (bounds memory on huge trees).
_MEMO_LIMIT = 100_000


@dataclass
class DottedIndex:
    """Dotted-name patterns with member semantics and longest-prefix-wins.

    A pattern ``torch.cuda`` matches ``torch.cuda`` and every member such as
    ``torch.cuda.synchronize``. The last component may be a glob (``torch.sparse_*``).
    When several patterns match a name, only those with the most components fire, so a
    specific rule (``torch.cuda.graph``) silences a general one (``torch.cuda``).
    """

    exact: dict[str, list[Payload]] = field(default_factory=dict)
    _memo: dict[str, tuple[Payload, ...]] = field(default_factory=dict, repr=False, compare=False)
    # parent dotted path -> [(compiled glob for the last component, payload)]
    globs: dict[str, list[tuple[re.Pattern, Payload]]] = field(default_factory=dict)

    def add(self, pattern: str, payload: Payload) -> None:
        self._memo.clear()
        parent, _, last = pattern.rpartition(".")
        if is_glob(parent):
            raise ValueError(f"only the last component of {pattern!r} may be a glob")
        if is_glob(last):
            self.globs.setdefault(parent, []).append((re.compile(fnmatch.translate(last)), payload))
        else:
            self.exact.setdefault(pattern, []).append(payload)

    def lookup(self, name: str) -> tuple[Payload, ...]:
        """Payloads for a dotted name (memoized: the walk asks about the same names over and over)."""
        hits = self._memo.get(name)
        if hits is None:
            if len(self._memo) > _MEMO_LIMIT:
                self._memo.clear()
            hits = self._memo[name] = tuple(self._lookup(name))
        return hits

    def _lookup(self, name: str) -> list[Payload]:
        parts = name.split(".")
        for k in range(len(parts), 0, -1):
            prefix = ".".join(parts[:k]) if k != len(parts) else name
            hits = list(self.exact.get(prefix, ()))
            globs = self.globs.get(".".join(parts[: k - 1]))
            if globs:
                last = parts[k - 1]
                hits.extend(p for rx, p in globs if rx.match(last))
            if hits:
                return hits
        return []

    def __bool__(self) -> bool:
        return bool(self.exact or self.globs)


@dataclass
class FlatIndex:
    """Whole-string patterns (exact or glob, ``*`` also crossing dots)."""

    exact: dict[str, list[Payload]] = field(default_factory=dict)
    globs: list[tuple[re.Pattern, Payload]] = field(default_factory=list)
    _memo: dict[str, tuple[Payload, ...]] = field(default_factory=dict, repr=False, compare=False)

    def add(self, pattern: str, payload: Payload) -> None:
        self._memo.clear()
        if is_glob(pattern):
            self.globs.append((re.compile(fnmatch.translate(pattern)), payload))
        else:
            self.exact.setdefault(pattern, []).append(payload)

    def lookup(self, key: str) -> tuple[Payload, ...]:
        """Payloads for a key (memoized, like :meth:`DottedIndex.lookup`)."""
        hits = self._memo.get(key)
        if hits is None:
            if len(self._memo) > _MEMO_LIMIT:
                self._memo.clear()
            hits = self._memo[key] = tuple(self._lookup(key))
        return hits

    def _lookup(self, key: str) -> list[Payload]:
        hits = self.exact.get(key)
        hits = list(hits) if hits else []
        if self.globs:
            hits.extend(p for rx, p in self.globs if rx.match(key))
        return hits

    def __bool__(self) -> bool:
        return bool(self.exact or self.globs)


@dataclass
class RuleIndex:
    rules: tuple[Rule, ...]
    names: DottedIndex = field(default_factory=DottedIndex)
    imports: DottedIndex = field(default_factory=DottedIndex)
    methods: FlatIndex = field(default_factory=FlatIndex)
    attributes: FlatIndex = field(default_factory=FlatIndex)
    calls: FlatIndex = field(default_factory=FlatIndex)  # qualified names, ".method", "*"
    assigns: FlatIndex = field(default_factory=FlatIndex)
    env: FlatIndex = field(default_factory=FlatIndex)
    matchers: list[Payload] = field(default_factory=list)
    triggers: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        words: set[str] = set()
        for rule in self.rules:
            for m in rule.matches:
                if m.kind == "manifest":
                    continue  # dependency manifests are scanned by neuron_lint.manifests
                payload = (rule, m)
                target = {
                    "names": self.names,
                    "imports": self.imports,
                    "methods": self.methods,
                    "attributes": self.attributes,
                    "calls": self.calls,
                    "assign": self.assigns,
                    "env": self.env,
                }.get(m.kind)
                if target is None:
                    self.matchers.append(payload)
                else:
                    for p in m.patterns:
                        target.add(p, payload)
                words.update(trigger_words(m))
        self.triggers = frozenset(w for w in words if w)


def _dotted_trigger(pattern: str) -> str:
    parts = pattern.split(".")
    for part in reversed(parts):
        word = longest_literal(part)
        if word:
            return word
    return ""


def trigger_words(m: Match) -> set[str]:
    """Words of which at least one appears in the text of any file this match can fire on."""
    if m.trigger:
        return set(m.trigger)
    if m.kind in ("names", "imports"):
        return {_dotted_trigger(p) for p in m.patterns}
    if m.kind in ("methods", "attributes", "env"):
        return {longest_literal(p) for p in m.patterns}
    # calls / assign: a constraining value is the rarest word; else the callee or target
    value_words = set()
    if m.values and all(isinstance(v, str) for v in m.values):
        value_words = {longest_literal(v) for v in m.values}
    if m.value_names and not m.values:
        value_words = {_dotted_trigger(v) for v in m.value_names}
    if value_words and all(value_words):
        return value_words
    if m.kind == "calls" and m.arg is not None and m.arg.keyword and m.arg.position is None:
        return {m.arg.keyword}
    words = {_dotted_trigger(p.lstrip(".")) for p in m.patterns}
    if "" in words:  # a "*" pattern: nothing narrower than the value itself
        return {""}
    return words


@lru_cache(maxsize=16)
def build_index(catalog: Catalog, codes: frozenset[str]) -> RuleIndex:
    return RuleIndex(tuple(r for r in catalog.rules if r.code in codes))
