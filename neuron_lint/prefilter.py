"""A cheap text test that tells which files cannot produce any finding, so they are never parsed.

Every match in the catalog names the words its findings need (see ``index.trigger_words``);
a file that contains none of them is skipped.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .index import RuleIndex


@lru_cache(maxsize=16)
def _pattern(words: frozenset[str]) -> re.Pattern | None:
    if "" in words:
        return None  # some match has no necessary word: every file must be parsed
    if not words:
        return re.compile(r"(?!)")
    # Longest first so the alternation prefers specific words; order does not change the answer.
    return re.compile("|".join(re.escape(w) for w in sorted(words, key=lambda w: (-len(w), w))))


def may_match(text: str, index: RuleIndex) -> bool:
    pattern = _pattern(index.triggers)
    return True if pattern is None else pattern.search(text) is not None
