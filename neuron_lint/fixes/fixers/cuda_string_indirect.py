"""A CUDA device string or ``"nccl"`` that reaches the API through a name, a default or a fallback
(NRN213) -> the current device, or the backend registered for it.

- a device string (``add_argument("--device", default="cuda")``, ``getattr(args, "device",
  "cuda")``, ``loc = f"cuda:{gpu}"``, ``def load(path, dev="cuda")``) is planned as NRN202 plans
  one (:func:`neuron_lint.fixes.device_literal.plan_literal`): the same string forms, the same device choice, the
  same traps left with a note;
- ``"nccl"`` (or ``"NCCL"``) stored or given as a default -> ``dist.get_default_backend_for_device(DEVICE)``,
  as NRN206 rewrites ``backend="nccl"``: NCCL on a GPU, ``neuron`` on Trainium, gloo on a CPU-only
  host. With ``--device neuron``: ``"neuron"``.

A device-to-backend table (``{"cuda": "nccl"}``) is left with its suggestion (add a ``neuron``
entry by hand).
"""

from __future__ import annotations

import ast

from ..device_forms import literal_kind
from ..device_literal import plan_literal
from .distributed import plan_backend


class CudaStringIndirect:
    name = "cuda_string_indirect"

    def plan(self, ctx, hit):
        node = hit.node
        if literal_kind(node) is not None:
            return plan_literal(ctx, hit, node)
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.lower() == "nccl"):
            return None
        if isinstance(ctx.parent(node), ast.Dict):
            ctx.note(hit, "not rewritten: add a `\"neuron\": \"neuron\"` entry to the table by hand")
            return None
        return plan_backend(ctx, hit, node, fixer="distributed")

    def rewrite(self, rx, original, updated, data):
        from ..device_literal import rewrite_literal

        return rewrite_literal(rx, original, updated, data)


FIXER = CudaStringIndirect()
