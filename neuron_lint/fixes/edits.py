"""Text edits: the minimal spans between a module's text and its rewritten text, and applying
plain text edits (the ``# noqa`` comment fixes, which have no LibCST rewrite).

A LibCST rewrite gives a whole new module text; outputs (JSON and SARIF ``fix.edits``, the
language server) want the few spans that changed. :func:`minimal_edits` finds them: a line diff,
then each changed block trimmed to the characters that differ.
"""

from __future__ import annotations

import bisect
import difflib

from ..io.positions import LineIndex, split_lines
from ..model import Edit, Finding


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def minimal_edits(old: str, new: str) -> tuple[Edit, ...]:
    """Edits that turn ``old`` into ``new``, each as small as a line diff and trimming allow."""
    if old == new:
        return ()
    a = split_lines(old, keepends=True)
    b = split_lines(new, keepends=True)
    lines = LineIndex(old)
    starts_a = lines.starts
    starts_b = [0]
    for line in b:
        starts_b.append(starts_b[-1] + len(line))
    out: list[Edit] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if tag == "replace" and i2 - i1 == j2 - j1:  # as many lines changed as replaced: one edit per line
            blocks = [(i, i + 1, j, j + 1) for i, j in zip(range(i1, i2), range(j1, j2))]
        else:
            blocks = [(i1, i2, j1, j2)]
        for a1, a2, b1, b2 in blocks:
            s, e = starts_a[a1], starts_a[a2]
            t, u = starts_b[b1], starts_b[b2]
            chunk_a, chunk_b = old[s:e], new[t:u]
            if chunk_a == chunk_b:
                continue
            p = _common_prefix(chunk_a, chunk_b)
            q = _common_prefix(chunk_a[p:][::-1], chunk_b[p:][::-1])
            q = min(q, len(chunk_a) - p, len(chunk_b) - p)
            start, end = s + p, e - q
            line, col = lines.position(start)
            end_line, end_col = lines.position(end)
            out.append(Edit(line, col, end_line, end_col, chunk_b[p:len(chunk_b) - q]))
    return tuple(out)


def _collide(a: tuple[int, int, str], b: tuple[int, int, str]) -> bool:
    if a == b:
        return False  # the same edit asked for twice is applied once
    (s1, t1, _), (s2, t2, _) = a, b
    if s1 < t2 and s2 < t1:
        return True
    if s1 == s2:
        return True  # two insertions (or an insertion and a replacement) at one point: order unclear
    return (s1 == t1 and s2 < s1 < t2) or (s2 == t2 and s1 < s2 < t1)


def _collides_with_chosen(e: tuple[int, int, str], chosen: list[tuple[int, int, int, str]]) -> bool:
    """Does ``e`` collide with an edit in ``chosen`` (sorted by start)? Only its neighbours can."""
    i = bisect.bisect_left(chosen, (e[0],))
    if i and _collide(e, _plain(chosen[i - 1])):
        return True
    while i < len(chosen) and chosen[i][0] <= e[1]:
        if _collide(e, _plain(chosen[i])):
            return True
        i += 1
    return False


def _plain(c: tuple[int, int, int, str]) -> tuple[int, int, str]:
    return c[0], c[1], c[3]


def apply_edits(text: str, findings: list[Finding], newline: str = "\n") -> tuple[str, list[Finding]]:
    """Apply the edits of ``findings`` that do not collide with an earlier one. Returns (text, applied).

    O(n log n) in the number of edits and linear in the text.
    """
    lines = LineIndex(text)
    chosen: list[tuple[int, int, int, str]] = []  # (start, end, order asked, content), sorted
    seen: set[tuple[int, int, str]] = set()
    applied: list[Finding] = []
    for f in sorted(findings, key=lambda f: min((e.line, e.col) for e in f.fix.edits)):
        edits = [(lines.offset(e.line, e.col), lines.offset(e.end_line, e.end_col), e.content) for e in f.fix.edits]
        if any(e not in seen and _collides_with_chosen(e, chosen) for e in edits):
            continue
        for e in edits:
            if e not in seen:
                seen.add(e)
                bisect.insort(chosen, (e[0], e[1], len(seen), e[2]))
        applied.append(f)
    pieces: list[str] = []
    pos = 0
    for start, end, _, content in chosen:
        if newline != "\n":
            content = content.replace("\n", newline)
        pieces.append(text[pos:start])
        pieces.append(content)
        pos = end
    pieces.append(text[pos:])
    return "".join(pieces), applied
