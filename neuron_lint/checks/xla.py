"""NRN7xx (and NRN110): the strings of the legacy PyTorch/XLA path, which the catalog's data cannot place.

An ``"xla"`` string means different things by where it stands: the process-group backend
(``init_process_group("xla")``, ``init_method="xla://"``), the compile backend
(``torch.compile(backend="openxla")``), the autocast device (``autocast("xla")``), or a device
(``torch.device("xla")``, ``.to("xla")``, ``device.type == "xla"``, ``device = "xla"``). Each
place belongs to one rule; the calls claim their strings first (a call is visited before its
arguments), and whatever ``"xla"`` string is left is a device string. XLA environment variables
are found wherever their names appear as strings (``os.environ[...]``, ``env={...}``,
``"XLA_USE_BF16" in os.environ``), and ``NEURON_CC_FLAGS`` tokens that only the XLA path reads
inside strings of a module that sets ``NEURON_CC_FLAGS``.

NRN110 (mixed workload): a module that imports ``torch_xla`` (outside an import guard) and also
names the native ``neuron`` device or backend.
"""

from __future__ import annotations

import ast
import re
from typing import Iterable

from ..catalog.registry import matcher

DEVICE_STRING = re.compile(r"^xla(:\d*)?$")
COMPILE_BACKENDS = re.compile(r"^(openxla(_eval)?|aot_torchxla_\w+)$")
BF16_ENV = frozenset({"XLA_USE_BF16", "XLA_DOWNCAST_BF16", "XLA_USE_FP16"})
XLA_ENV = re.compile(r"^(XLA_[A-Z0-9_]+|PJRT_[A-Z0-9_]+|TPU_[A-Z0-9_]+)$")
CC_TOKENS = ("--cache_dir", "--retry_failed_compilation", "--auto-cast", "--enable-fast-loading-neuron-binaries")
NEURON_STRING = re.compile(r"^neuron(:\d+)?$")

_DIST_INIT = {"torch.distributed.init_process_group", "torch.distributed.distributed_c10d.init_process_group"}
_NEW_GROUP = {"torch.distributed.new_group", "torch.distributed.distributed_c10d.new_group"}
_COMPILE = {"torch.compile", "torch._dynamo.optimize"}
_AUTOCAST = {"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"}


def _arg(call: ast.Call, position: int | None, keyword: str | None):
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    if position is not None and position < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[: position + 1]):
        return call.args[position]
    return None


def _strings(node) -> Iterable[ast.Constant]:
    """The string constants an argument may evaluate to (both arms of `a if c else b`)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node
    elif isinstance(node, ast.IfExp):
        yield from _strings(node.body)
        yield from _strings(node.orelse)


def _claims(model, call: ast.Call) -> dict[int, tuple[str, ast.Constant]]:
    """The XLA strings of one call that belong to a rule other than the device-string one."""
    memo = model.notes.setdefault("xla_claims", {})
    if id(call) in memo:
        return memo[id(call)]
    found: dict[int, tuple[str, ast.Constant]] = {}
    qual = model.qualname(call.func) if isinstance(call.func, (ast.Name, ast.Attribute)) else None
    if qual in _DIST_INIT or qual in _NEW_GROUP:
        backend = _arg(call, 0 if qual in _DIST_INIT else 2, "backend")
        for s in _strings(backend):
            if s.value == "xla":
                found[id(s)] = ("backend", s)
        for s in _strings(_arg(call, 1 if qual in _DIST_INIT else None, "init_method")):
            if s.value.startswith("xla://"):
                found[id(s)] = ("init_method", s)
    elif qual in _COMPILE:
        for s in _strings(_arg(call, 0 if qual == "torch._dynamo.optimize" else None, "backend")):
            if COMPILE_BACKENDS.match(s.value):
                found[id(s)] = ("compile", s)
    elif qual in _AUTOCAST:
        for s in _strings(_arg(call, 0, "device_type")):
            if s.value == "xla":
                found[id(s)] = ("autocast", s)
    memo[id(call)] = found
    model.notes.setdefault("xla_claimed", set()).update(found)
    return found


def _claimed(model, kind: str, node: ast.Call) -> Iterable[tuple[ast.AST, str]]:
    for what, s in _claims(model, node).values():
        if what == kind or (kind == "backend" and what == "init_method"):
            yield s, s.value


@matcher(ast.Call)
def xla_process_group(model, node: ast.Call) -> Iterable[tuple[ast.AST, str]]:
    """``init_process_group("xla")`` / ``init_method="xla://"`` / ``new_group(..., backend="xla")``."""
    yield from _claimed(model, "backend", node)


@matcher(ast.Call)
def xla_compile_backend(model, node: ast.Call) -> Iterable[tuple[ast.AST, str]]:
    """``torch.compile(backend="openxla")`` and the other XLA dynamo backends."""
    yield from _claimed(model, "compile", node)


@matcher(ast.Call)
def xla_autocast(model, node: ast.Call) -> Iterable[tuple[ast.AST, str]]:
    """``torch.autocast("xla")`` / ``torch.autocast(device_type="xla")``."""
    yield from _claimed(model, "autocast", node)


@matcher(ast.Call, ast.Constant)
def xla_device_string(model, node) -> Iterable[tuple[ast.AST, str]]:
    """Any other ``"xla"`` / ``"xla:0"`` string: a device, a device type, a comparison with one."""
    if isinstance(node, ast.Call):
        _claims(model, node)  # let the call claim its backend strings before they are visited
        return
    value = node.value
    if isinstance(value, str) and DEVICE_STRING.match(value) and id(node) not in model.notes.get("xla_claimed", ()):
        yield node, value


@matcher(ast.Constant)
def xla_bf16_env(model, node: ast.Constant) -> Iterable[tuple[ast.AST, str]]:
    """``XLA_USE_BF16`` / ``XLA_DOWNCAST_BF16`` named anywhere as a string."""
    if node.value in BF16_ENV:
        yield node, node.value


@matcher(ast.Constant)
def xla_env_var(model, node: ast.Constant) -> Iterable[tuple[ast.AST, str]]:
    """An XLA/PJRT runtime environment variable named as a string (``PJRT_DEVICE``, ``XLA_FLAGS``...)."""
    value = node.value
    if isinstance(value, str) and value not in BF16_ENV and XLA_ENV.match(value):
        yield node, value


@matcher(ast.Constant)
def neuron_cc_xla_flags(model, node: ast.Constant) -> Iterable[tuple[ast.AST, str]]:
    """A ``NEURON_CC_FLAGS`` token the native backend handles itself (cache dir, retries, auto-cast)."""
    value = node.value
    if isinstance(value, str) and "--" in value:
        for token in CC_TOKENS:
            if token in value:
                yield node, token
                return


# ---------------------------------------------------------------- NRN110: mixed workloads
_NEURON_FIRST_ARG = _DIST_INIT | _AUTOCAST | {
    "torch.device", "torch.distributed.device_mesh.init_device_mesh", "torch.distributed.init_device_mesh",
}


def _imports_xla(model) -> bool:
    return bool(model.notes.get("xla_imported"))


@matcher(ast.Import, ast.ImportFrom, ast.Call)
def xla_mixed_workload(model, node) -> Iterable[tuple[ast.AST, str]]:
    """The native ``neuron`` device or backend in a module that imports ``torch_xla`` unguarded."""
    if isinstance(node, ast.Import):
        if not model.guarded and any(a.name.split(".")[0] == "torch_xla" for a in node.names):
            model.notes["xla_imported"] = True
        return
    if isinstance(node, ast.ImportFrom):
        if not model.guarded and not node.level and (node.module or "").split(".")[0] == "torch_xla":
            model.notes["xla_imported"] = True
        return
    if not _imports_xla(model):
        return
    qual = model.qualname(node.func) if isinstance(node.func, (ast.Name, ast.Attribute)) else None
    first = qual in _NEURON_FIRST_ARG or (isinstance(node.func, ast.Attribute) and node.func.attr == "to" and qual is None)
    values = [*(node.args[:1] if first else ()), *(k.value for k in node.keywords if k.arg in ("device", "device_type", "backend"))]
    for v in values:
        for s in _strings(v):
            if NEURON_STRING.match(s.value):
                yield s, s.value
                return
