"""Run a recursive tree walk on a syntax tree deeper than Python's default recursion limit allows.

``ast.parse`` accepts trees about three times deeper than the default limit of 1000 frames
(a chain of 1,500 ``+`` or 500 chained method calls is ordinary generated code), while a
recursive visitor needs a few frames per tree level. Rather than rewrite every visitor as a
loop, a walk that hits ``RecursionError`` is run again in a thread with a large stack and a
recursion limit sized to the tree's measured depth.
"""

from __future__ import annotations

import ast
import sys
import threading
from typing import Callable, TypeVar

from ..errors import ParseError

T = TypeVar("T")

#: Python frames a visitor may use per tree level (visit -> handler -> body loop -> visit).
FRAMES_PER_LEVEL = 6
#: Beyond this depth no walk is attempted (ast.parse itself refuses far shallower trees).
MAX_DEPTH = 100_000
#: Stack of the walking thread; only the pages touched are committed.
STACK_BYTES = 512 * 1024 * 1024

_LOCK = threading.Lock()


def tree_depth(tree: ast.AST) -> int:
    """The number of nodes on the longest root-to-leaf path, measured without recursion."""
    deepest = 0
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def call_deep(fn: Callable[[ast.AST], T], tree: ast.AST) -> T:
    """``fn(tree)`` with room for the tree's depth. Raises :class:`ParseError` if even that is not enough."""
    depth = tree_depth(tree)
    if depth > MAX_DEPTH:
        raise ParseError(f"too deeply nested to analyze ({depth} levels)")
    outcome: list = []

    def target() -> None:
        try:
            outcome.append((True, fn(tree)))
        except BaseException as exc:  # handed to the calling thread
            outcome.append((False, exc))

    with _LOCK:
        old_limit = sys.getrecursionlimit()
        old_stack = threading.stack_size()
        worker = None
        try:
            sys.setrecursionlimit(max(old_limit, old_limit + FRAMES_PER_LEVEL * depth))
            for size in (STACK_BYTES, STACK_BYTES // 8):  # a smaller stack where memory is capped
                try:
                    threading.stack_size(size)
                    worker = threading.Thread(target=target, name="neuron-lint-deep-walk", daemon=True)
                    worker.start()
                    break
                except (RuntimeError, MemoryError, ValueError):
                    worker = None
            if worker is not None:
                worker.join()
        finally:
            threading.stack_size(old_stack)
            sys.setrecursionlimit(old_limit)
    if not outcome:
        raise ParseError("too deeply nested to analyze")
    ok, value = outcome[0]
    if ok:
        return value
    if isinstance(value, (RecursionError, MemoryError)):
        raise ParseError(f"too deeply nested to analyze ({depth} levels)") from None
    raise value
