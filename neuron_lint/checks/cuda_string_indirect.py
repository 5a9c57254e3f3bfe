"""NRN213: CUDA/NCCL strings reaching a device or backend indirectly (option defaults, fallbacks, variables)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterable

from ..catalog.registry import matcher
from ..engine.parameters import parameter_defaults
from ..engine.values import argument
from .device_strings import cuda_literal, device_named, format_in

if TYPE_CHECKING:
    from ..engine.semantic import SemanticModel


def _availability_idiom(node: ast.AST | None) -> bool:
    """``"cuda" if torch.cuda.is_available() else "cpu"``: NRN203 reports the test on the same line,
    and the device-string fixer rewrites the whole expression; a second finding would only block it."""
    return isinstance(node, ast.IfExp) and any(
        isinstance(n, ast.Attribute) and n.attr in ("is_available", "device_count") for n in ast.walk(node.test)
    )


def _option_names(call: ast.Call) -> list[str]:
    """``add_argument("--dist-backend", "-b", dest="backend")`` -> ["dist_backend", "b", "backend"]."""
    names = [a.value.lstrip("-").replace("-", "_") for a in call.args
             if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    names += [kw.value.value for kw in call.keywords
              if kw.arg == "dest" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str)]
    return names


def _nccl_literal(node: ast.AST | None) -> ast.AST | None:
    """``"nccl"``, ``"NCCL"``, ``"cpu:gloo,cuda:nccl"`` (or either arm of ``a if c else b``)."""
    if isinstance(node, ast.IfExp):
        return _nccl_literal(node.body) or _nccl_literal(node.orelse)
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and "nccl" in node.value.lower():
        return node
    return None


def _backend_named(name: str) -> bool:
    n = name.lower()
    return n in ("backend", "dist_backend", "distributed_backend", "ddp_backend", "comm_backend", "pg_backend") \
        or n.endswith("_dist_backend") or n.endswith("dist_backend")


@matcher(ast.Call)
def cuda_option_default(model: SemanticModel, node: ast.Call) -> Iterable[tuple[ast.AST, str]]:
    """``parser.add_argument("--device", default="cuda")`` / ``("--dist-backend", default="nccl")``:
    the program runs on CUDA unless told otherwise."""
    func = node.func
    if not isinstance(func, ast.Attribute) or func.attr != "add_argument":
        return
    default = argument(node, None, "default")
    if default is None or _availability_idiom(default):
        return
    names = _option_names(node)
    if any(device_named(n) for n in names):
        found = cuda_literal(default)
        if found is not None:
            yield found, f"default={ast.unparse(found)}"
    elif any(_backend_named(n) for n in names):
        found = _nccl_literal(default)
        if found is not None:
            yield found, f"default={ast.unparse(found)}"


def _fallback_cuda(node: ast.AST | None) -> ast.AST | None:
    """The CUDA default of ``getattr(args, "device", "cuda")``, ``x or "cuda"``, ``cfg.get("device", "cuda")``,
    ``os.environ.get("DEVICE", "cuda")``."""
    if isinstance(node, ast.IfExp):
        return _fallback_cuda(node.body) or _fallback_cuda(node.orelse)
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        return cuda_literal(node.values[-1])
    if isinstance(node, ast.Call) and len(node.args) >= 2 and not node.keywords:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) == 3:
            attr = node.args[1]
            if isinstance(attr, ast.Constant) and isinstance(attr.value, str) and device_named(attr.value):
                return cuda_literal(node.args[2])
        elif isinstance(func, ast.Attribute) and func.attr in ("get", "getenv", "pop", "setdefault") and len(node.args) == 2:
            return cuda_literal(node.args[1])
    return None


def _device_sink_values(model: SemanticModel, node: ast.AST) -> list[ast.AST]:
    """Expressions in a place where a device is expected (see device_string_format)."""
    values: list[ast.AST] = []
    if isinstance(node, ast.Call):
        func = node.func
        first = node.args[0] if node.args and not isinstance(node.args[0], ast.Starred) else None
        qual = model.qualname(func) if isinstance(func, (ast.Name, ast.Attribute)) else None
        if qual in ("torch.device", "torch.autocast", "torch.amp.autocast") or (
                isinstance(func, ast.Attribute) and func.attr == "to"):
            values.append(first)
        values += [kw.value for kw in node.keywords if kw.arg in _DEVICE_KEYWORDS]
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        values += [d for p, d in parameter_defaults(node.args) if device_named(p.arg)]
    else:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
        for t in targets:
            name = t.id if isinstance(t, ast.Name) else getattr(t, "attr", None)
            if name and device_named(name):
                values.append(node.value)  # type: ignore[attr-defined]
    return [v for v in values if v is not None]


_DEVICE_KEYWORDS = ("device", "device_type", "map_location", "device_map")


@matcher(ast.Call, ast.Assign, ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef)
def device_string_fallback(model: SemanticModel, node: ast.AST) -> Iterable[tuple[ast.AST, str]]:
    """A CUDA default behind a fallback where a device is expected: ``device=getattr(args, "device", "cuda")``,
    ``device = detect() or "cuda"``, ``torch.device(cfg.get("device", "cuda"))``."""
    for value in _device_sink_values(model, node):
        if _availability_idiom(value):
            continue
        found = _fallback_cuda(value)
        if found is not None:
            yield found, ast.unparse(found)


@matcher(ast.FunctionDef, ast.AsyncFunctionDef)
def device_type_default(model: SemanticModel, node: ast.AST) -> Iterable[tuple[ast.AST, str]]:
    """``def load(path, dev="cuda")``: a parameter with a short or other device-like name (``dev``,
    ``device_name``, ``accelerator``) whose default is CUDA (``device``-named ones are NRN202's)."""
    for p, d in parameter_defaults(node.args):  # type: ignore[attr-defined]
        if p.arg in ("device_type", "dev", "device_name", "accelerator") and not device_named(p.arg):
            found = cuda_literal(d)
            if found is not None:
                yield found, ast.unparse(found)


def _target_text(t: ast.AST) -> str | None:
    if isinstance(t, ast.Name):
        return t.id
    if isinstance(t, ast.Attribute) and isinstance(t.value, (ast.Name, ast.Attribute)):
        base = _target_text(t.value)
        return f"{base}.{t.attr}" if base else None
    return None


_DIST_INIT = ("torch.distributed.init_process_group", "torch.distributed.distributed_c10d.init_process_group")
_DIST_GROUP = ("torch.distributed.new_group", "torch.distributed.distributed_c10d.new_group")


def _sinks(model: SemanticModel) -> dict[str, set[str]]:
    """Names and attribute chains the module passes where a device ("device") or a process-group
    backend ("backend") is expected: ``torch.device(arg)``, ``map_location=loc``,
    ``init_process_group(backend=backend)``. Computed once per module."""
    tree = model.tree
    if tree is None:
        return {}
    cached = model.notes.get("device_sinks")
    if cached is not None and cached[0] is tree:
        return cached[1]
    sinks: dict[str, set[str]] = {}

    def add(expr: ast.AST | None, kind: str) -> None:
        text = _target_text(expr) if expr is not None else None
        if text:
            sinks.setdefault(text, set()).add(kind)

    for n in ast.walk(tree):
        if not isinstance(n, ast.Call):
            continue
        func = n.func
        qual = model.qualname(func) if isinstance(func, (ast.Name, ast.Attribute)) else None
        first = n.args[0] if n.args and not isinstance(n.args[0], ast.Starred) else None
        if qual in _DIST_INIT:
            add(first, "backend")
            add(argument(n, None, "backend"), "backend")
        elif qual in _DIST_GROUP:
            add(n.args[2] if len(n.args) > 2 else None, "backend")
            add(argument(n, None, "backend"), "backend")
        if qual in ("torch.device", "torch.autocast", "torch.amp.autocast") or (
                isinstance(func, ast.Attribute) and func.attr == "to" and qual is None):
            add(first, "device")
        for kw in n.keywords:
            if kw.arg in _DEVICE_KEYWORDS:
                add(kw.value, "device")
    model.notes["device_sinks"] = (tree, sinks)
    return sinks


def _indexed_arm(node: ast.IfExp) -> ast.AST | None:
    """The CUDA arm of ``f"cuda:{rank}" if torch.cuda.is_available() else "cpu"`` (or of
    ``"cuda:{}".format(rank) if ...``), built with a run-time index: NRN203's fix of the test takes
    ``"cuda"`` and ``"cuda:0"`` arms along, not these (unimatch's ``loc``, read set 84)."""
    for arm in (node.body, node.orelse):
        if isinstance(arm, ast.JoinedStr) and cuda_literal(arm) is not None:
            return arm
        found = format_in(arm)
        if found is not None:
            return found
    return None


@matcher(ast.Assign, ast.AnnAssign)
def cuda_string_flow(model: SemanticModel, node: ast.AST) -> Iterable[tuple[ast.AST, str]]:
    """``backend = "nccl"`` later given to ``init_process_group(backend=backend)``; ``loc = f"cuda:{gpu}"``
    later given as ``map_location=loc``; ``arg = "cuda:0"`` later given to ``torch.device(arg)``."""
    value = node.value  # type: ignore[attr-defined]
    if value is None:
        return
    idiom = _availability_idiom(value)  # a CUDA device chosen this way is NRN202/NRN203's, fixed as a whole
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
    sinks = None
    for t in targets:
        text = _target_text(t)
        if not text:
            continue
        name = text.rsplit(".", 1)[-1]
        if idiom:  # NRN202 reports it in a device-named variable; elsewhere its indexed arm is ours
            cuda = None if device_named(name) else _indexed_arm(value)
        else:
            cuda = cuda_literal(value) or (_fallback_cuda(value) or format_in(value) if not device_named(name) else None)
        nccl = _nccl_literal(value)
        if cuda is None and nccl is None:
            continue
        if sinks is None:
            sinks = _sinks(model)
        kinds = sinks.get(text, ())
        if cuda is not None and "device" in kinds and (not device_named(name) or cuda is not cuda_literal(value)):
            yield cuda, ast.unparse(cuda)
        if nccl is not None and "backend" in kinds:
            yield nccl, ast.unparse(nccl)


@matcher(ast.Dict)
def nccl_backend_table(model: SemanticModel, node: ast.Dict) -> Iterable[tuple[ast.AST, str]]:
    """``{"cuda": "nccl", "cpu": "gloo"}``: a device-to-backend table that sends CUDA to NCCL and has no
    entry for Neuron."""
    for key, value in zip(node.keys, node.values):
        if isinstance(key, ast.Constant) and key.value in ("cuda", "gpu"):
            found = _nccl_literal(value)
            if found is not None and not any(isinstance(k, ast.Constant) and k.value == "neuron" for k in node.keys):
                yield found, f"{key.value!r}: {found.value!r}"  # type: ignore[attr-defined]
