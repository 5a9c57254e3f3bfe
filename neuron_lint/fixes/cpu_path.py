"""Where a CUDA availability check (or device count) must keep sending Trainium down the CPU path,
the one that works there: the module's operators or APIs run on the CPU and CUDA only, the project
builds its own C++/CUDA operators, or the count is of GPUs handed to other software."""

from __future__ import annotations

import ast

from .module_kind import child_visible_devices
from .own_extension import cpu_cuda_library, operator_library, own_extension, top_imports
from .unsupported_use import chooses_device, unsupported_note

#: The CUDA checks that decide, in a test module, which tests run on the GPU.
_GATES = frozenset({"torch.cuda.is_available", "torch.cuda.device_count"})


def cpu_path_note(ctx, node: ast.AST) -> str:
    """The note where this device test must keep sending Trainium down the CPU path, the one that
    works there (the module's operators or APIs run on the CPU and CUDA only, or its count is of
    GPUs it hands out); else ``""``."""
    checked = gate(ctx, node)
    library = checked and operator_library(ctx)
    if library:
        return (f"not rewritten: the module uses {library}, which runs on the CPU and CUDA only; this "
                "test sends Trainium down the CPU path, the one that works there. Rewritten, neuron tensors "
                "would reach it")
    unsupported = checked and chooses_device(ctx, node) and unsupported_note(ctx)
    if unsupported:
        return unsupported
    child = checked and child_visible_devices(ctx)
    if child:
        return (f"not rewritten: the module gives the processes it starts their `CUDA_VISIBLE_DEVICES` (line "
                f"{child}), so the GPUs this counts are theirs, for software that sees CUDA only; counting the "
                "accelerator's devices would hand NeuronCores to it")
    built = checked and own_extension(ctx.path)
    if built:
        return (f"not rewritten: the project builds its own C++/CUDA operators ({built}), which run on the CPU "
                "and CUDA only; this test sends Trainium down the CPU path, the one that works there. Rewritten, "
                "neuron tensors would reach those operators")
    return ""


#: Detector frameworks built on such operators, whose scripts hand the device to the framework's own
#: loaders (mmdet's ``init_detector(..., device=args.device)``, which decide for themselves) and place
#: other tensors beside them.
_DETECTORS = frozenset({"mmdet", "mmdet3d", "mmrotate", "maskrcnn_benchmark", "scene_graph_benchmark"})


def placement_note(ctx, hit) -> str:
    """The note where a CUDA placement (``.cuda()``, ``"cuda:0"``) is in a module that imports, at its
    top, a library whose operators run on the CPU and CUDA only (co3d's examples: a point cloud made
    on ``"cuda:0"`` for pytorch3d's rasterizer, read set 112): the accelerator is no place for its
    tensors, and the CPU is, on Trainium; else ``""``."""
    if hit.rule.code not in ("NRN201", "NRN202"):
        return ""
    library = next((n for n in top_imports(ctx) if cpu_cuda_library(n) and n.split(".")[0] not in _DETECTORS), "")
    return (f"not rewritten: the module uses `{library}`, which runs on the CPU and CUDA only, so the "
            "accelerator is no place for the tensors it gets; on Trainium, give them the CPU by hand"
            if library else "")


def gate(ctx, node: ast.AST) -> str:
    """The CUDA availability check or device count (a test of where to run) in ``node``, as written, or ``""``."""
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and ctx.qualname(n) in _GATES and not _divides(ctx, n):
            return ctx.segment(n) or ctx.qualname(n)
    return ""


def _divides(ctx, attr: ast.Attribute) -> bool:
    """``rank % torch.cuda.device_count()``: the count maps ranks to devices and decides no path (GLIP's
    SLURM setup beside a rewritten ``set_device`` and backend; on Trainium CUDA's count is 0)."""
    call = ctx.parent(attr)
    if not (isinstance(call, ast.Call) and call.func is attr):
        return False
    return _divisor(ctx, call) or _only_divides(ctx, call)


def _divisor(ctx, node: ast.AST) -> bool:
    parent = ctx.parent(node)
    return isinstance(parent, ast.BinOp) and parent.right is node and isinstance(parent.op, (ast.Mod, ast.FloorDiv, ast.Div))


def _only_divides(ctx, call: ast.Call) -> bool:
    """``num_gpus = torch.cuda.device_count()`` whose every use divides (BasicSR's ``rank % num_gpus``)."""
    stmt = ctx.parent(call)
    if not (isinstance(stmt, ast.Assign) and stmt.value is call and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)):
        return False
    name, scope = stmt.targets[0].id, ctx.enclosing_function(stmt)
    if scope is None:
        return False
    uses = [n for n in ctx.walk(scope) if isinstance(n, ast.Name) and n.id == name and n is not stmt.targets[0]]
    return bool(uses) and all(isinstance(n.ctx, ast.Load) and _divisor(ctx, n) for n in uses)
