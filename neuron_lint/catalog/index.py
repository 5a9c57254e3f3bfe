"""Compile the catalog's match tables into lookup structures for the tree walk.

The walker never loops over rules: each node kind asks one dictionary (plus a few globs)
which (rule, match) pairs could fire on it. Building the index happens once per process
and per set of enabled rules.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from functools import cache

from .loading import Catalog, Match, Rule

_GLOB_CHARS = re.compile(r"[*?\[]")


def is_glob(pattern: str) -> bool:
    return bool(_GLOB_CHARS.search(pattern))


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
    #: (match kind, payload, what the text must contain for it to fire): see :func:`requirement`
    needs: tuple[tuple[str, Payload, Requirement], ...] = ()
    #: every whole word some requirement asks for (the prefilter looks only these up)
    words: frozenset[str] = frozenset()
    words_utf8: frozenset[bytes] = frozenset()  # the same, encoded (the prefilter splits bytes)
    alternatives_by_word: dict = field(default_factory=dict)
    substring_alternatives: dict = field(default_factory=dict)  # (requirement, group) -> fragment tuples
    fragments: dict = field(default_factory=dict)  # fragment -> shorter fragments inside it
    plan: tuple = ()
    word_fragments: frozenset[str] = frozenset()  # fragments made of word characters only

    def __post_init__(self) -> None:
        needs: list = []
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
                needs.append((m.kind if target is not None else "matcher", payload, requirement(m)))
        self.needs = tuple(needs)
        self.words = frozenset(w for _k, _p, req in needs for group in req for alt in group for w in alt[0])
        self.words_utf8 = frozenset(w.encode() for w in self.words)
        # For the prefilter: each alternative filed under one of its words (the longest: the rarest,
        # as a rule), so a file is tested only against alternatives whose word it holds.
        by_word: dict[str, list[tuple[int, int, Alternative]]] = {}
        substring_only: list[tuple[int, int, Alternative]] = []
        for i, (_kind, _payload, req) in enumerate(needs):
            for g, group in enumerate(req):
                for alt in group:
                    if alt[0]:
                        by_word.setdefault(max(sorted(alt[0]), key=len), []).append((i, g, alt))
                    else:
                        substring_only.append((i, g, alt))
        self.alternatives_by_word = {w: tuple(v) for w, v in by_word.items()}
        groups: dict[tuple[int, int], list[tuple[str, ...]]] = {}
        for i, g, alt in substring_only:
            groups.setdefault((i, g), []).append(alt[1])
        self.substring_alternatives = {k: tuple(v) for k, v in groups.items()}
        # per requirement: (kind, id of the match, ((group, its substring-only alternatives), ...))
        self.plan = tuple(
            (kind, id(payload[1]), tuple((g, self.substring_alternatives.get((i, g), ())) for g in range(len(req))))
            for i, (kind, payload, req) in enumerate(needs)
        )
        # Every fragment with the shorter fragments inside it: when one of those is missing from a
        # text, so is it, without a search.
        frags = sorted({f for _k, _p, req in needs for group in req for alt in group for f in alt[1]}, key=lambda f: (len(f), f))
        self.fragments = {f: tuple(e for e in frags[:i] if e in f) for i, f in enumerate(frags)}
        self.word_fragments = frozenset(f for f in frags if _WORD_PIECE.fullmatch(f))

# ----------------------------------------------------------------------------- requirements
#: What a file's text must hold for one match to fire there. A requirement is a tuple of groups,
#: all of which must hold; a group holds when one of its alternatives does; an alternative holds
#: when each of its words occurs in the text as a whole word (a maximal run of ASCII letters,
#: digits and underscores) and each of its fragments occurs as a substring. ``()`` always holds.
Alternative = tuple[frozenset[str], tuple[str, ...]]
Requirement = tuple[tuple[Alternative, ...], ...]
_WORD_PIECE = re.compile(r"[A-Za-z0-9_]+")
_ANY: Alternative = (frozenset(), ())


@cache
def pattern_need(pattern: str) -> Alternative:
    """What the text holds wherever ``pattern`` (a name, dotted name or string glob) matches something.

    A matched name is made of identifiers of the file (an import's module, attribute names); a matched
    string is the content of a literal, which starts after a quote and ends before one. So each
    piece of the pattern's literal text that is bounded on both sides (by a non-word character of the
    pattern, or by the pattern's start or end) is a whole word of the file; a piece that touches a
    glob character (``cuda*``) may be the start or end of a longer word, and only has to occur.
    """
    if not _GLOB_CHARS.search(pattern):  # one literal run, from start to end: every piece is bounded
        return frozenset(_WORD_PIECE.findall(pattern)), ()
    words: set[str] = set()
    fragments: list[str] = []
    for run_start, run in _literal_spans(pattern):
        run_end = run_start + len(run)
        for piece in _WORD_PIECE.finditer(run):
            left_open = piece.start() == 0 and run_start > 0
            right_open = piece.end() == len(run) and run_end < len(pattern)
            if left_open or right_open:
                fragments.append(piece.group())
            else:
                words.add(piece.group())
    return frozenset(words), tuple(fragments)


@cache
def trigger_need(alternative: str) -> Alternative:
    """One alternative of a matcher's ``trigger``: a name (``add_argument``) is a whole word of the
    text; with a glob character it is read as a pattern (``NVIDIA_*``: the text holds ``NVIDIA_``
    at the start of some word); anything else (``"cuda``, with its quote; ``**``) is a substring."""
    if _WORD_PIECE.fullmatch(alternative):
        return frozenset({alternative}), ()
    if _GLOB_CHARS.search(alternative) and _WORD_PIECE.search(alternative):
        return pattern_need(alternative)
    return frozenset(), (alternative,)


def _literal_spans(pattern: str) -> list[tuple[int, str]]:
    """(offset, text) of each run of literal characters in a glob; offsets reach from 0 to len(pattern)."""
    spans, start = [], 0
    for glob in re.finditer(r"\[[^\]]*\]|[*?]", pattern):
        if glob.start() > start:
            spans.append((start, pattern[start:glob.start()]))
        start = glob.end()
    if start < len(pattern):
        spans.append((start, pattern[start:]))
    # a run that does not touch a glob character reaches the pattern's ends; one that follows a glob
    # starts after 0 and one before a glob ends before len(pattern), which is what pattern_need asks
    return spans


def _group(alternatives) -> tuple[Alternative, ...]:
    """A group, or ``()`` (no constraint) when one of its alternatives asks for nothing."""
    alts = tuple(dict.fromkeys(alternatives))
    return () if not alts or _ANY in alts else alts


_REQUIREMENTS: dict[int, tuple[Match, Requirement]] = {}


def requirement(m: Match) -> Requirement:
    """What a file's text must hold for ``m`` to fire in it (never more than the analyzer needs)."""
    known = _REQUIREMENTS.get(id(m))
    if known is not None and known[0] is m:
        return known[1]
    req = _requirement(m)
    _REQUIREMENTS[id(m)] = (m, req)
    return req


def _requirement(m: Match) -> Requirement:
    if m.trigger:  # what a Python matcher declares its findings need
        return tuple(g for g in (_group(trigger_need(a) for a in group) for group in m.trigger) if g)
    groups = []
    # the subject: the imported module, the referenced name, the callee, the assigned name, the key
    subject = _group(pattern_need(p.lstrip(".")) if p != "*" else _ANY for p in m.patterns)
    if subject:
        groups.append(subject)
    if m.kind in ("calls", "assign"):
        if m.values or m.value_names:  # the value must be one of these
            values = _group(
                [pattern_need(v) if isinstance(v, str) else _ANY for v in m.values]
                + [pattern_need(v) for v in m.value_names]
            )
            if values:
                groups.append(values)
        if m.kind == "calls" and m.arg is not None and m.arg.keyword and m.arg.position is None:
            groups.append(((frozenset({m.arg.keyword}), ()),))  # passed only by keyword: the keyword is written
    return tuple(g for g in groups if g)


def holds(req: Requirement, text: str, words: set[str] | frozenset[str]) -> bool:
    """Does ``text`` (whose whole words are ``words``) meet a requirement?"""
    for group in req:
        for need_words, fragments in group:
            if need_words <= words and all(f in text for f in fragments):
                break
        else:
            return False
    return True


#: (id of the catalog, codes) -> (the catalog, its index): known by identity, since hashing a whole
#: catalog (every rule, match and example) costs about half a millisecond, once per file checked.
_INDEXES: dict[tuple[int, frozenset[str]], tuple[Catalog, RuleIndex]] = {}
_INDEXES_KEPT = 16


def build_index(catalog: Catalog, codes: frozenset[str]) -> RuleIndex:
    key = (id(catalog), codes)
    known = _INDEXES.get(key)
    if known is not None and known[0] is catalog:
        return known[1]
    index = RuleIndex(tuple(r for r in catalog.rules if r.code in codes))
    if len(_INDEXES) >= _INDEXES_KEPT:
        _INDEXES.pop(next(iter(_INDEXES)))
    _INDEXES[key] = (catalog, index)
    return index
