"""When a ``torch.cuda.Stream`` must stay one: a generic ``torch.Stream`` (what ``torch.Stream()``
and ``torch.accelerator.current_stream()`` give) never equals a ``torch.cuda.Stream`` and has no
``cuda_stream`` handle, which TensorRT, CuPy and custom extensions read."""

from __future__ import annotations

import ast
import re

from .project_scan import first_in_project, pattern_index

#: Their CUDA results are ``torch.cuda.Stream``s, whose ``__eq__`` is False for any other class.
STREAM_GETTERS = frozenset({"torch.cuda.current_stream", "torch.cuda.Stream"})

#: Stream methods and functions that take any ``torch.Stream``.
_STREAM_TAKERS = frozenset({"wait_stream", "record_stream", "wait_event", "record_event", "set_stream", "stream"})


def cuda_stream_needed(ctx, call: ast.Call) -> str:
    """Why the ``torch.cuda.Stream`` that ``call`` returns must stay one ("" when it need not): it is
    compared with another stream, its ``cuda_stream`` handle is read, or it is handed to code
    outside torch (torchtune passes it to vLLM's NCCL broadcast, which reads ``stream.cuda_stream``)."""
    parent = ctx.parent(call)
    if isinstance(parent, ast.Compare):
        return "the stream is compared with another one (a `torch.cuda.Stream` never equals a `torch.Stream`)"
    if isinstance(parent, ast.Attribute) and parent.attr == "cuda_stream":
        return "its `cuda_stream` handle is read"
    bound = _handle_read_later(ctx, call, parent)
    if bound:
        return f"the `cuda_stream` handle of `{bound}`, which holds it, is read"
    read = _escapes(ctx, call) and project_reads_handles(getattr(ctx, "path", "") or "")
    if read:
        return (f"it is handed out of the function, and the project reads streams' `cuda_stream` handles "
                f"({read})")
    outer = ctx.parent(parent) if isinstance(parent, ast.keyword) else parent
    if isinstance(outer, ast.Call) and outer.func is not call:
        name = ctx.qualname(outer.func) or ""
        last = outer.func.attr if isinstance(outer.func, ast.Attribute) else getattr(outer.func, "id", "")
        if not name.startswith("torch.") and last not in _STREAM_TAKERS and not (
                last == "record" and _becomes_a_torch_event(ctx, outer.func.value)):
            return f"it is handed to `{ctx.segment(outer.func)}`, which may need a CUDA stream"
    return ""


def _becomes_a_torch_event(ctx, receiver) -> bool:
    """Is ``receiver`` (of ``.record(stream)``) a name or attribute that the module sets only to
    ``torch.cuda.Event(...)`` with keywords ``torch.Event`` takes, which NRN203 rewrites to
    ``torch.Event`` (whose ``record`` takes any ``torch.Stream``), or to ``None``? stylegan2-ada's
    ``phase.start_event = torch.cuda.Event(enable_timing=True)`` ... ``.record(torch.cuda.current_stream(device))``:
    the events became ``torch.Event`` and the streams stayed CUDA's, which Trainium cannot record on."""
    def key(node):
        if isinstance(node, ast.Name):
            return ("name", node.id)
        return ("attr", node.attr) if isinstance(node, ast.Attribute) else None

    wanted, found = key(receiver), False
    if wanted is None:
        return False
    for n in ctx.walk(ctx.tree):
        if isinstance(n, ast.Assign) and any(key(t) == wanted for t in n.targets):
            v = n.value
            if isinstance(v, ast.Constant) and v.value is None:
                continue  # eg3d's `phase.start_event = None`, set to an event only when timing
            if not (isinstance(v, ast.Call) and ctx.qualname(v.func) == "torch.cuda.Event" and not v.args
                    and all(k.arg in ("enable_timing", "blocking", "interprocess") for k in v.keywords)):
                return False
            found = True
    return found


def _handle_read_later(ctx, call: ast.Call, parent) -> str:
    """The name or attribute ``call`` is assigned to when its ``.cuda_stream`` is read later: in
    the same function for a local name (flux's CUDA-graph capture: ``s = torch.cuda.Stream()``,
    then ``execute_async_v3(s.cuda_stream)``), anywhere in the module for ``self.<attr>``."""
    if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1 and parent.value is call):
        return ""
    target = parent.targets[0]
    if isinstance(target, ast.Name):
        scope, wanted = ctx.enclosing_function(call) or ctx.tree, target.id
    elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        scope, wanted = ctx.tree, target.attr
    else:
        return ""
    for n in ctx.walk(scope):
        if isinstance(n, ast.Attribute) and n.attr == "cuda_stream":
            held = n.value
            name = held.id if isinstance(held, ast.Name) else held.attr if isinstance(held, ast.Attribute) else None
            if name == wanted and (isinstance(held, ast.Name) == isinstance(target, ast.Name)):
                return ctx.segment(target)
    return ""


def _escapes(ctx, call: ast.Call) -> bool:
    """Is the stream ``call`` gives handed out of its function: returned, or kept in a global or an
    attribute (vLLM's ``current_stream()``, copied by FastVideo: ``_current_stream =
    torch.cuda.current_stream()``, then ``return _current_stream``)?"""
    node, parent = call, ctx.parent(call)
    while isinstance(parent, ast.IfExp) and node is not parent.test:
        node, parent = parent, ctx.parent(parent)
    if isinstance(parent, ast.Return):
        return True
    if not (isinstance(parent, ast.Assign) and parent.value is node):
        return False
    fn = ctx.enclosing_function(call)
    declared = {name for n in ctx.walk(fn) if isinstance(n, ast.Global) for name in n.names} if fn else set()
    return any(isinstance(t, ast.Attribute) or isinstance(t, ast.Name) and t.id in declared for t in parent.targets)


_HANDLE_READ = re.compile(rb"\.cuda_stream\b")
pattern_index("cuda_stream_read", _HANDLE_READ, b"cuda_stream")


def project_reads_handles(path: str) -> str:
    """``path:line`` of the first read of a stream's ``cuda_stream`` handle in the project of
    ``path`` (FastVideo's ``pynccl.py``: ``cudaStream_t(stream.cuda_stream)``), or ``""``."""
    return first_in_project(path, "cuda_stream_read")
