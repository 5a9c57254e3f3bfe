"""A cheap text test that tells which files cannot produce any finding, so they are never walked.

Every match in the catalog names the words its findings need (see ``index.trigger_words``);
a file that contains none of them is skipped.

The test is a plain substring search per word, shortest words first. Measured on 1,500 of
torch's own files (31 MB) with the catalog's ~200 trigger words: 0.10 s, against 0.79 s for one
regular expression alternating all the words (Python's ``re`` tries every alternative at every
position; ``str.__contains__`` is a fast memchr-based search, and the short, common words
answer most files after a few tries).
"""

from __future__ import annotations

from functools import lru_cache

from .index import RuleIndex


@lru_cache(maxsize=16)
def _ordered(words: frozenset[str]) -> tuple[str, ...] | None:
    if "" in words:
        return None  # some match has no necessary word: every file must be walked
    # Short words first: they are the likeliest to occur, so a passing file is answered early.
    # The order never changes the answer.
    return tuple(sorted(words, key=lambda w: (len(w), w)))


def may_match(text: str, index: RuleIndex) -> bool:
    words = _ordered(index.triggers)
    if words is None:
        return True
    for word in words:
        if word in text:
            return True
    return False
