"""Models replicated over CUDA devices, whose device code stays CUDA's: a ``torch.cuda.device_count()``
that decides a ``DataParallel`` (:func:`data_parallel_count`), the project's own functions made of
DataParallel's pieces (``torch.nn.parallel.replicate``, ``scatter``, ``parallel_apply``, ``gather``), as
Real-Time-Voice-Cloning's ``data_parallel_workaround`` is (:func:`replicating_call`: on Trainium the
replication never runs; a rewritten count only raised there), mmcv's wrappers, which scatter their
inputs to CUDA devices (:func:`mmcv_wrapper`), as OpenMMLab 1.x's inference APIs do for the devices
handed to them (:func:`mmcv_api`), and a device count that sets how many workers run another module's
code (:func:`spawn_count`).

The project's function is found where the module imports it from, a file of the project (``from
synthesizer.utils import data_parallel_workaround``, or a relative import), read once per version of
the file.
"""

from __future__ import annotations

import ast
import re

from .module_kind import import_candidates
from .project_scan import per_file_version

#: ``torch.nn.parallel`` functions that only CUDA builds can run on devices (``torch._C._scatter``...).
_PIECES = frozenset({"replicate", "scatter", "parallel_apply", "gather", "data_parallel", "DataParallel"})


def replicating_call(ctx) -> str:
    """The name of a function the module imports from the project and calls, whose definition
    replicates a model with DataParallel's pieces, or ``""``."""
    if not ctx.path:
        return ""
    called = {n.func.id for n in ctx.walk(ctx.tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    for stmt in ctx.walk(ctx.tree):
        if not isinstance(stmt, ast.ImportFrom):
            continue
        names = [a for a in stmt.names if (a.asname or a.name) in called]
        if not names:
            continue
        for path in import_candidates(ctx.path, stmt.module or "", stmt.level):
            found = _replicating_in(path)
            hit = next((a.asname or a.name for a in names if a.name in found), None)
            if hit:
                return hit
    return ""


@per_file_version(missing=frozenset())
def _replicating_in(path: str) -> frozenset[str]:
    """The module-level functions of ``path`` that call one of DataParallel's pieces."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        if b"DataParallel" not in data and b"parallel" not in data:
            return frozenset()  # most modules: no parse
        tree = ast.parse(data)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()
    found = set()
    for fn in tree.body:
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and (n.func.attr == "DataParallel" or (
                    n.func.attr in _PIECES and isinstance(n.func.value, ast.Attribute) and n.func.value.attr == "parallel"))
                for n in ast.walk(fn)):
            found.add(fn.name)
    return frozenset(found)


_DATA_PARALLEL = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
                            "torch.nn.parallel.data_parallel", "torch.nn.parallel.data_parallel.DataParallel"})


def data_parallel_count(ctx, node: ast.AST) -> str:
    """``DataParallel`` as the module writes it, when ``node`` holds a ``torch.cuda.device_count()``
    and the module builds a ``DataParallel`` (LoRA's scripts: ``args.n_gpu =
    torch.cuda.device_count()``, later ``if args.n_gpu > 1: model = torch.nn.DataParallel(model)``),
    else ``""``. The count decides the wrapping wherever it is stored, so it stays CUDA's."""
    if not any(isinstance(n, ast.Attribute) and ctx.qualname(n) == "torch.cuda.device_count" for n in ast.walk(node)):
        return ""
    found = ctx.__dict__.get("_nrn_data_parallel")
    if found is None:
        found = ""
        if "DataParallel" in ctx.text or "data_parallel" in ctx.text:
            found = next((ctx.segment(n.func) for n in ctx.walk(ctx.tree) if isinstance(n, ast.Call)
                          and ctx.qualname(n.func) in _DATA_PARALLEL), "")
        if not found:  # the project's own function made of DataParallel's pieces
            found = replicating_call(ctx)
        ctx.__dict__["_nrn_data_parallel"] = found
    return found


#: mmcv 1.x's model wrappers: their ``scatter`` sends inputs to CUDA devices (``output.cuda(device)``
#: under ``torch.cuda.device`` and a ``torch.cuda.Stream``), whatever device the model is on.
_MMCV_WRAPPERS = frozenset({"MMDistributedDataParallel", "MMDataParallel"})


def mmcv_wrapper(ctx, node: ast.AST) -> str:
    """Where ``node`` meets mmcv's CUDA-only replication, as the note says it, else ``""``: inside
    the arguments of a call building ``MMDistributedDataParallel`` (``MMDataParallel``: InternImage's
    ``MMDistributedDataParallel(model.cuda(), device_ids=[torch.cuda.current_device()])``) or of
    mmcv's ``scatter``, which the wrappers use; a ``.cuda()`` of the wrapper itself (mmediting's
    ``MMDataParallel(model, device_ids=...).cuda()``); anywhere in a function that builds one
    (mmediting's ``to_ddp``, whose frozen parts go to the same devices as its wrapped ones)."""
    if "MMD" not in ctx.text and "MMDataParallel" not in ctx.text and "mmcv" not in ctx.text:
        return ""
    call = ctx.parent(node) if isinstance(node, ast.Attribute) else node
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "cuda" and isinstance(
            call.func.value, ast.Call) and _called_name(call.func.value.func) in _MMCV_WRAPPERS:
        return f"it moves `{_called_name(call.func.value.func)}`, mmcv's wrapper"
    child = node
    for p in ctx.ancestors(node):
        if isinstance(p, ast.Call):
            name = _called_name(p.func)
            if name in _MMCV_WRAPPERS and child is not p.func:
                return f"it goes into `{name}`, mmcv's wrapper"
            qual = (ctx.qualname(p.func) or "").split(".")
            if child is not p.func and qual[0] == "mmcv" and qual[-1] in ("scatter", "scatter_kwargs"):
                # mmaction's eval hook: `scatter(collate(...), [torch.cuda.current_device()])`
                return f"it goes into `{'.'.join(qual)}`, mmcv's scatter"
        if isinstance(p, ast.stmt):
            break
        child = p
    fn = ctx.enclosing_function(node)
    if fn is None or isinstance(fn, ast.Lambda):
        return ""
    known = ctx.__dict__.setdefault("_nrn_mmcv_wrapping", {})
    if id(fn) not in known:
        built = next((n for n in ctx.walk(fn) if isinstance(n, ast.Call) and _called_name(n.func) in _MMCV_WRAPPERS), None)
        known[id(fn)] = (f"the function wraps models in `{_called_name(built.func)}` (line {built.lineno}), mmcv's "
                         "wrapper" if built is not None else "")
    return known[id(fn)]


def _called_name(func) -> str:
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


_SPAWNS = frozenset({"torch.multiprocessing.spawn", "torch.multiprocessing.start_processes"})


def spawn_count(ctx, node: ast.AST) -> tuple[str, int] | None:
    """``(worker, line)`` when ``node`` holds a ``torch.cuda.device_count()`` that sets how many
    processes ``torch.multiprocessing.spawn`` starts (as ``nprocs`` or through the name or attribute
    it is stored in) and the function they run is not this module's (MockingBird's vocoder CLI:
    ``h.num_gpus = torch.cuda.device_count()``, then ``mp.spawn(train_hifigan, nprocs=h.num_gpus)``,
    a trainer that sets up NCCL), else None. What the workers need cannot be seen here; counting
    Trainium's devices would start that many of them there."""
    if not any(isinstance(n, ast.Attribute) and ctx.qualname(n) == "torch.cuda.device_count" for n in ast.walk(node)):
        return None
    stmt = ctx.statement_of(node)
    held = {ctx.segment(t) for t in stmt.targets} if isinstance(stmt, ast.Assign) else set()
    scope = ctx.enclosing_function(node) or ctx.tree
    own = {f.name for f in ctx.tree.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for n in ctx.walk(scope):
        if not (isinstance(n, ast.Call) and ctx.qualname(n.func) in _SPAWNS and n.args):
            continue
        count = next((k.value for k in n.keywords if k.arg == "nprocs"), n.args[2] if len(n.args) > 2 else None)
        if count is None or not (ctx.segment(count) in held or any(c is node for c in ast.walk(count))):
            continue
        worker = n.args[0]
        if not (isinstance(worker, ast.Name) and worker.id in own):
            return ctx.segment(worker)[:40], n.lineno
    return None


#: OpenMMLab 1.x inference APIs (``mmdet.apis.init_detector``, ``mmpose.apis.init_pose_model``...): the
#: model goes to the device given, and their ``inference_*`` scatter the inputs with mmcv's ``scatter``
#: where it is CUDA and leave them on the CPU otherwise.
_MM_API = re.compile(r"mm[a-z0-9]*\.apis(\.\w+)*\.init_\w+")


#: The findings that choose or name a device (an availability test, a device string, a CLI default); a
#: ``.cuda()`` in such a function is its own (InternImage's demo, set 41).
_DEVICE_CHOICES = frozenset({"NRN202", "NRN203", "NRN213"})


def mmcv_api(ctx, code: str, node: ast.AST) -> str:
    """The note when ``node``, a device choice (finding ``code``), is in a function that hands a device
    to an OpenMMLab 1.x ``init_*`` API (ViTPose's TorchServe handler and demos, read set 99), or is such
    an API's own ``init_*`` in a module that scatters with mmcv (its ``device='cuda:0'`` default), or a
    device string in a module that builds an mmengine runner (:func:`_mmengine_runner`), else ``""``."""
    where = _mmcv_api(ctx, node) if code in _DEVICE_CHOICES and "mm" in ctx.text else ""
    if where:
        return (f"not rewritten: {where}: OpenMMLab 1.x inference sends its inputs to CUDA with mmcv's `scatter` "
                "and leaves them on the CPU for any other device, so on Trainium a model moved to `neuron` would "
                "get CPU inputs (the CPU path worked). Keep CUDA or the CPU here")
    runner = _mmengine_runner(ctx) if code in ("NRN202", "NRN213") and "Runner" in ctx.text else None
    return (f"not rewritten: the module builds its model with mmengine's runner (`{ctx.segment(runner.func)}`, line "
            f"{runner.lineno}), which places it on mmengine's own `get_device()`: CUDA and other accelerators, not "
            "`neuron`, so on Trainium that model stays on the CPU while this device moves to `neuron`. Keep "
            "CUDA or the CPU here") if runner is not None else ""


#: Building an mmengine runner: ``Runner(...)``, ``Runner.from_cfg(cfg)``, a registry's ``RUNNERS.build(cfg)``.
_MM_RUNNER = re.compile(r"mm[a-z0-9]*(\.runner)?\.Runner(\.from_cfg)?|mm[a-z0-9]*\.registry\.RUNNERS\.build")


def _mmengine_runner(ctx) -> ast.Call | None:
    """The first call of the module that builds an mmengine runner, which puts the model on
    ``mmengine.device.get_device()`` (YOLO-World's image-prompt demo moved its CLIP encoders to the
    device it named, beside a detector the runner left on the CPU: read set 103), or None."""
    if "_nrn_mm_runner" not in ctx.__dict__:
        ctx.__dict__["_nrn_mm_runner"] = next((n for n in ctx.walk(ctx.tree) if isinstance(n, ast.Call)
                                               and _MM_RUNNER.fullmatch(ctx.qualname(n.func) or "")), None)
    return ctx.__dict__["_nrn_mm_runner"]


def _mmcv_api(ctx, node: ast.AST) -> str:
    fn = next((p for p in (node, *ctx.ancestors(node)) if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if fn is None:
        return ""
    known = ctx.__dict__.setdefault("_nrn_mmcv_api", {})
    if id(fn) not in known:
        api = next((n for n in ctx.walk(fn) if isinstance(n, ast.Call) and _MM_API.fullmatch(ctx.qualname(n.func) or "")), None)
        if api is not None:
            known[id(fn)] = f"the function hands its device to `{ctx.segment(api.func)}` (line {api.lineno})"
        elif fn.name.startswith("init_") and _scatters_with_mmcv(ctx):
            known[id(fn)] = f"`{fn.name}` is the module's model loader, whose inference scatters with `mmcv.parallel`"
        else:
            known[id(fn)] = ""
    return known[id(fn)]


def _scatters_with_mmcv(ctx) -> bool:
    return any(isinstance(s, ast.ImportFrom) and s.module == "mmcv.parallel" and any(a.name == "scatter" for a in s.names)
               for s in ctx.tree.body)
