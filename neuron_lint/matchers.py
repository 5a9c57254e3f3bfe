"""Matchers written in Python, for the few rules whose matching the catalog's data cannot express.

A rule names one with ``[[match]] matcher = "<name>"`` plus the ``trigger`` words its findings
need. A matcher is a function ``(analyzer, node) -> iterable of (node_to_report, subject)``
with a ``node_types`` attribute listing the ast node types it wants to see.
"""

from __future__ import annotations

import ast
import re
from typing import Callable, Iterable

from .parameters import parameter_defaults

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


# ---------------------------------------------------------------- NRN304: int64 beyond 32 bits
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_DTYPES = {"torch.int64", "torch.long"}
# Factories whose value arguments become tensor elements: qualified name -> (positions, keywords).
# `None` for positions means every positional argument (torch.arange's start/end/step).
_VALUE_ARGS: dict[str, tuple[tuple[int, ...] | None, tuple[str, ...]]] = {
    "torch.tensor": ((0,), ("data",)),
    "torch.as_tensor": ((0,), ("data",)),
    "torch.scalar_tensor": ((0,), ("s",)),
    "torch.LongTensor": ((0,), ()),
    "torch.full": ((1,), ("fill_value",)),
    "torch.full_like": ((1,), ("fill_value",)),
    "torch.arange": (None, ("start", "end", "step")),
    "torch.randint": ((0, 1), ("low", "high")),
    "torch.randint_like": ((1, 2), ("low", "high")),
}
_FLOAT_DTYPE_WORDS = ("float", "half", "double", "bfloat16", "complex", "cfloat", "cdouble")
_SAFE_BINOPS = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.BitAnd: lambda a, b: a & b, ast.BitOr: lambda a, b: a | b, ast.BitXor: lambda a, b: a ^ b,
    ast.FloorDiv: lambda a, b: a // b if b else None, ast.Mod: lambda a, b: a % b if b else None,
}


def _int_value(analyzer, node: ast.AST) -> int | None:
    """The value of a constant integer expression (``2**40``, ``1 << 62``, ``-7``), else None."""
    if isinstance(node, ast.Constant):
        v = node.value
        return v if isinstance(v, int) and not isinstance(v, bool) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Invert)):
        v = _int_value(analyzer, node.operand)
        if v is None:
            return None
        return -v if isinstance(node.op, ast.USub) else (~v if isinstance(node.op, ast.Invert) else v)
    if isinstance(node, ast.BinOp):
        a, b = _int_value(analyzer, node.left), _int_value(analyzer, node.right)
        if a is None or b is None:
            return None
        if isinstance(node.op, ast.Pow):
            return a**b if 0 <= b <= 128 and abs(a) <= 2**16 else None
        if isinstance(node.op, ast.LShift):
            return a << b if 0 <= b <= 128 else None
        if isinstance(node.op, ast.RShift):
            return a >> b if b >= 0 else None
        op = _SAFE_BINOPS.get(type(node.op))
        return op(a, b) if op else None
    # torch.iinfo(torch.int64).max / .min
    if isinstance(node, ast.Attribute) and node.attr in ("max", "min") and isinstance(node.value, ast.Call):
        call = node.value
        if analyzer.qualname(call.func) == "torch.iinfo" and len(call.args) == 1:
            if analyzer.qualname(call.args[0]) in _INT64_DTYPES:
                return 2**63 - 1 if node.attr == "max" else -(2**63)
    return None


def _large_ints(analyzer, node: ast.AST, depth: int = 0) -> Iterable[ast.AST]:
    if isinstance(node, (ast.List, ast.Tuple)) and depth < 4:
        for elt in node.elts:
            yield from _large_ints(analyzer, elt, depth + 1)
        return
    v = _int_value(analyzer, node)
    if v is not None and not _INT32_MIN <= v <= _INT32_MAX:
        yield node


@matcher(ast.Call)
def int64_beyond_int32(analyzer, node: ast.Call) -> Iterable[tuple[ast.AST, str]]:
    """An integer literal outside the int32 range placed into a torch tensor (int64 may run as int32)."""
    qual = analyzer.qualname(node.func) if isinstance(node.func, (ast.Name, ast.Attribute)) else None
    spec = _VALUE_ARGS.get(qual or "")
    if spec is None:
        return
    device = None
    for kw in node.keywords:
        if kw.arg == "dtype":
            dtype = analyzer.qualname(kw.value) or ""
            if any(word in dtype.rsplit(".", 1)[-1] for word in _FLOAT_DTYPE_WORDS):
                return  # a floating-point tensor: the value is not an int64 element
        elif kw.arg in ("device", None):  # `device=...`, or **kwargs that may carry one
            device = kw.value
    if device is None or isinstance(device, ast.Constant) and device.value == "cpu":
        return  # a host tensor (a seed drawn with `.item()`, a hash table): int64 is exact there
    positions, keywords = spec
    values: list[ast.AST] = []
    for i, arg in enumerate(node.args):
        if isinstance(arg, ast.Starred):
            break
        if positions is None or i in positions:
            values.append(arg)
    values.extend(kw.value for kw in node.keywords if kw.arg in keywords)
    # randint's positional low/high may be the size tuple: only look at top-level integers there
    shallow = qual in ("torch.randint", "torch.randint_like")
    for value in values:
        if shallow and isinstance(value, (ast.List, ast.Tuple)):
            continue
        for big in _large_ints(analyzer, value):
            yield big, ast.unparse(big)
            return  # one finding per call: the first value that does not fit


# ---------------------------------------------------------------- NRN405: Inductor-only compile options
#: `torch.compile(options=...)` keys the Neuron backend is known to read.
NEURON_COMPILE_OPTIONS = frozenset({"fallback_execution", "model_name"})


@matcher(ast.Call)
def compile_inductor_options(analyzer, node: ast.Call) -> Iterable[tuple[ast.AST, str]]:
    """Keys of a literal ``options={...}`` dict given to ``torch.compile`` that Neuron does not read."""
    if not isinstance(node.func, (ast.Name, ast.Attribute)) or analyzer.qualname(node.func) != "torch.compile":
        return
    for kw in node.keywords:
        if kw.arg == "options" and isinstance(kw.value, ast.Dict):
            for key in kw.value.keys:
                if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value not in NEURON_COMPILE_OPTIONS:
                    yield key, key.value


# ---------------------------------------------------------------- NRN407: HF generate without a static cache
#: Keywords only Hugging Face's `generate()` takes in practice; one must be present.
_HF_GENERATE_KEYWORDS = frozenset({"max_new_tokens", "do_sample", "num_beams", "top_p", "num_return_sequences"})
#: Keywords that choose (or may carry) the cache: the call is then left alone.
_CACHE_KEYWORDS = frozenset({"cache_implementation", "generation_config", "past_key_values", "compile_config"})


def _imports_transformers(analyzer) -> bool:
    for qual in analyzer._scopes[0].values():
        if qual and qual.lstrip("\x01").split(".", 1)[0] == "transformers":
            return True
    return False


@matcher(ast.Call)
def hf_generate_without_static_cache(analyzer, node: ast.Call) -> Iterable[tuple[ast.AST, str]]:
    """``model.generate(..., max_new_tokens=...)`` in a file using transformers, with no cache choice."""
    func = node.func
    if not isinstance(func, ast.Attribute) or func.attr != "generate":
        return
    names = {kw.arg for kw in node.keywords}
    if not names & _HF_GENERATE_KEYWORDS or names & _CACHE_KEYWORDS:
        return
    if analyzer.qualname(func) is not None or not _imports_transformers(analyzer):
        return  # `module.generate(...)` is a function, not a model method
    yield func, "generate"


_DDP = ("torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel")


@matcher(ast.Call)
def ddp_device_ids(analyzer, node: ast.Call) -> Iterable[tuple[ast.AST, str]]:
    """``DistributedDataParallel(model, device_ids=[...])``: CUDA device indices (``None`` is fine)."""
    if analyzer.qualname(node.func) not in _DDP:
        return
    for kw in node.keywords:
        # A literal list of indices is CUDA-specific; a variable may already be None off CUDA.
        if kw.arg == "device_ids" and isinstance(kw.value, (ast.List, ast.Tuple)) and kw.value.elts:
            yield kw.value, kw.arg


@matcher(ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Call)
def inductor_config_write(analyzer, node: ast.AST) -> Iterable[tuple[ast.AST, str]]:
    """A write to ``torch._inductor.config`` (assignment or ``config.patch(...)``); reading it is silent."""
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "patch":
            qual = analyzer.qualname(func.value)
            if qual == "torch._inductor.config":
                yield func, qual + ".patch"
        return
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for target in targets:
        if isinstance(target, ast.Attribute):
            qual = analyzer.qualname(target)
            if qual is not None and qual.startswith("torch._inductor.config."):
                yield target, qual


# ---------------------------------------------------------------- NRN502: gradient scaler (CPU fallback)
_GRAD_SCALERS = frozenset({
    "torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler", "torch.GradScaler", "torch.cpu.amp.GradScaler",
    "torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler",
})


@matcher(ast.Call)
def grad_scaler_construction(analyzer, node: ast.Call) -> Iterable[tuple[ast.AST, str]]:
    """A gradient scaler for Neuron or for whatever device the code runs on (not a literal other device)."""
    if not isinstance(node.func, (ast.Name, ast.Attribute)):
        return
    qual = analyzer.qualname(node.func)
    if qual not in _GRAD_SCALERS:
        return
    device = node.args[0] if node.args and not isinstance(node.args[0], ast.Starred) else None
    for kw in node.keywords:
        if kw.arg == "device":
            device = kw.value
    if isinstance(device, ast.Constant) and isinstance(device.value, str) and not device.value.startswith("neuron"):
        return  # "cuda": NRN205 reports it; "hpu", "xpu", "mps": a branch for another device
    yield node.func, qual


@matcher(ast.Attribute)
def tensor_is_cuda(analyzer, node: ast.Attribute) -> Iterable[tuple[ast.AST, str]]:
    """``x.is_cuda`` read on a value: not ``self.is_cuda``/``cls.is_cuda`` (a class's own flag), not a write."""
    if node.attr != "is_cuda" or not isinstance(node.ctx, ast.Load):
        return
    base = node.value
    if isinstance(base, ast.Name) and (base.id in ("self", "cls") or analyzer.lookup(base.id) is not None):
        return  # an object's own attribute, or a module (`torch.is_cuda` is not a tensor property)
    yield node, ".is_cuda"


_DEVICE_NAMES = ("device", "device_*", "*_device", "DEVICE", "*_DEVICE", "DEVICE_*")


def _cuda_literal(node: ast.AST) -> ast.AST | None:
    """``"cuda"``, ``"cuda:1"``, ``f"cuda:{i}"`` (or either arm of ``a if c else b``); not containers."""
    if isinstance(node, ast.IfExp):
        return _cuda_literal(node.body) or _cuda_literal(node.orelse)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        v = node.value
        return node if v == "cuda" or (v.startswith("cuda:") and v[5:].isdigit()) else None
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value == "cuda:":
            return node
    return None


def _device_named(name: str) -> bool:
    import fnmatch

    return any(fnmatch.fnmatchcase(name, p) for p in _DEVICE_NAMES)


@matcher(ast.Assign, ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef)
def device_string_assignment(analyzer, node: ast.AST) -> Iterable[tuple[ast.AST, str]]:
    """A CUDA device string stored in a variable or parameter named like a device (not a tuple of names)."""
    pairs: list[tuple[str, ast.AST]] = []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        pairs += [(p.arg, d) for p, d in parameter_defaults(node.args)]
    else:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if node.value is not None:
            for t in targets:
                name = t.id if isinstance(t, ast.Name) else getattr(t, "attr", None)
                if name:
                    pairs.append((name, node.value))
    for name, value in pairs:
        if _device_named(name):
            found = _cuda_literal(value)
            if found is not None:
                text = found.value if isinstance(found, ast.Constant) else "cuda:{…}"
                yield found, text


# ---------------------------------------------------------------- NRN202 / NRN205 / NRN206: device strings built at run time, device lists
def _cuda_format_string(node: ast.AST) -> bool:
    """``"cuda:{}".format(i)`` or ``"cuda:%d" % i``: a CUDA device string with a run-time index."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        base = node.func.value
        return isinstance(base, ast.Constant) and isinstance(base.value, str) and base.value in ("cuda:{}", "cuda:{0}")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left = node.left
        return isinstance(left, ast.Constant) and isinstance(left.value, str) and left.value in ("cuda:%d", "cuda:%s", "cuda:%i")
    return False


def _format_in(value: ast.AST | None) -> ast.AST | None:
    if value is None:
        return None
    if isinstance(value, ast.IfExp):
        return _format_in(value.body) or _format_in(value.orelse)
    return value if _cuda_format_string(value) else None


@matcher(ast.Call, ast.Assign, ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef)
def device_string_format(analyzer, node: ast.AST) -> Iterable[tuple[ast.AST, str]]:
    """``"cuda:{}".format(rank)`` / ``"cuda:%d" % rank`` where a device is expected: ``torch.device(...)``,
    ``device=...``, ``.to(...)``, or a variable or parameter named like a device."""
    values: list[ast.AST] = []
    if isinstance(node, ast.Call):
        func = node.func
        first = node.args[0] if node.args and not isinstance(node.args[0], ast.Starred) else None
        if isinstance(func, (ast.Name, ast.Attribute)) and analyzer.qualname(func) == "torch.device":
            values.append(first)
            values += [kw.value for kw in node.keywords if kw.arg == "type"]
        elif isinstance(func, ast.Attribute) and func.attr == "to":
            values.append(first)
        values += [kw.value for kw in node.keywords if kw.arg == "device"]
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        values += [d for p, d in parameter_defaults(node.args) if _device_named(p.arg)]
    else:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for t in targets:
            name = t.id if isinstance(t, ast.Name) else getattr(t, "attr", None)
            if name and _device_named(name):
                values.append(node.value)
    for value in values:
        found = _format_in(value)
        if found is not None:
            yield found, "cuda:{…}"


_DEVICE_LIST_NAMES = ("devices", "*_devices", "DEVICES", "*_DEVICES", "device_list", "device_choices")


def _device_list(node: ast.AST) -> list[ast.Constant]:
    """The CUDA elements of a literal list/tuple holding only device strings (``["cpu", "cuda"]``).

    A list naming other backends (``("xpu", "cuda", "npu", "mps")``) is a capability table, not a
    choice of devices: it is left alone.
    """
    if not isinstance(node, (ast.List, ast.Tuple)) or not 1 <= len(node.elts) <= 4:
        return []
    found = []
    for elt in node.elts:
        if not (isinstance(elt, ast.Constant) and isinstance(elt.value, str)):
            return []
        v = elt.value
        if v == "cuda" or (v.startswith("cuda:") and v[5:].isdigit()):
            found.append(elt)
        elif v != "cpu":
            return []
    return found


@matcher(ast.For, ast.AsyncFor, ast.Call, ast.Assign)
def device_string_list(analyzer, node: ast.AST) -> Iterable[tuple[ast.AST, str]]:
    """CUDA in a literal list of device choices: ``for device in ["cuda", "cpu"]``,
    ``@pytest.mark.parametrize("device", ["cpu", "cuda"])``, ``devices = ["cuda"]``."""
    values: ast.AST | None = None
    if isinstance(node, (ast.For, ast.AsyncFor)):
        if isinstance(node.target, ast.Name) and _device_named(node.target.id):
            values = node.iter
    elif isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "parametrize" and len(node.args) >= 2:
            names = node.args[0]
            if isinstance(names, ast.Constant) and isinstance(names.value, str) and _device_named(names.value.strip()):
                values = node.args[1]
    elif len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        import fnmatch

        if any(fnmatch.fnmatchcase(node.targets[0].id, p) for p in _DEVICE_LIST_NAMES):
            values = node.value
    for elt in _device_list(values) if values is not None else ():
        yield elt, elt.value


# ---------------------------------------------------------------- NRN303: complex results turned real
@matcher(ast.Call)
def view_as_real_of_computation(analyzer, node: ast.Call) -> Iterable[tuple[ast.AST, str]]:
    """``torch.view_as_real(xq_ * freqs_cis)``: complex arithmetic (or a complex-valued call) on this line.

    ``torch.view_as_real(x)`` of a plain name converts a tensor that may already be complex (input
    handling, ``if x.is_complex():``); the complex maths that made it is reported where it happens.
    """
    if not node.args or not isinstance(node.func, (ast.Name, ast.Attribute)):
        return
    if analyzer.qualname(node.func) not in ("torch.view_as_real", "torch.Tensor.view_as_real"):
        return
    if isinstance(node.args[0], (ast.BinOp, ast.Call)):
        yield node.func, "torch.view_as_real"


# ---------------------------------------------------------------- NRN207: CUDA stack variable names as strings
_CUDA_ENV_NAME = re.compile(
    r"(?:CUDA|CUBLAS|CUBLASLT|CUDNN|NCCL|TORCH_NCCL|TORCH_CUDNN)_[A-Z0-9_]+|TORCH_CUDA_ARCH_LIST"
    r"|PYTORCH_CUDA_ALLOC_CONF|PYTORCH_NO_CUDA_MEMORY_CACHING|NVIDIA_VISIBLE_DEVICES|NVIDIA_TF32_OVERRIDE"
)


def _env_name(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(_CUDA_ENV_NAME.fullmatch(node.value))


@matcher(ast.Assign, ast.AnnAssign, ast.Call, ast.Dict)
def cuda_env_name(analyzer, node: ast.AST) -> Iterable[tuple[ast.AST, str]]:
    """The name of a CUDA/cuBLAS/cuDNN/NCCL variable held in a constant (``ENV = "TORCH_NCCL_..."``),
    handed to an environment helper (``monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")``) or used as
    a key of an environment dict (``env={"NCCL_DEBUG": "INFO"}``). Reads of ``os.environ`` are the
    ``env`` matches' own."""
    if isinstance(node, ast.Dict):
        for key in node.keys:
            if _env_name(key):
                yield key, key.value  # type: ignore[union-attr]
        return
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if "env" not in name.lower() or not node.args:
            return
        qual = analyzer.qualname(func) if isinstance(func, (ast.Name, ast.Attribute)) else None
        if qual is not None and qual.startswith("os."):
            return  # os.environ.get / os.getenv: reported by the env match
        if _env_name(node.args[0]):
            yield node.args[0], node.args[0].value  # type: ignore[attr-defined]
        return
    if _env_name(node.value):  # type: ignore[attr-defined]
        yield node.value, node.value.value  # type: ignore[attr-defined]


# ---------------------------------------------------------------- NRN213: CUDA/NCCL strings reaching a device or backend
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


def _keyword(call: ast.Call, name: str) -> ast.AST | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


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
def cuda_option_default(analyzer, node: ast.Call) -> Iterable[tuple[ast.AST, str]]:
    """``parser.add_argument("--device", default="cuda")`` / ``("--dist-backend", default="nccl")``:
    the program runs on CUDA unless told otherwise."""
    func = node.func
    if not isinstance(func, ast.Attribute) or func.attr != "add_argument":
        return
    default = _keyword(node, "default")
    if default is None or _availability_idiom(default):
        return
    names = _option_names(node)
    if any(_device_named(n) for n in names):
        found = _cuda_literal(default)
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
        return _cuda_literal(node.values[-1])
    if isinstance(node, ast.Call) and len(node.args) >= 2 and not node.keywords:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) == 3:
            attr = node.args[1]
            if isinstance(attr, ast.Constant) and isinstance(attr.value, str) and _device_named(attr.value):
                return _cuda_literal(node.args[2])
        elif isinstance(func, ast.Attribute) and func.attr in ("get", "getenv", "pop", "setdefault") and len(node.args) == 2:
            return _cuda_literal(node.args[1])
    return None


def _device_sink_values(analyzer, node: ast.AST) -> list[ast.AST]:
    """Expressions in a place where a device is expected (see device_string_format)."""
    values: list[ast.AST] = []
    if isinstance(node, ast.Call):
        func = node.func
        first = node.args[0] if node.args and not isinstance(node.args[0], ast.Starred) else None
        qual = analyzer.qualname(func) if isinstance(func, (ast.Name, ast.Attribute)) else None
        if qual in ("torch.device", "torch.autocast", "torch.amp.autocast") or (
                isinstance(func, ast.Attribute) and func.attr == "to"):
            values.append(first)
        values += [kw.value for kw in node.keywords if kw.arg in _DEVICE_KEYWORDS]
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        values += [d for p, d in parameter_defaults(node.args) if _device_named(p.arg)]
    else:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
        for t in targets:
            name = t.id if isinstance(t, ast.Name) else getattr(t, "attr", None)
            if name and _device_named(name):
                values.append(node.value)  # type: ignore[attr-defined]
    return [v for v in values if v is not None]


_DEVICE_KEYWORDS = ("device", "device_type", "map_location", "device_map")


@matcher(ast.Call, ast.Assign, ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef)
def device_string_fallback(analyzer, node: ast.AST) -> Iterable[tuple[ast.AST, str]]:
    """A CUDA default behind a fallback where a device is expected: ``device=getattr(args, "device", "cuda")``,
    ``device = detect() or "cuda"``, ``torch.device(cfg.get("device", "cuda"))``."""
    for value in _device_sink_values(analyzer, node):
        if _availability_idiom(value):
            continue
        found = _fallback_cuda(value)
        if found is not None:
            yield found, ast.unparse(found)


@matcher(ast.FunctionDef, ast.AsyncFunctionDef)
def device_type_default(analyzer, node: ast.AST) -> Iterable[tuple[ast.AST, str]]:
    """``def load(path, dev="cuda")``: a parameter with a short or other device-like name (``dev``,
    ``device_name``, ``accelerator``) whose default is CUDA (``device``-named ones are NRN202's)."""
    for p, d in parameter_defaults(node.args):  # type: ignore[attr-defined]
        if p.arg in ("device_type", "dev", "device_name", "accelerator") and not _device_named(p.arg):
            found = _cuda_literal(d)
            if found is not None:
                yield found, ast.unparse(found)


def _target_text(t: ast.AST) -> str | None:
    if isinstance(t, ast.Name):
        return t.id
    if isinstance(t, ast.Attribute) and isinstance(t.value, (ast.Name, ast.Attribute)):
        base = _target_text(t.value)
        return f"{base}.{t.attr}" if base else None
    return None


_SINK_CACHE: dict[int, tuple[ast.AST, dict[str, set[str]]]] = {}
_DIST_INIT = ("torch.distributed.init_process_group", "torch.distributed.distributed_c10d.init_process_group")
_DIST_GROUP = ("torch.distributed.new_group", "torch.distributed.distributed_c10d.new_group")


def _sinks(analyzer) -> dict[str, set[str]]:
    """Names and attribute chains the module passes where a device ("device") or a process-group
    backend ("backend") is expected: ``torch.device(arg)``, ``map_location=loc``,
    ``init_process_group(backend=backend)``. Computed once per module."""
    tree = getattr(analyzer, "tree", None)
    if tree is None:
        return {}
    cached = _SINK_CACHE.get(id(analyzer))
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
        qual = analyzer.qualname(func) if isinstance(func, (ast.Name, ast.Attribute)) else None
        first = n.args[0] if n.args and not isinstance(n.args[0], ast.Starred) else None
        if qual in _DIST_INIT:
            add(first, "backend")
            add(_keyword(n, "backend"), "backend")
        elif qual in _DIST_GROUP:
            add(n.args[2] if len(n.args) > 2 else None, "backend")
            add(_keyword(n, "backend"), "backend")
        if qual in ("torch.device", "torch.autocast", "torch.amp.autocast") or (
                isinstance(func, ast.Attribute) and func.attr == "to" and qual is None):
            add(first, "device")
        for kw in n.keywords:
            if kw.arg in _DEVICE_KEYWORDS:
                add(kw.value, "device")
    if len(_SINK_CACHE) > 64:
        _SINK_CACHE.clear()
    _SINK_CACHE[id(analyzer)] = (tree, sinks)
    return sinks


@matcher(ast.Assign, ast.AnnAssign)
def cuda_string_flow(analyzer, node: ast.AST) -> Iterable[tuple[ast.AST, str]]:
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
        cuda = None if idiom else (_cuda_literal(value) or (_fallback_cuda(value) if not _device_named(name) else None))
        nccl = _nccl_literal(value)
        if cuda is None and nccl is None:
            continue
        if sinks is None:
            sinks = _sinks(analyzer)
        kinds = sinks.get(text, ())
        if cuda is not None and "device" in kinds and (not _device_named(name) or cuda is not _cuda_literal(value)):
            yield cuda, ast.unparse(cuda)
        if nccl is not None and "backend" in kinds:
            yield nccl, ast.unparse(nccl)


@matcher(ast.Dict)
def nccl_backend_table(analyzer, node: ast.Dict) -> Iterable[tuple[ast.AST, str]]:
    """``{"cuda": "nccl", "cpu": "gloo"}``: a device-to-backend table that sends CUDA to NCCL and has no
    entry for Neuron."""
    for key, value in zip(node.keys, node.values):
        if isinstance(key, ast.Constant) and key.value in ("cuda", "gpu"):
            found = _nccl_literal(value)
            if found is not None and not any(isinstance(k, ast.Constant) and k.value == "neuron" for k in node.keys):
                yield found, f"{key.value!r}: {found.value!r}"  # type: ignore[attr-defined]


# ---------------------------------------------------------------- NRN602: compiled CUDA extensions loaded by name
#: Module names of compiled CUDA extensions (``fused_adam_cuda``, ``ms_deform_attn_cuda``, ``amp_C``); a
#: function such as ``retry_if_cuda_oom`` or ``has_cuda_capability`` does not end like this.
_EXTENSION_NAME = re.compile(r"\w+_cuda|\w+_cuda_ext|cuda_\w+_ext|\w+_cuda_kernels?|amp_C|syncbn")
#: Extension modules that a package rule (NRN612) already names.
_PACKAGE_EXTENSIONS = frozenset({"selective_scan_cuda", "flash_attn_2_cuda", "causal_conv1d_cuda"})
#: A name that starts with a verb is a function or a flag (``can_use_cuda_kernels``, ``is_cuda``), not a module.
_VERB = re.compile(r"(can|has|is|use|uses|get|set|check|retry|enable|disable|should|supports?|run|try)_")


def _extension_component(module: str) -> str | None:
    if module.split(".", 1)[0] == "torch":
        return None
    for part in module.split("."):
        if _EXTENSION_NAME.fullmatch(part) and part not in _PACKAGE_EXTENSIONS and not _VERB.match(part):
            return part
    return None


_CUDA_SETUP: dict[str, bool] = {}


def _project_builds_cuda(path: str | None) -> bool:
    """Does the nearest ``setup.py`` above ``path`` build a CUDA extension (``CUDAExtension``, ``.cu`` sources)?"""
    import os

    if not path:
        return False
    directory = os.path.dirname(os.path.abspath(path))
    seen = []
    for _ in range(8):
        if directory in _CUDA_SETUP:
            answer = _CUDA_SETUP[directory]
            break
        seen.append(directory)
        setup = os.path.join(directory, "setup.py")
        if os.path.isfile(setup):
            try:
                with open(setup, encoding="utf-8", errors="replace") as f:
                    text = f.read(200_000)
            except OSError:
                text = ""
            answer = "CUDAExtension" in text or bool(re.search(r"\.cu['\"]", text))
            break
        parent = os.path.dirname(directory)
        if parent == directory:
            answer = False
            break
        directory = parent
    else:
        answer = False
    for d in seen:
        _CUDA_SETUP[d] = answer
    return answer


@matcher(ast.Import, ast.ImportFrom, ast.Call)
def cuda_extension_module(analyzer, node: ast.AST) -> Iterable[tuple[ast.AST, str]]:
    """A compiled CUDA extension loaded by name: ``import fused_adam_cuda``,
    ``importlib.import_module("fused_adam_cuda")``, ``from detectron2 import _C`` in a project whose
    ``setup.py`` builds a ``CUDAExtension``. Guarded (optional) imports are not reported."""
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if not node.args or name not in ("import_module", "__import__"):
            return
        if name == "import_module" and analyzer.qualname(func) != "importlib.import_module":
            return
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            part = _extension_component(arg.value)
            if part is not None:
                yield arg, arg.value
        return
    if analyzer._guard_depth:
        return
    if isinstance(node, ast.Import):
        for alias in node.names:
            if _extension_component(alias.name):
                yield alias, alias.name
            elif alias.name.endswith("._C") and not alias.name.startswith("torch") and _project_builds_cuda(analyzer.path):
                yield alias, alias.name
        return
    module = node.module or ""
    if module and _extension_component(module):
        yield node, module
        return
    if module.split(".", 1)[0] == "torch":
        return
    for alias in node.names:
        if _extension_component(alias.name):
            yield alias, f"{module}.{alias.name}" if module else alias.name
        elif alias.name == "_C" and "." not in module and _project_builds_cuda(analyzer.path):
            # `from detectron2 import _C`, `from . import _C`: the package's compiled extension (not
            # `from .defaults import _C`, a configuration object named like one)
            if (node.level and not module) or (module and not node.level):
                yield alias, f"{'.' * node.level}{module}._C"


# ---------------------------------------------------------------- NRN408: compile settings chosen at run time or through a wrapper
_COMPILE_CALLS = ("torch.compile", "torch._dynamo.optimize")
_CUDA_MODES = ("reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


@matcher(ast.Call)
def compile_setting_indirect(analyzer, node: ast.Call) -> Iterable[tuple[ast.AST, str]]:
    """``torch.compile(model, mode=args.mode, backend=args.backend)`` (a mode or backend decided at run
    time), and a CUDA mode through a wrapper: ``model.compile(mode="max-autotune")``,
    ``compile_regions(model, mode="reduce-overhead")``."""
    func = node.func
    if not isinstance(func, (ast.Name, ast.Attribute)):
        return
    qual = analyzer.qualname(func)
    if qual in _COMPILE_CALLS:
        chosen = [kw for kw in node.keywords
                  if kw.arg in ("mode", "backend") and not isinstance(kw.value, (ast.Constant, ast.JoinedStr))]
        if chosen:  # one finding per call, naming each setting decided elsewhere
            yield chosen[0].value, ", ".join(f"{kw.arg}={ast.unparse(kw.value)}" for kw in chosen)
        return
    name = func.attr if isinstance(func, ast.Attribute) else func.id
    if name == "compile_regions" or (name == "compile" and qual is None and isinstance(func, ast.Attribute)):
        mode = _keyword(node, "mode")
        if isinstance(mode, ast.Constant) and mode.value in _CUDA_MODES:
            yield mode, f"mode={mode.value!r}"


# ---------------------------------------------------------------- NRN212: every other torch.cuda reference
_CUDA_SPECIFIC_INDEX = None


def _specific_cuda_rule(qual: str) -> bool:
    """Does another rule of the catalog (enabled or not) name this ``torch.cuda`` member?

    The general finding is for what no specific rule knows: a user who ignores NRN203 for
    ``torch.cuda.is_available()`` does not get it back as NRN212.
    """
    global _CUDA_SPECIFIC_INDEX
    if _CUDA_SPECIFIC_INDEX is None:
        from .catalog import load_catalog
        from .index import DottedIndex

        index = DottedIndex()
        for rule in load_catalog().rules:
            if rule.code == "NRN212":
                continue
            for m in rule.matches:
                if m.kind == "names":
                    for pattern in m.patterns:
                        if pattern.startswith("torch.cuda"):
                            index.add(pattern, (rule, m))
        _CUDA_SPECIFIC_INDEX = index
    return bool(_CUDA_SPECIFIC_INDEX.lookup(qual))


@matcher(ast.Attribute)
def torch_cuda_reference(analyzer, node: ast.Attribute) -> Iterable[tuple[ast.AST, str]]:
    """A reference to ``torch.cuda`` or one of its members that no specific rule names:
    ``torch.cuda.reset_max_memory_allocated()``, ``return torch.cuda``, ``getattr(torch, t, torch.cuda)``."""
    if id(node) in analyzer._inert or not isinstance(node.ctx, ast.Load):
        return
    link: ast.AST = node
    while isinstance(link, ast.Attribute):
        if link.attr == "cuda":
            break
        link = link.value
    else:
        if not isinstance(link, ast.Name) or not (analyzer.lookup(link.id) or "").lstrip("\x01").startswith("torch.cuda"):
            return
    qual = analyzer.qualname(node)
    if qual is None or not (qual == "torch.cuda" or qual.startswith("torch.cuda.")):
        return
    if not _specific_cuda_rule(qual):
        yield node, qual
