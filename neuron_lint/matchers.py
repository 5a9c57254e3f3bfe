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
        a = node.args
        positional = [*a.posonlyargs, *a.args]
        pairs += [(p.arg, d) for p, d in zip(positional[len(positional) - len(a.defaults):], a.defaults)]
        pairs += [(p.arg, d) for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
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
        a = node.args
        positional = [*a.posonlyargs, *a.args]
        pairs = [*zip(positional[len(positional) - len(a.defaults):], a.defaults), *zip(a.kwonlyargs, a.kw_defaults)]
        values += [d for p, d in pairs if d is not None and _device_named(p.arg)]
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
