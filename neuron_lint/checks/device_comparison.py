"""NRN211: a comparison with ``"cuda"`` that decides device-specific behaviour.

``if device.type == "cuda":`` around ``torch.cuda.synchronize()``, ``autocast(enabled=device.type
== "cuda")``, ``pin_memory=device == "cuda"``, ``@skipIf(device != "cuda", ...)``,
``'cuda' if 'cuda' in device else 'cpu'``: on Trainium the device is ``neuron``, so the program
silently takes the CPU path (no autocast, no synchronisation, skipped tests). Comparisons that
decide nothing device-specific (a log line, an error message) are not reported.
"""

from __future__ import annotations

import ast
from typing import Iterable

from ..catalog.registry import matcher

#: Calls and keywords whose presence in the decided code makes the comparison device-specific.
DEVICE_SPECIFIC = frozenset({
    "autocast", "GradScaler", "synchronize", "empty_cache", "memory_allocated", "max_memory_allocated",
    "memory_reserved", "max_memory_reserved", "memory_stats", "reset_peak_memory_stats", "pin_memory",
    "skip", "skipTest", "xfail", "set_device", "set_device_index", "cuda", "to", "Stream", "Event", "stream",
    "current_stream", "manual_seed", "manual_seed_all", "device_count",
})
DECIDING_KEYWORDS = frozenset({"enabled", "pin_memory", "non_blocking", "use_amp", "amp", "fp16", "bf16"})
SKIPS = frozenset({"skipIf", "skipUnless", "skipif"})


def cuda_comparisons(test: ast.AST, negated: bool = False) -> Iterable[tuple[ast.Compare, bool]]:
    """The comparisons with ``"cuda"`` in a condition, with whether a true answer means "CUDA"."""
    if isinstance(test, ast.BoolOp):
        for v in test.values:
            yield from cuda_comparisons(v, negated)
    elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield from cuda_comparisons(test.operand, not negated)
    elif isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, right, op = test.left, test.comparators[0], test.ops[0]
        if not isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)):
            return
        sides = (left, right)
        if sum(_is_cuda(s) for s in sides) != 1 or any(isinstance(s, ast.Constant) and not _is_cuda(s) for s in sides):
            return
        if isinstance(op, (ast.In, ast.NotIn)) and not _is_cuda(left):
            return  # `x in ("cuda", "cpu")` asks something else
        yield test, negated != isinstance(op, (ast.NotEq, ast.NotIn))


def _is_cuda(node) -> bool:
    return isinstance(node, ast.Constant) and node.value == "cuda"


def decides_device_code(nodes) -> bool:
    """Does this code do something device-specific (see DEVICE_SPECIFIC), or pick a device type string?"""
    for top in nodes:
        for n in ast.walk(top):
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.split(":")[0] in ("cuda", "cpu"):
                return True
            if isinstance(n, ast.Attribute) and (n.attr in DEVICE_SPECIFIC or n.attr == "is_cuda"):
                return True
            if isinstance(n, ast.Name) and n.id in DEVICE_SPECIFIC:
                return True
            if isinstance(n, ast.keyword) and n.arg in DEVICE_SPECIFIC:
                return True
    return False


def _subject(cmp: ast.Compare) -> str:
    try:
        return ast.unparse(cmp)
    except Exception:  # pragma: no cover - unparse handles every expression ast produces
        return "== \"cuda\""


@matcher(ast.If, ast.IfExp, ast.While, ast.Call)
def cuda_device_comparison(model, node) -> Iterable[tuple[ast.AST, str]]:
    """A comparison with "cuda" in a condition whose branch, keyword or skip is device-specific."""
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        values = []
        if name in SKIPS and node.args:
            values.append(node.args[0])
        values += [k.value for k in node.keywords if k.arg in DECIDING_KEYWORDS]
        for value in values:
            for cmp, _ in cuda_comparisons(value):
                yield cmp, _subject(cmp)
        return
    for cmp, positive in cuda_comparisons(node.test):
        decided = [node.body] if isinstance(node, ast.IfExp) else list(node.body)
        other = [node.orelse] if isinstance(node, ast.IfExp) else list(node.orelse)
        if decides_device_code(decided if positive else other) or (not positive and decides_device_code(decided)):
            yield cmp, _subject(cmp)
