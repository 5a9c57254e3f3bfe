"""A CUDA device string or ``"nccl"`` that reaches the API through a name, a default or a fallback
(NRN213) -> the current device, or the backend registered for it.

- a device string (``add_argument("--device", default="cuda")``, ``getattr(args, "device",
  "cuda")``, ``loc = f"cuda:{gpu}"``, ``def load(path, dev="cuda")``) is planned as NRN202 plans
  one (:func:`neuron_lint.fixes.device_literal.plan_literal`): the same string forms, the same device choice, the
  same traps left with a note;
- ``"nccl"`` (or ``"NCCL"``) stored or given as a default -> ``dist.get_default_backend_for_device(DEVICE)``,
  as NRN206 rewrites ``backend="nccl"``: NCCL on a GPU, ``neuron`` on Trainium, gloo on a CPU-only
  host. With ``--device neuron``: ``"neuron"``.

A device-to-backend table (``{"cuda": "nccl", "cpu": "gloo"}``) gets a ``"neuron": "neuron"`` entry
after its ``"cuda"`` one, in the table's own quotes and layout: the lookup of a CUDA or CPU device is
unchanged, and a ``neuron`` device finds its backend instead of the table's fallback. A table keyed
``"gpu"``, or one with a ``**`` entry or keys that are not strings, is left with a note.
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
        table = ctx.parent(node)
        if isinstance(table, ast.Dict):
            return _plan_table_entry(ctx, hit, table)
        return plan_backend(ctx, hit, node, fixer="distributed")

    def rewrite(self, rx, original, updated, data):
        if data.get("mode") == "table_entry":
            return _with_neuron_entry(updated)
        from ..device_literal import rewrite_literal

        return rewrite_literal(rx, original, updated, data)


def _plan_table_entry(ctx, hit, table: ast.Dict):
    if not all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in table.keys):
        ctx.note(hit, "not rewritten: the table has a `**` entry or keys that are not strings; add a "
                      "`\"neuron\": \"neuron\"` entry by hand")
        return None
    if "cuda" not in [k.value for k in table.keys]:
        ctx.note(hit, "not rewritten: the table is not keyed by device type (`\"cuda\"`); add an entry for the "
                      "`neuron` device by hand")
        return None
    return ctx.propose(hit, table, "Dict", "Add the `neuron` device's backend to the table", {"mode": "table_entry"})


def _with_neuron_entry(table):
    """``table`` with ``"neuron": "neuron"`` right after its ``"cuda"`` entry, laid out as that entry is."""
    import libcst as cst

    from ..decline import Decline

    elements = list(table.elements)
    at = next((i for i, e in enumerate(elements) if isinstance(e, cst.DictElement)
               and isinstance(e.key, cst.SimpleString) and e.key.evaluated_value == "cuda"), None)
    if at is None:
        raise Decline("the table has no `\"cuda\"` entry")
    cuda = elements[at]
    quote = cuda.key.quote if isinstance(cuda.key, cst.SimpleString) else '"'
    entry = cuda.with_changes(key=cst.SimpleString(f"{quote}neuron{quote}"),
                              value=cst.SimpleString(f"{quote}neuron{quote}"))
    if isinstance(cuda.comma, cst.Comma):  # the new entry takes the cuda entry's comma and what follows it
        elements.insert(at + 1, entry)
    else:  # the cuda entry was last, without a trailing comma
        elements[at] = cuda.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        elements.insert(at + 1, entry)
    return table.with_changes(elements=elements)


FIXER = CudaStringIndirect()
