"""Matchers written in Python, for the few rules whose matching the catalog's data cannot express.

A rule names one with ``[[match]] matcher = "<name>"`` plus the ``trigger`` words its findings
need. A matcher is a function ``(analyzer, node) -> iterable of (node_to_report, subject)``
with a ``node_types`` attribute listing the ast node types it wants to see.
"""

from __future__ import annotations

import ast
from typing import Callable, Iterable

MATCHERS: dict[str, Callable] = {}


def matcher(*node_types: type) -> Callable[[Callable], Callable]:
    def register(fn: Callable) -> Callable:
        fn.node_types = node_types  # type: ignore[attr-defined]
        MATCHERS[fn.__name__] = fn
        return fn

    return register


@matcher(ast.Call)
def tensor_factory_python_float(analyzer, node: ast.Call) -> Iterable[tuple[ast.AST, str]]:
    """``dtype=float`` on a torch call means float64 (Python's float is double precision)."""
    for kw in node.keywords:
        if kw.arg == "dtype" and isinstance(kw.value, ast.Name) and kw.value.id == "float":
            if analyzer.lookup("float") is None:  # not rebound by the module
                qual = analyzer.qualname(node.func) or ""
                if qual.startswith("torch."):
                    yield kw.value, "dtype=float"


_DDP = ("torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel")


@matcher(ast.Call)
def ddp_device_ids(analyzer, node: ast.Call) -> Iterable[tuple[ast.AST, str]]:
    """``DistributedDataParallel(model, device_ids=[...])``: CUDA device indices (``None`` is fine)."""
    if analyzer.qualname(node.func) not in _DDP:
        return
    for kw in node.keywords:
        if kw.arg in ("device_ids", "output_device") and not (isinstance(kw.value, ast.Constant) and kw.value.value is None):
            yield kw.value, kw.arg
