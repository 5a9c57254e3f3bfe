"""Calls that are CUDA-only code whatever the device of their arguments: compiled extensions, kernel
launches, custom operators, raw pointers. A device guard (``x.is_cuda``, ``torch.cuda.is_available()``,
a skip) that decides such a call is the right question there and stays."""

from __future__ import annotations

import ast
import fnmatch
import functools
import re

from .cuda_library_names import cuda_library_names
from .cuda_runtimes import (
    SIMULATORS,
    cuda_runtime,
    faiss_gpu,
    imported_root,
    runtime_branch,
)
from .process_group import fixed_backends, gloo_group, nccl_parameter

#: CUDA-only libraries (NRN6xx) by their import names: their calls are CUDA code, and so are the
#: methods of a project's subclass of one of their classes.
CUDA_LIBRARY_ROOTS = frozenset({"bitsandbytes", "bnb", "apex", "xformers", "xops", "flash_attn"})
#: Name parts of callees that are CUDA-only code (compiled extensions, kernels).
_CUDA_ONLY_PARTS = ("_C", "_ext", "*_ext", "_ext_*", "*cuda*", "*CUDA*", "*kernel*", "*Kernel*", "cupy", "triton",
                    "*helion*", "*nccl*", "*cudnn*", "*cublas*", "*nvrtc*", "numba",
                    # fused kernels (apex's RNN `fusedBackend.LSTMFused`, `FusedLayerNorm`, `fused_adam`)
                    "fused*", "*Fused*", "*_fused*",
                    # CUDA-only libraries (NRN6xx): a guard that opens them is the right question there
                    "*bitsandbytes*", "bnb", "*xformers*", "xops", "flash_attn*", "apex",
                    # NVML and the tools on it see NVIDIA GPUs only (se3_diffusion's `GPUtil`, set 88)
                    "*nvml*", "GPUtil", "gpustat", "nvidia_smi", "nvitop")
#: The patterns as one expression (``fnmatch`` pattern by pattern is asked tens of thousands of times
#: per project, for each node a device guard decides).
_CUDA_ONLY_PART = re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in _CUDA_ONLY_PARTS))
#: ``torch.nn.parallel`` (and mmcv.parallel, after it) spreading data over GPUs: ``torch._C._scatter``,
#: ``_broadcast_coalesced`` and the rest exist in CUDA builds only.
_REPLICATION = frozenset({"scatter", "scatter_kwargs", "gather", "broadcast", "broadcast_coalesced", "reduce_add",
                          "replicate"})
_PYG_REPLICATION = frozenset({"torch_geometric.loader.DataListLoader", "torch_geometric.data.DataListLoader",
                              "torch_geometric.nn.DataParallel"})
_EXTENSION_LOADERS = ("torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline")


_DESCRIBED = frozenset({"name", "total_memory"})
#: Calls whose arguments are said, not used: ``print`` and the logger's methods.
SAYING = frozenset({"print", "debug", "info", "warning", "warn", "error", "critical", "exception", "log"})
_LOGGING = SAYING | {"write", "str", "repr", "format"}


def _described(ctx, node: ast.AST) -> bool:
    """Is the value of ``node`` only read for what every device module's properties carry (its
    ``name``, ``total_memory``) or put in a message (an f-string, ``print``, a logger call, ``str``)?"""
    parent = ctx.parent(node)
    if isinstance(parent, ast.Attribute):
        return parent.attr in _DESCRIBED
    if isinstance(parent, ast.FormattedValue):
        return True
    if isinstance(parent, ast.Call) and node is not parent.func:
        func = parent.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        return name in _LOGGING
    return False


def only_described(ctx, call: ast.Call) -> bool:
    """``torch.cuda.get_device_properties(...)``: true when the properties serve only to describe
    the device, directly or through a name every read of which in its function does that."""
    if _described(ctx, call):
        return True
    stmt = ctx.parent(call)
    if not (isinstance(stmt, ast.Assign) and stmt.value is call and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)):
        return False
    name = stmt.targets[0].id
    scope = ctx.enclosing_function(stmt) or ctx.tree
    reads = [n for n in ctx.walk(scope) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
    return bool(reads) and all(_described(ctx, n) for n in reads)


#: ``torch.cuda`` queries of the hardware no fix carries over: a device string given to one of them
#: names the GPU being asked about and stays with the call (NRN204 reports the call).
_HARDWARE_QUERIES = frozenset({"torch.cuda.get_device_capability", "torch.cuda.get_arch_list"})


def cuda_hardware_query(ctx, call: ast.Call) -> bool:
    """Does ``call`` ask ``torch.cuda`` about the GPU in a way that stays CUDA-only after every fix
    (compute capability; the properties read for more than a description)?"""
    name = ctx.qualname(call.func)
    if name in _HARDWARE_QUERIES:
        return True
    return name == "torch.cuda.get_device_properties" and not only_described(ctx, call)


def dotted(node) -> list[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return list(reversed(parts))
    return []


def extension_names(ctx) -> set[str]:
    """Names bound to a compiled extension: ``torch.utils.cpp_extension.load(...)``, a project's own
    loader named so (mmcv's ``ext_module = ext_loader.load_ext('_ext', [...])``), or a top-level import
    from a package the project builds for CUDA alone (:func:`.own_extension.cuda_only_packages`)."""
    from .own_extension import cuda_only_packages

    found = ctx.__dict__.get("_nrn208_ext")
    if found is None:
        found = set()
        # the loaders live in torch.utils.cpp_extension: a module that never names it binds none
        for n in ctx.walk(ctx.tree) if "cpp_extension" in ctx.text or "load_ext" in ctx.text else ():
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and (
                    ctx.qualname(n.value.func) in _EXTENSION_LOADERS or dotted(n.value.func)[-1:] == ["load_ext"]):
                found.update(t.id for t in n.targets if isinstance(t, ast.Name))
        # and what the module imports from a package the project builds for CUDA alone
        packages = cuda_only_packages(ctx.path) if "import" in ctx.text else frozenset()
        for stmt in ctx.tree.body if packages else ():
            if isinstance(stmt, (ast.Import, ast.ImportFrom)) and not getattr(stmt, "level", 0) and any(
                    (getattr(stmt, "module", None) or a.name).split(".")[0] in packages for a in stmt.names):
                for a in stmt.names:
                    bound = (a.asname or a.name).split(".")[0]
                    found.add(bound)
                    ctx.__dict__.setdefault("_nrn_cuda_package", {})[bound] = (
                        getattr(stmt, "module", None) or a.name).split(".")[0]
        ctx.__dict__["_nrn208_ext"] = found
    return found


def imported_cuda_names(ctx) -> set[str]:
    """Names the module's top-level imports (also under a top-level ``try`` or ``if``) bind to code
    named as CUDA-only: s4's ``from extensions.kernels.vandermonde import log_vandermonde_cuda``,
    ``from .cauchy import cauchy_mult as cauchy_cuda``. A flag (``use_cuda = ...``) is no import."""
    found = ctx.__dict__.get("_nrn_imported_cuda")
    if found is None:
        found = set()
        pending = list(ctx.tree.body)
        while pending:
            stmt = pending.pop()
            if isinstance(stmt, (ast.Try, ast.If)):
                pending.extend([*stmt.body, *getattr(stmt, "orelse", ()),
                                *(s for h in getattr(stmt, "handlers", ()) for s in h.body)])
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                for alias in stmt.names:
                    bound = alias.asname or alias.name.partition(".")[0]
                    if cuda_only_part(bound) or alias.asname and cuda_only_part(alias.name.rpartition(".")[2]):
                        found.add(bound)
        ctx.__dict__["_nrn_imported_cuda"] = found
    return found


def cuda_only_part(part: str) -> bool:
    """Is ``part``, one component of a dotted name, one of :data:`_CUDA_ONLY_PARTS`?"""
    return _CUDA_ONLY_PART.match(part) is not None


def _cuda_library(module: str) -> bool:
    return any(cuda_only_part(part) for part in module.split("."))


def launches_kernels(ctx, func: ast.Subscript) -> bool:
    """``kernel[grid](...)`` is a Triton or Numba launch where the module uses one of them or the
    name says kernel; elsewhere it is a lookup that is called (DiT's ``DiT_models[args.model](...)``)."""
    name = ".".join(dotted(func.value))
    return "kernel" in name.lower() or any(word in ctx.text for word in ("triton", "numba", "cuda.jit"))


def cuda_only_call(ctx, call: ast.Call) -> str:
    """What makes ``call`` CUDA-only code (for the note), or ``""``."""
    func = call.func
    if isinstance(func, ast.Subscript) and launches_kernels(ctx, func):
        return "a kernel launch `kernel[grid](...)`"
    if isinstance(func, ast.Attribute) and func.attr == "data_ptr":
        return "`.data_ptr()` (a raw device pointer for a kernel)"
    written = dotted(func)
    if not written:
        return ""
    # `torch` imported inside the function has no module-level binding to resolve: take it as written
    qual = (ctx.qualname(func) or ("torch." + ".".join(written[1:]) if written[0] == "torch" else "")).split(".")
    name = ".".join(written)
    if qual[:2] == ["torch", "_C"] and len(qual) == 3 and qual[2].startswith("_cuda"):
        return f"`{name}`, a private CUDA binding (missing, or about CUDA only, in a torch built without CUDA)"
    if written[0] in extension_names(ctx) or (written[0] in imported_cuda_names(ctx)
                                               and not cuda_only_part(written[0])):
        # (the second: a module imported under another name, OpenPCDet's
        # `from . import pointnet2_batch_cuda as pointnet2`)
        return f"`{name}`, a compiled extension"
    how = cuda_library_names(ctx, _cuda_library).get(written[0])
    if how:
        return f"`{name}` {how}" if how.startswith("(") else f"`{name}`, {how}"
    if "parallel" in qual[:-1] and qual[-1] in _REPLICATION:
        return f"`{name}`, the scatter and gather of DataParallel (CUDA's only)"
    if "DataParallel" in written[-1] and "Distributed" not in written[-1] and qual[:1] != ["torch"]:
        # a project's DataParallel (sync_batchnorm's DataParallelWithCallback: first-order-model)
        return f"`{name}`, a DataParallel (its scatter and replication are CUDA's only)"
    if qual[:2] == ["torch", "ops"] and len(qual) > 3 and qual[2] not in ("aten", "prims", "quantized"):
        return f"`{name}`, a custom operator"
    for parts in (written, qual):
        if not parts or parts[0] == "torch" and (len(parts) < 2 or parts[1] in ("cuda", "_C", "backends")):
            continue  # torch's own CUDA API is another rule's finding (see `region`)
        for part in parts[:-1] if len(parts) > 1 else parts:
            if cuda_only_part(part):
                return f"`{name}`, CUDA-only code (a compiled extension or kernel)"
        if len(parts) > 1 and any(fnmatch.fnmatchcase(parts[-1], p) for p in ("*cuda*", "*CUDA*", "*kernel*")):
            return f"`{name}`, CUDA-only code (a compiled extension or kernel)"
    return ""


def cuda_only_node(ctx, n: ast.AST) -> str:
    """What makes ``n``, a node of code a device guard decides, run only on CUDA (for the guard's
    note, with its line), or ``""``: a CUDA-only call (:func:`cuda_only_call`; ``.cuda()`` is not one,
    NRN201 rewrites it), ``torch.load`` without ``map_location``, an optional import, Inductor.
    Kept per node: each finding of a guard asks about the same code again."""
    known = ctx.__dict__.setdefault("_nrn_cuda_only_nodes", {})
    found = known.get(id(n))
    if found is None:
        found = known[id(n)] = _cuda_only_node(ctx, n)
    return found


def _cuda_only_node(ctx, n: ast.AST) -> str:
    from .module_kind import optional_import
    from .own_extension import AOT_INDUCTOR

    if isinstance(n, ast.Call) and not (isinstance(n.func, ast.Attribute) and n.func.attr == "cuda"):
        what = cuda_only_call(ctx, n)
        if what:
            return f"{what} on line {n.lineno}"
        if ctx.qualname(n.func) in AOT_INDUCTOR:  # TorchServe's AOTInductor examples (set 57)
            return f"`{ctx.segment(n.func)}` on line {n.lineno} (AOTInductor compiles for the CPU and GPUs only)"
        if (line := nccl_parameter(ctx, n)):  # pytext's `dist_init(..., backend="nccl")`
            return (f"`{ctx.segment(n.func)}` on line {n.lineno}, with a backend parameter that defaults to "
                    f"\"nccl\" (line {line}), CUDA's own")
        if ctx.qualname(n.func) == "torch.load" and len(n.args) < 2 and not any(
                k.arg in ("map_location", None) for k in n.keywords):
            # fairseq's vocoder: `torch.load(path)` under the guard, `map_location="cpu"` after
            # it; tensors saved on a GPU load back onto CUDA, which Trainium does not have
            return (f"`torch.load` without `map_location` on line {n.lineno} (a checkpoint saved on "
                    "a GPU loads onto CUDA)")
    elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in imported_cuda_names(ctx) and not (
            isinstance(ctx.parent(n), ast.Call) and ctx.parent(n).func is n):
        # s4's kernel dispatch: `log_vandermonde = log_vandermonde_cuda`, the function handed on
        return f"`{n.id}` (imported CUDA-only code, handed on) on line {n.lineno}"
    elif isinstance(n, ast.Try) and (imported := optional_import(n)) is not None:
        # fairseq's DynamicConv: `try: from fairseq.modules.dynamicconv_layer import DynamicconvLayer`
        # under the CUDA test; a package a GPU machine may lack is mostly a CUDA build
        return (f"what the optional import on line {n.lineno} brings (`{ctx.segment(imported)[:50]}`): "
                "a package a GPU machine may lack is mostly built for CUDA")
    elif isinstance(n, (ast.Name, ast.Attribute)) and ctx.qualname(n) in _PYG_REPLICATION:
        # DiffDock: `DataListLoader if torch.cuda.is_available() else DataLoader`, lists for PyG's DataParallel
        return f"`{ctx.segment(n)}` on line {n.lineno} (PyG's data parallelism, over CUDA devices only)"
    elif isinstance(n, ast.keyword) and n.arg == "backend" and isinstance(n.value, ast.Constant) \
            and n.value.value == "inductor":
        # TorchNeuron compiles through its own backend, not Inductor (torchtitan test_compile_moe.py)
        return f"`backend=\"inductor\"` (Inductor does not compile for the neuron device) on line {n.value.lineno}"
    elif isinstance(n, ast.Constant) and n.value == "inductor" and isinstance(ctx.parent(n), ast.IfExp) \
            and getattr(ctx.parent(ctx.parent(n)), "arg", None) == "backend":
        # fish-speech: `backend="inductor" if torch.cuda.is_available() else "aot_eager"`
        return f"`backend=\"inductor\"` (Inductor does not compile for the neuron device) on line {n.lineno}"
    return ""


def uses_bitsandbytes(ctx, node: ast.AST) -> bool:
    """Is bitsandbytes what the code around ``node`` works with: imported outside a ``try`` and an
    ``if`` (the ``__main__`` block aside) at the module's top, in the ``__main__`` block (sd-scripts'
    debug loops), in the function holding ``node``, or anywhere in a module named for it
    (accelerate's ``utils/bnb.py``, diffusers' ``quantizers/bitsandbytes/``, which import it in their
    functions because importing it initialises the device)? An import under ``if args.use_8bit_adam:``
    or ``try`` (diffusers' training scripts), or in another function of a module about something else
    (petals' ``convert_block.py``), leaves the rest rewritable."""
    if "bitsandbytes" not in ctx.text:
        return False
    imports = ctx.__dict__.get("_nrn_bnb_imports")
    if imports is None:
        imports = ctx.__dict__["_nrn_bnb_imports"] = _plain_bitsandbytes_imports(ctx)
    path = (ctx.path or "").replace("\\", "/").lower()
    named = "bitsandbytes" in path or "bnb" in path.rsplit("/", 1)[-1]
    here = ctx.enclosing_function(node)
    return any(function is None or named or function is here for function in imports)


def _plain_bitsandbytes_imports(ctx) -> list:
    """The function holding each import of bitsandbytes outside a ``try`` and an ``if`` (the
    ``__main__`` block aside); None for one at module level."""
    from .module_kind import is_main_guard

    found = []
    for n in ctx.walk(ctx.tree):
        if not (isinstance(n, ast.Import) and any(a.name.split(".")[0] == "bitsandbytes" for a in n.names)
                or isinstance(n, ast.ImportFrom) and not n.level
                and (n.module or "").split(".")[0] == "bitsandbytes"):
            continue
        around = list(ctx.ancestors(n))
        if any(isinstance(p, ast.Try) or isinstance(p, ast.If) and not is_main_guard(p) for p in around):
            continue
        found.append(next((p for p in around if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef))), None))
    return found


def cuda_module_note(ctx, node: ast.AST) -> str:
    """Why the CUDA code of this module (or of the code around ``node``) is CUDA's own and stays
    (the note), or ``""``."""
    runtime = cuda_runtime(ctx)
    if runtime.split(".")[0] in SIMULATORS:
        return (f"not rewritten: the module imports `{runtime}`, a GPU simulator whose device is `cuda:N` or the "
                "CPU, nothing else; its devices are the simulation's, and rewritten, Trainium would hand it the "
                "`neuron` device it does not know. Give Trainium its own path")
    if runtime:
        return (f"not rewritten: the module imports `{runtime}`, which drives CUDA GPUs only, so its device "
                "code is the CUDA implementation (raw streams, engines, CUDA graphs); rewritten, it would "
                "break on CUDA or do nothing elsewhere. Give Trainium its own path")
    required = _required_library(ctx)
    if required:
        return (f"not rewritten: the module requires `{required[0]}` (line {required[1]}), whose kernels run on "
                "CUDA only, so its device code feeds them; rewritten, it would send neuron tensors into them. Give "
                "Trainium its own path")
    from .module_kind import cuda_extension_import

    if extension := cuda_extension_import(ctx):
        return (f"not rewritten: the module imports `{extension[0]}` (line {extension[1]}), a compiled extension named "
                "for CUDA, so its device code feeds CUDA kernels; rewritten, it would send neuron tensors into them")
    sharded = next((s.lineno for s in ctx.tree.body if isinstance(s, ast.ImportFrom) and (s.module or "").startswith(
        "fairscale.nn") and any(a.name == "FullyShardedDataParallel" for a in s.names)), 0)
    if sharded:  # esm's fairscale FSDP example: its compute device falls back to CUDA's, with CUDA streams
        return (f"not rewritten: the module shards with fairscale's `FullyShardedDataParallel` (line {sharded}), "
                "which computes on CUDA (its default compute device and streams are CUDA's); rewritten, the "
                "inputs would go where the model does not. Move to PyTorch's FSDP first")
    branch = runtime_branch(ctx, node)
    if branch is not None:
        return (f"not rewritten: the branch imports `{imported_root(branch)}` (line {branch.lineno}), which drives "
                "CUDA GPUs only, so its device is the GPU that runtime needs (yolov5's TensorRT backend hands it "
                "raw pointers); rewritten, it would get another device's tensors. Give Trainium its own path")
    index = faiss_gpu(ctx, node)
    if index is not None:
        return (f"not rewritten: the function hands its tensors to faiss's GPU API (`{ctx.segment(index.func)[:40]}`, "
                f"line {index.lineno}), which reads CUDA memory only; rewritten, Trainium would give it neuron tensors. "
                "Keep it for GPU runs; give Trainium faiss's CPU path")
    if uses_bitsandbytes(ctx, node):
        return ("not rewritten: the module uses bitsandbytes, whose kernels and 8-bit optimizers run on CUDA and "
                "whose quantized parameters quantize when moved with `cuda()` (`.to(device)` does so only for "
                "weights coming from the CPU); rewritten, its CUDA code would be half converted, and a model "
                "already on the GPU would stay unquantized. Keep it for GPU runs; give Trainium its own path")
    default = _cuda_default_type(ctx)
    if default:
        return (f"not rewritten: the module makes a CUDA tensor type the default (line {default}), which has no "
                "device-agnostic spelling, so the tensors it creates without a device stay CUDA's; rewritten, "
                "its explicit moves would put Trainium's tensors on the accelerator beside CPU-made ones. Give "
                "the created tensors a device first (`torch.set_default_device`)")
    from .own_extension import kernel_wrapper

    kernels = kernel_wrapper(ctx)
    if kernels:
        return (f"not rewritten: the module hands tensors to the project's own compiled CUDA operators ({kernels}), "
                "which take CUDA tensors only; its CUDA code feeds them, and rewritten, it would send neuron "
                "tensors into a CUDA kernel. Give Trainium its own implementation of the operator")
    found = ctx.__dict__.get("_nrn_module_kernels")
    if found is None:  # module-wide answers, asked once per module
        found = ctx.__dict__["_nrn_module_kernels"] = (_int4_packing(ctx), gloo_group(ctx), fixed_backends(ctx))
    packed, gloo, backends = found
    if packed:
        return (f"not rewritten: the module packs int4 weights with `{packed}`, whose kernel and packed layout "
                "are CUDA's (tinygemm; CPU has its own operator); rewritten, it would hand neuron tensors to it. "
                "Keep it for GPU runs; quantize for Trainium its own way")
    if gloo:
        return (f"not rewritten: the module's process group is gloo (line {gloo}), which carries CPU and CUDA "
                "tensors only; rewritten, Trainium would train on its NeuronCores inside a gloo group, and DDP "
                "fails there. Give the group the device's backend (`dist.get_default_backend_for_device`) first")
    if backends:
        return (f"not rewritten: the module communicates over {backends}, not the Neuron device's backend (gloo's and "
                "MPI's take CPU and CUDA tensors only; Horovod's likely so). Give it the `neuron` backend first")
    return ""


@functools.lru_cache(maxsize=1)
def _kernel_packages() -> frozenset[str]:
    """The packages of CUDA kernels NRN612 reports (mamba_ssm, causal_conv1d, ...), by top name: the
    catalog is where that list is kept."""
    from ..catalog.loading import load_catalog

    rule = load_catalog().get("NRN612")
    return frozenset(p for m in (rule.matches if rule else ()) if m.kind == "imports" for p in m.patterns
                     if "." not in p)


def _cuda_default_type(ctx) -> int:
    """The line where the module makes a CUDA tensor type the default (ssd.pytorch's ``train.py``:
    ``torch.set_default_tensor_type('torch.cuda.FloatTensor')``), or 0."""
    if "set_default_tensor_type" not in ctx.text:
        return 0
    for n in ctx.walk(ctx.tree):
        if isinstance(n, ast.Call) and ctx.qualname(n.func) == "torch.set_default_tensor_type" and n.args and (
                (isinstance(n.args[0], ast.Constant) and str(n.args[0].value).startswith("torch.cuda."))
                or (ctx.qualname(n.args[0]) or "").startswith("torch.cuda.")):
            return n.lineno
    return 0


def _required_library(ctx) -> tuple[str, int] | None:
    """A CUDA-only library (xFormers, flash-attn, bitsandbytes, a package of CUDA kernels such as
    mamba_ssm) the module will not run without: a ``try`` importing it at module level whose ``except
    ImportError`` raises (dinov2's training ``ssl_meta_arch``), or whose flag set in the ``try`` is
    asserted in the module (Depth-Anything's copy: ``assert XFORMERS_AVAILABLE`` at module level;
    mistral-inference's ``Mamba.__init__``: ``assert _is_mamba_installed``); (its name, the line of
    the import), else None."""
    found = ctx.__dict__.get("_nrn_required_library", False)
    if found is not False:
        return found
    found, flags = None, {}
    for stmt in ctx.tree.body:
        if isinstance(stmt, ast.Try) and stmt.handlers:
            root = next((imported_root(s) for s in stmt.body
                         if imported_root(s) in CUDA_LIBRARY_ROOTS | _kernel_packages()), "")
            if not root:
                continue
            if all(h.body and isinstance(h.body[-1], ast.Raise) for h in stmt.handlers):
                found = (root, stmt.lineno)
                break
            for s in stmt.body:
                if (isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant) and s.value.value is True
                        and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)):
                    flags[s.targets[0].id] = (root, stmt.lineno)
    if found is None and flags:
        found = next((flags[n.test.id] for n in ctx.walk(ctx.tree) if isinstance(n, ast.Assert)
                      and isinstance(n.test, ast.Name) and n.test.id in flags), None)
    ctx.__dict__["_nrn_required_library"] = found
    return found


_INT4_PACKING = frozenset({"_convert_weight_to_int4pack", "_weight_int4pack_mm"})


def _int4_packing(ctx) -> str:
    """The int4 packing operator the module calls (gpt-fast's ``quantize.py``, copied into
    fish-speech: ``torch.ops.aten._convert_weight_to_int4pack``), as written, or ``""``."""
    if "int4pack" not in ctx.text:
        return ""
    return next((ctx.segment(n) for n in ctx.walk(ctx.tree)
                 if isinstance(n, ast.Attribute) and n.attr in _INT4_PACKING), "")
