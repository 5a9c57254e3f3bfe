"""Devices a class (or module) compares by CUDA's name and index.

The model-parallel blocks of Hugging Face's older models (GPT-2, GPT-J, T5, and CodeGen's copy, read
set 69) build a device map of ``"cuda:" + str(k)``, keep ``self.first_device`` and
``self.last_device``, and hop between devices under ``if "cuda:" + str(k) != self.last_device:``.
Each string rewritten alone leaves the others naming CUDA: on Trainium the hop test would be true
on the last device and move the activations to a device that does not exist. Those strings go
together with their comparisons, by hand.
"""

from __future__ import annotations

import ast

from .device_forms import literal_kind


def indexed_cuda(node) -> bool:
    """``"cuda:0"``, ``f"cuda:{k}"``, ``"cuda:{}".format(k)``, ``"cuda:%d" % k`` or ``"cuda:" + str(k)``
    (:func:`.device_forms.literal_kind`)."""
    return literal_kind(node) in ("indexed", "fstring", "format")


def indexed_comparison(ctx, node: ast.AST) -> ast.Compare | None:
    """For an indexed CUDA device string ``node``: the comparison of its class (or module) that tests
    a device against one written by CUDA's name and index, or None."""
    if not indexed_cuda(node) and not (isinstance(node, ast.Constant) and node.value == "cuda:"):
        return None  # (a finding of `"cuda:" + str(k)` is at its `"cuda:"`)
    scope = next((p for p in ctx.ancestors(node) if isinstance(p, ast.ClassDef)), ctx.tree)
    cache = ctx.__dict__.setdefault("_nrn_indexed_compares", {})
    if id(scope) not in cache:
        cache[id(scope)] = next((n for n in ctx.walk(scope) if isinstance(n, ast.Compare)
                                 and all(isinstance(op, (ast.Eq, ast.NotEq)) for op in n.ops)
                                 and any(indexed_cuda(o) for o in (n.left, *n.comparators))
                                 and not all(isinstance(o, ast.Constant) for o in (n.left, *n.comparators))), None)
    return cache[id(scope)]
