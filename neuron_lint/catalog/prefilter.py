"""A cheap text test that tells which matches can fire in a file, so the walk does only their work.

Every match in the catalog says what a file's text must hold for it to fire (``index.requirement``,
derived from the match's own patterns and values, or a Python matcher's declared trigger words): the
dotted names, attribute names and string contents a finding needs, as whole words, and the pieces next
to a glob (``cuda*``) as substrings. :func:`active` tests every match of the index against one file
and returns the kinds of match and the matchers that can fire; ``None`` means none can, and the file
is not walked (it is still parsed, so a syntax error is reported: see ``api.analyze_source``).

The text's words are found once (the runs of ``[A-Za-z0-9_]``, by one ``bytes.translate`` and
``split`` of its UTF-8; a non-ASCII letter ends a word, which can only make a word appear that the
file does not hold, never hide one), then each requirement is a few set lookups.

``tests/test_prefilter_equivalence.py`` compares the findings with those of a full walk over real code.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from .index import RuleIndex


@dataclass(frozen=True)
class Active:
    """What can fire in one file: match kinds (``names``, ``calls``...) and ``id()`` of matcher matches."""

    kinds: frozenset[str]
    matchers: frozenset[int]


def active(text: str, index: RuleIndex) -> Active | None:
    """The matches of ``index`` that can fire in ``text``, or None when none can."""
    every_word = words_of(text)
    words = {w.decode() for w in index.words_utf8.intersection(every_word)}
    found: dict[str, bool] = {}  # fragment -> occurs in the text (searched only when asked)
    inside, word_only = index.fragments, index.word_fragments
    haystack: list[bytes] = []

    def occurs(fragments: tuple[str, ...]) -> bool:
        for f in fragments:
            hit = found.get(f)
            if hit is None:
                if f.encode() in every_word:  # a whole word of the text: no search
                    hit = True
                elif any(found.get(e) is False for e in inside[f]):  # a shorter fragment inside it is missing
                    hit = False
                elif f in word_only:
                    # made of word characters: it occurs in the text iff inside one of its words, and
                    # the distinct words are a much shorter string to search than the text
                    if not haystack:
                        haystack.append(b" ".join(every_word))
                    hit = f.encode() in haystack[0]
                else:
                    hit = f in text
                found[f] = hit
            if not hit:
                return False
        return True

    met: set[tuple[int, int]] = set()  # (requirement, group) pairs that hold
    by_word = index.alternatives_by_word
    for word in words:
        for i, g, (need_words, fragments) in by_word.get(word, ()):
            if (i, g) not in met and need_words <= words and (not fragments or occurs(fragments)):
                met.add((i, g))
    kinds: set[str] = set()
    matchers: set[int] = set()
    for i, (kind, match_id, groups) in enumerate(index.plan):
        if kind in kinds and kind != "matcher":
            continue  # this kind is walked anyway
        for g, substring_only in groups:
            if (i, g) in met:
                continue
            for alt in substring_only:
                if occurs(alt):
                    break
            else:
                break  # no alternative of this group holds
        else:
            kinds.add(kind)
            if kind == "matcher":
                matchers.add(match_id)
    if not kinds:
        return None
    return _interned(frozenset(kinds), frozenset(matchers))


#: bytes.translate table: word characters stay, every other byte (those of non-ASCII characters
#: included) becomes a space
_WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_SPACES = bytes(c if c in _WORD_BYTES else 32 for c in range(256))


def words_of(text: str) -> set[bytes]:
    """The distinct words of ``text`` (maximal runs of ``[A-Za-z0-9_]``), as UTF-8: what
    ``re.findall(r"[A-Za-z0-9_]+", text)`` finds, in half its time."""
    return set(text.encode("utf-8", "surrogatepass").translate(_SPACES).split())


@lru_cache(maxsize=1024)
def _interned(kinds: frozenset[str], matchers: frozenset[int]) -> Active:
    return Active(kinds, matchers)


def may_match(text: str, index: RuleIndex) -> bool:
    """Can any match of ``index`` fire in ``text``?"""
    return active(text, index) is not None
