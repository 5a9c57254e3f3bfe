"""Device strings: ``"cuda"``, ``"cuda:1"``, ``f"cuda:{rank}"`` -> the module's current device.

``"cuda"`` becomes ``DEVICE.type`` (``.to("cuda")`` becomes ``.to(DEVICE)``), ``"cuda:1"`` becomes
``f"{DEVICE.type}:1"``, and ``f"cuda:{rank}"``, ``"cuda:{}".format(rank)`` and ``"cuda:%d" % rank``
become ``f"{DEVICE.type}:{rank}"``. With ``--device neuron`` only the word changes. What decides a
literal is rewritten, and how, is in :mod:`neuron_lint.fixes.device_literal`; an element of a
device list whose device is compared with CUDA where it is used is left alone, with a note.
"""

from __future__ import annotations

import ast

from ..device_choice import loop_compares
from ..device_forms import literal_kind
from ..device_literal import plan_literal, rewrite_literal


class DeviceString:
    name = "device_string"

    def plan(self, ctx, hit):
        node = hit.node
        if literal_kind(node) is None:
            return None
        parent = ctx.parent(node)
        if isinstance(parent, (ast.List, ast.Tuple)) and loop_compares(ctx, hit, node):
            return None
        return plan_literal(ctx, hit, node)

    def rewrite(self, rx, original, updated, data):
        return rewrite_literal(rx, original, updated, data)


FIXER = DeviceString()
