"""Names a project binds to device objects: an index argument spelled with one may be a device.

Amphion's entry scripts set ``args.local_rank = torch.device("cuda")`` and its models call
``.cuda(self.args.local_rank)`` and ``torch.cuda.device(args.local_rank)``, which take a device as
well as an index. Rewritten as ``torch.device(type, args.local_rank)`` and
``torch.accelerator.device_index(args.local_rank)``, which take an index only, both raised
``TypeError`` on CUDA (read set 106). Such an argument stays, with a note.
"""

from __future__ import annotations

import ast
import re

from .module_kind import non_test
from .project_scan import project_root, source_index, source_reader

#: ``name = torch.device(...)`` or ``obj.name = torch.device(...)``, as text, a statement of its own line.
_ASSIGNED = re.compile(rb"^[ \t]*(?:[\w.]+\.)?(\w+)[ \t]*=[ \t]*torch\.device\(", re.MULTILINE)


@source_reader("device_holders", non_test)
def _holders_in(path: str, data: bytes) -> frozenset[str] | None:
    """The names one source file binds to ``torch.device(...)``."""
    if b"torch.device(" not in data:
        return None
    return frozenset(m.group(1).decode("ascii", "replace") for m in _ASSIGNED.finditer(data))


def held_device(ctx, node: ast.AST) -> str:
    """Where ``node`` (a name, or an attribute such as ``args.local_rank``) is spelled with a name the
    project, or this module, binds to a device object: that file and the name; else ``""``."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    if not name or name.lower() == "device":  # `.cuda(device)` is another rule's (and rewritten as it is)
        return ""
    if "_nrn_device_holders" not in ctx.__dict__:  # the module's own, read once
        ctx.__dict__["_nrn_device_holders"] = _holders_in(ctx.path or "", ctx.text.encode("utf-8", "surrogatepass")) or ()
    if name in ctx.__dict__["_nrn_device_holders"]:
        return f"`{name}` (this module)"
    root = project_root(ctx.path) if ctx.path else None
    return f"`{name}` (elsewhere in the project)" if root and any(
        name in found for found in source_index(root, "device_holders")) else ""


def held_device_note(ctx, node: ast.AST, target: str) -> str:
    """The note where ``node`` may hold a device rather than the index ``target`` takes, or ``""``."""
    held = held_device(ctx, node)
    return (f"not rewritten: the project binds {held} to a device object, so this argument may be a device "
            f"rather than an index; `{target}` takes an index only. Pass the device's index, or write "
            "`.to(device)` by hand") if held else ""
