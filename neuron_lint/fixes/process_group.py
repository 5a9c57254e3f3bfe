"""The process group a module makes, where it decides what a fix may do with the module's devices.

A gloo group carries CPU and CUDA tensors only: a module that trains inside one (RVC's DDP, cleanrl's
gradients summed with ``dist.all_reduce``) keeps its device choices, or Trainium would hand neuron
tensors to gloo. So does a module that lists the backends it accepts (ignite's NCCL, GLOO and MPI,
none of them the Neuron device's) or communicates through Horovod (CPU and CUDA tensors only).
NCCL's own code keeps its CUDA devices: what a test for ``"nccl"`` picks, and a module (or class)
named for NCCL or importing an NCCL binding; a module that compares its backend with ``"nccl"``
keeps that backend.
"""

from __future__ import annotations

import ast
import os
import re

from ..engine.parameters import parameter_defaults
from .project_scan import first_in_project, pattern_index

#: What a module does over its process group with the tensors on its devices.
_COLLECTIVES = ("DistributedDataParallel", "DDP", "all_reduce", "all_gather", "reduce_scatter")
_BACKEND_NAMES = frozenset({"nccl", "gloo", "mpi"})


def gloo_group(ctx) -> int:
    """The line of the module's ``init_process_group("gloo")`` (``backend="gloo"``, a parameter or an
    option defaulting to it) when that is the only backend it gives a process group and it wraps a
    model in DDP or sums tensors over the group, or 0. RVC's ``train.py`` trains on every GPU it counts
    inside a gloo group. (pytorch/examples' DDP example takes gloo on Windows only; its RPC parameter
    server sends gradients over RPC from the CPU: neither is held.)"""
    if "gloo" not in ctx.text or not any(word in ctx.text for word in _COLLECTIVES):
        return 0
    line, ddp = 0, False
    for n in ctx.walk(ctx.tree):
        if not isinstance(n, ast.Call):
            continue
        name = getattr(n.func, "attr", getattr(n.func, "id", ""))
        if name == "init_process_group":
            backend = next((k.value for k in n.keywords if k.arg == "backend"), n.args[0] if n.args else None)
            if isinstance(backend, ast.Name):  # a parameter whose default is "gloo" (captum's init_process)
                args = getattr(ctx.enclosing_function(n), "args", None)
                backend = next((d for p, d in parameter_defaults(args) if p.arg == backend.id), None) if args else None
            elif isinstance(backend, ast.Attribute):  # cleanrl's `args.backend`, an option defaulting to "gloo"
                backend = _option_default(ctx, backend.attr)
            if not (isinstance(backend, ast.Constant) and backend.value == "gloo"):
                return 0
            line = line or n.lineno
        ddp = ddp or (ctx.qualname(n.func) or name).rsplit(".", 1)[-1] in _COLLECTIVES
    return line if ddp else 0


def _option_default(ctx, name: str) -> ast.expr | None:
    """The default of the module's option ``name``: a field of its options class (``backend: str =
    "gloo"``, tyro's and dataclasses') or ``add_argument("--backend", default="gloo")``."""
    for n in ctx.walk(ctx.tree):
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.target.id == name and n.value:
            return n.value
        if (isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "add_argument" and n.args
                and isinstance(n.args[0], ast.Constant) and n.args[0].value == f"--{name}"):
            return next((k.value for k in n.keywords if k.arg == "default"), None)
    return None


def _backend_name(node: ast.AST) -> str:
    """``"nccl"``, ``NCCL``, ``dist.Backend.GLOO``: the process-group backend ``node`` names, or ``""``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        name = node.value.lower()
    else:
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
        name = name.lower() if name.isupper() else ""
    return name if name in _BACKEND_NAMES else ""


#: The position at which each process-group call takes its backend (or as `backend=`).
_BACKEND_ARGUMENT = {"torch.distributed.init_process_group": 0, "torch.distributed.new_group": 2,
                     "torch.distributed.distributed_c10d.init_process_group": 0,
                     "torch.distributed.distributed_c10d.new_group": 2}


def nccl_parameter(ctx, call: ast.Call) -> int:
    """The line of the ``"nccl"`` default of the parameter that ``call``, a process group's setup,
    is given as its backend (pytext's ``def dist_init(..., backend="nccl")``, then
    ``init_process_group(backend=backend)``), else 0. NRN206 rewrites backends written in the
    call; one that comes in as a parameter stays NCCL's, so the code around it stays CUDA's."""
    position = _BACKEND_ARGUMENT.get(ctx.qualname(call.func) or "")
    if position is None:
        return 0
    given = next((k.value for k in call.keywords if k.arg == "backend"),
                 call.args[position] if len(call.args) > position else None)
    fn = ctx.enclosing_function(call) if isinstance(given, ast.Name) else None
    if fn is None or isinstance(fn, ast.Lambda):
        return 0
    return next((default.lineno for arg, default in parameter_defaults(fn.args) if arg.arg == given.id
                 and isinstance(default, ast.Constant) and _backend_name(default) == "nccl"), 0)


def fixed_backends(ctx) -> str:
    """``"NCCL, GLOO, MPI (line 43)"`` when the module accepts the process-group backends it lists and
    none is the Neuron device's (ignite's ``for name in [NCCL, GLOO, MPI]``, ``bnd in (NCCL, GLOO,
    MPI)``: on Trainium its group is gloo's, whose collectives take CPU tensors), or when it imports
    Horovod (whose collectives take CPU and CUDA tensors); else ``""``. A list of an option's
    ``choices`` does not count: the option's default is what a fix rewrites."""
    text = ctx.text
    if "neuron" in text or not any(w in text for w in ("NCCL", "nccl", "horovod")):
        return ""
    for n in ctx.walk(ctx.tree):
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            modules = [n.module or ""] if isinstance(n, ast.ImportFrom) else [a.name for a in n.names]
            if any(m.split(".")[0] == "horovod" for m in modules):
                return f"Horovod (line {n.lineno})"
        if not isinstance(n, (ast.List, ast.Tuple, ast.Set)) or len(n.elts) < 2:
            continue
        names = [_backend_name(e) for e in n.elts]
        if not all(names) or "nccl" not in names:
            continue
        parent = ctx.parent(n)
        tested = isinstance(parent, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in parent.ops)
        if tested or isinstance(parent, (ast.comprehension, ast.For)):
            return f"{', '.join(ast.unparse(e) for e in n.elts)} (line {n.lineno})"
    return ""


# `dist.get_backend() != "nccl"`, `get_backend(group) == 'nccl'`, `"nccl" == dist.get_backend()`
_ASKS_NCCL = re.compile(rb"""get_backend\([^()]*\)\s*[!=]=\s*['"]nccl['"]|['"]nccl['"]\s*[!=]=\s*[\w.]*get_backend\(""")


def nccl_asked(ctx) -> str:
    """Where the module or its project asks whether the process group is NCCL's to place tensors
    (allennlp's ``distributed_device()``: CPU unless ``dist.get_backend() == "nccl"``), as
    ``"nn/util.py:2122"``, or ``""``. With the backend rewritten, Trainium's group is the Neuron
    device's, that test says "not NCCL", and the collectives get CPU tensors."""
    data = ctx.text.encode("utf-8", "replace")
    m = _ASKS_NCCL.search(data) if b"get_backend" in data else None
    if m:
        line = data.count(b"\n", 0, m.start()) + 1
        return f"line {line}"
    # in a repository of several projects without markers of their own (InternImage's
    # classification/ and segmentation/), only the file's own project
    return first_in_project(getattr(ctx, "path", "") or "", "nccl_asked", own_project=True)


pattern_index("nccl_asked", _ASKS_NCCL, b"get_backend")


#: Calls that only say something: a branch of nothing else decides nothing.
_SAYS = frozenset({"print", "debug", "info", "warning", "warn", "error", "log"})


def backend_compared(ctx) -> int:
    """The line where the module compares a backend it holds with ``"nccl"`` to decide what to do
    (torchrl's distributed collector examples: ``if args.backend == "nccl":`` CUDA devices, ``elif
    "gloo"`` the CPU, else ``NotImplementedError``), or 0. With the backend rewritten, Trainium's
    ``neuron`` takes none of the branches. A test whose branch only warns (pytorch/examples'
    imagenet: NCCL on one GPU) decides nothing."""
    if "nccl" not in ctx.text.lower():
        return 0
    if "_nrn_backend_compared" not in ctx.__dict__:  # once per module
        ctx.__dict__["_nrn_backend_compared"] = _first_backend_test(ctx)
    return ctx.__dict__["_nrn_backend_compared"]


def _first_backend_test(ctx) -> int:
    for n in ctx.walk(ctx.tree):
        if not (isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], (ast.Eq, ast.NotEq))):
            continue
        sides = (n.left, n.comparators[0])
        if not any(isinstance(x, ast.Constant) and isinstance(x.value, str) and x.value.lower() == "nccl" for x in sides):
            continue
        if not any("backend" in (x.id if isinstance(x, ast.Name) else getattr(x, "attr", "")).lower() for x in sides):
            continue
        branch = next((p for p in ctx.ancestors(n) if isinstance(p, ast.stmt)), None)
        if isinstance(branch, ast.If) and not branch.orelse and all(_says(s) for s in branch.body):
            continue
        return n.lineno
    return 0


def _says(stmt: ast.stmt) -> bool:
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    func = call.func if isinstance(call, ast.Call) else None
    return (func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)) in _SAYS


def nccl_keyed(ctx, node: ast.AST) -> int:
    """The line of the test that compares a value with ``"nccl"`` when ``node`` is in what it picks
    (an arm of ``a if backend == "nccl" else b``, the body of ``if backend == "nccl":``), or 0: the
    device NCCL needs is CUDA's (torchrl's replay service: ``torch.device("cuda" if backend == "nccl"
    else "cpu")``, read set 63)."""
    child = node
    for p in ctx.ancestors(node):
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return 0
        if isinstance(p, (ast.If, ast.IfExp)) and child is not p.test:
            asks = [c for c in ast.walk(p.test) if isinstance(c, ast.Compare) and len(c.ops) == 1 and any(
                isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.lower() == "nccl"
                for n in (c.left, *c.comparators))]
            # the arm NCCL takes: the body of `== "nccl"`, the other arm of `!= "nccl"` (not a later
            # `elif` of the chain: torchtitan's torchft manager, `elif process_group == "mccl":`)
            arm = p.body if isinstance(p, ast.IfExp) else None
            inside = child is arm or isinstance(p, ast.If) and any(child is s for s in p.body)
            if asks and inside == isinstance(asks[0].ops[0], (ast.Eq, ast.In)):
                return p.lineno
        child = p
    return 0


#: Names about NCCL that are no binding: a test, or a helper that sets NCCL's environment variables
#: (ByteTrack's ``from yolox.utils import configure_nccl``, read set 91).
_NOT_A_BINDING = ("is_", "has_", "configure_", "setup_", "set_", "get_", "check_")


def nccl_code(ctx, node: ast.AST) -> str:
    """What makes the code around ``node`` NCCL's own, or ``""``: the module is named for NCCL
    (torchrl's ``vllm_nccl.py``, ``sglang_nccl.py``), or it imports an NCCL binding (vLLM's
    ``device_communicators.pynccl``, ``weight_transfer.nccl_engine``; ``cupy.cuda.nccl``) at its top,
    or in the class or function around ``node``. The devices there are what NCCL moves: CUDA's."""
    said = ctx.__dict__.get("_nrn_says_nccl")
    if said is None:  # asked for every finding of the module
        said = ctx.__dict__["_nrn_says_nccl"] = "nccl" in ctx.text.lower()
    if not said:
        return ""
    name = os.path.basename(getattr(ctx, "path", "") or "")
    if "nccl" in name.lower():
        return f"the module is named for NCCL (`{name}`)"
    found = ctx.__dict__.get("_nrn_nccl_imports")
    if found is None:  # once per module: (import, the class or function it is in, or None)
        found = ctx.__dict__["_nrn_nccl_imports"] = [
            (n, _owner(ctx, n)) for n in ctx.walk(ctx.tree) if isinstance(n, (ast.Import, ast.ImportFrom))
            and any("nccl" in part.lower() and not part.startswith(_NOT_A_BINDING)
                    for a in ([n.module or ""] if isinstance(n, ast.ImportFrom) else []) + [a.name for a in n.names]
                    for part in a.split("."))]
    around = {id(p) for p in ctx.ancestors(node)}
    for imp, owner in found:
        if owner is None or id(owner) in around:
            what = imp.module if isinstance(imp, ast.ImportFrom) else imp.names[0].name
            return f"it imports the NCCL binding `{what}` (line {imp.lineno})"
    return ""


def _owner(ctx, node: ast.AST):
    """The outermost class around ``node``, else its outermost function, else None (module level)."""
    owner = None
    for p in ctx.ancestors(node):
        if isinstance(p, ast.ClassDef) or isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)) and not isinstance(
                owner, ast.ClassDef):
            owner = p
    return owner
