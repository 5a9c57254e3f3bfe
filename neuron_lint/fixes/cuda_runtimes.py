"""Packages that run on CUDA GPUs only (TensorRT, PyCUDA, CuPy, tiny-cuda-nn, nvdiffrast) or hand
the device to a GPU simulator that knows ``cuda`` and ``cpu`` only (Isaac Gym, Isaac Lab): a module
importing one at its top, or a block importing one above the code, is that package's CUDA code."""

from __future__ import annotations

import ast

#: Packages that drive the CUDA runtime itself: a module importing one at its top is CUDA-only code.
#: apex too: a module that imports it unconditionally is apex's own code or tests (its fused CUDA kernels).
_CUDA_RUNTIMES = frozenset({"tensorrt", "torch_tensorrt", "tensorrt_llm", "torch2trt", "polygraphy", "pycuda", "cupy",
                            "cupyx",
                            "transformer_engine",
                            "cuda", "apex",
                            # CUDA-only graphics and encodings (threestudio, InstantMesh: read set 63)
                            "nvdiffrast", "tinycudann"})
#: GPU simulators whose device is ``"cuda:N"`` or ``"cpu"``, nothing else (ElegantRL's Isaac Gym
#: tasks, torchrl's Isaac Lab examples: read set 63); ``omni`` is Omniverse's ``omni.isaac``.
SIMULATORS = frozenset({"isaacgym", "isaacgymenvs", "isaaclab", "isaaclab_tasks", "omni"})
#: The internals of vLLM's CUDA engine (its workers, model runner, paged-attention kernels): a module
#: built on them (ChatTTS's ``velocity``, a copy of vLLM's worker) is that engine's CUDA code. vLLM's
#: own API (``from vllm import LLM``) picks its device itself and does not count, nor does its
#: communication layer (``vllm.distributed``, which torchtitan's model wrapper for vLLM uses).
_CUDA_ENGINE_PARTS = ("vllm.worker", "vllm.model_executor", "vllm._C", "vllm.attention")


def cuda_runtime(ctx) -> str:
    """The CUDA-only runtime package (TensorRT, polygraphy, PyCUDA, CuPy, cuda-python) the module
    imports unconditionally, at its top, or ``""``: flux's TensorRT engines read each stream's raw
    ``cuda_stream`` and define their own ``cuda()``. An import under ``try``/``if`` is an option
    beside other paths, which stay rewritable."""
    from .module_kind import top_imports

    return next((n for n in top_imports(ctx) if n.split(".")[0] in _CUDA_RUNTIMES | SIMULATORS
                 or n.startswith(_CUDA_ENGINE_PARTS)), "")


def imported_root(stmt: ast.stmt) -> str:
    """The top package an ``import`` or absolute ``from ... import`` statement names first (its
    ``tensorrt`` backend: mmdeploy's ``TRTWrapper``, InternImage's export check), or ``""``."""
    if isinstance(stmt, ast.Import):
        name = stmt.names[0].name
    elif isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module:
        name = stmt.module
    else:
        return ""
    parts = name.split(".")
    return "tensorrt" if "tensorrt" in parts[1:] else parts[0]


def runtime_branch(ctx, node: ast.AST) -> ast.Import | ast.ImportFrom | None:
    """The ``import tensorrt`` (or another CUDA runtime) of a block holding ``node``, above it (yolov5's
    ``elif engine:  import tensorrt as trt ... device = torch.device("cuda:0")``; YOLOX's ``from
    torch2trt import TRTModule`` before the dummy input of its TensorRT model), or None."""
    child = node
    blocks = ctx.__dict__.setdefault("_nrn_block_runtimes", {})  # read once per block: minified code
    for parent in ctx.ancestors(node):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(parent, name, None)
            if not isinstance(block, list):
                continue
            if id(block) not in blocks:  # or in a branch's `try` (FastSAM's AutoBackend)
                blocks[id(block)] = ({id(s): i for i, s in enumerate(block)}, [
                    (i, imp) for i, stmt in enumerate(block)
                    for imp in [stmt, *(stmt.body if isinstance(stmt, ast.Try) and parent is not ctx.tree else ())]
                    if imported_root(imp) in _CUDA_RUNTIMES | SIMULATORS])
            positions, runtimes = blocks[id(block)]
            at = positions.get(id(child))
            found = next((imp for i, imp in runtimes if i < at), None) if at is not None else None
            if found is not None:
                return found
        child = parent
    return None


def faiss_gpu(ctx, node: ast.AST) -> ast.Call | None:
    """A call of faiss's GPU API (``faiss.StandardGpuResources()``, ``faiss.GpuIndexFlatL2``,
    ``faiss.index_cpu_to_all_gpus``) in the function holding ``node``, or None: the function's tensors
    are what those GPU indexes read (fast-reid's ``compute_jaccard_distance`` moves its features with
    ``.cuda()`` for them; read set 84), and faiss has no other accelerator."""
    if "faiss" not in ctx.text:
        return None
    fn = ctx.enclosing_function(node)
    if fn is None:
        return None
    memo = ctx.__dict__.setdefault("_nrn_faiss_gpu", {})
    if id(fn) not in memo:
        memo[id(fn)] = next((n for n in ctx.walk(fn) if isinstance(n, ast.Call) and _faiss_gpu_name(ctx.qualname(n.func))),
                            None)
    return memo[id(fn)]


def _faiss_gpu_name(qual: str | None) -> bool:
    parts = (qual or "").split(".")
    return parts[0] == "faiss" and len(parts) > 1 and parts[-1] != "get_num_gpus" and (
        "Gpu" in parts[-1] or "gpu" in parts[-1])
