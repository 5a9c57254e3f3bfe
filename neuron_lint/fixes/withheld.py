"""Where no fix may be planned, whatever the fixer: the reasons :meth:`PlanContext.propose` checks.

- a module that imports from torch only when torch is available and binds no ``torch``: a fix
  would need ``import torch`` at the top, and the module would not import without torch;
- legacy-XLA code in a project that already reaches Trainium natively (:mod:`.native_neuron`);
- the branch of a torch version test (or of ``hasattr(torch, "accelerator")``) meant for older
  releases, and the ``except AttributeError`` (``ImportError``...) fallback of a ``try`` that uses
  a torch API;
- code a test expects to raise (inside ``with pytest.raises(...)``);
- in test code (a test module, anything under a ``tests`` folder) or a function whose name asks for CUDA
  (``require_cuda``), a CUDA availability check or device count (a skip, a device list, a world
  size): it decides whether and where tests run (:func:`test_gate`);
- code in a class named for CUDA, the GPU or TensorRT (``DeviceGPU``, ``CudaTimer``) or derived from a class of
  a CUDA-only library (``bnb.nn.Linear8bitLt``), a function named for TensorRT (``run_model_tensorrt``), or in
  a class's own ``cuda()`` method: the project's CUDA implementation, beside the ones for other devices;
- a function or class TorchScript compiles (``@torch.jit.script``: :mod:`.torchscript`);
- a module that uses bitsandbytes (its kernels are CUDA's; its parameters quantize in their own ``cuda()``);
- an assignment to a ``torch.cuda`` attribute (a monkey patch: ``torch.cuda.stream = torch.xpu.stream``);
- a module that imports a CUDA-only runtime (TensorRT, PyCUDA, CuPy) at its top, or the project's
  module that compiles CUDA sources (the glue of its own kernels: :func:`.own_extension.kernel_wrapper`);
- a test about CUDA: named so (``test_dtw_cuda_equivalence``) or marked (``@pytest.mark.requires_cuda``);
- a ``torch.cuda`` function the project's tests replace (:mod:`.mocked`);
- a ``torch.cuda.device_count()`` in a module that builds ``DataParallel`` (CUDA's replication);
- in a function that always calls a CUDA extension (:mod:`.kernel_function`), or where CUDA must not start (:mod:`.driver_start`);
- a device named in a function that hands its tensors to its kernels by ``is_cuda`` (:func:`.device_dispatch.kernel_dispatch`);
- a CUDA availability check in a project that builds its own C++/CUDA operators, or in a module that imports
  CPU-and-CUDA-only operators (TorchRec, PyG's; :mod:`.own_extension`) or uses what TorchNeuron's beta
  may not hold (``torch.sparse``...: :mod:`.unsupported_use`).
"""

from __future__ import annotations

import ast

from .cpu_path import cpu_path_note, gate, placement_note
from .cuda_class import cuda_class
from .cuda_only import cuda_module_note
from .device_dispatch import dispatch_branch, kernel_dispatch
from .device_maps import indexed_comparison
from .driver_start import early_driver_note
from .kernel_function import kernel_function_note
from .min_torch import pre_1_0_import
from .mocked import mocked_by_tests
from .module_kind import (
    is_str,
    is_test_path,
    named_test_without_tests,
    torch_imported_after,
)
from .native_neuron import native_neuron_note
from .process_group import nccl_code, nccl_keyed
from .replication import data_parallel_count, mmcv_api, mmcv_wrapper, spawn_count
from .torch_binding import torch_import_note
from .torchscript import scripted
from .vendored_device import selecting_package


def withheld(ctx, hit, node: ast.AST) -> str:
    """Why no fix may be planned at ``node`` whatever the fixer (the note), or ``""``."""
    native = hit.rule.category == "legacy-xla" and not ctx.neuron and native_neuron_note(ctx.path)
    if native:
        return native
    unbound = torch_import_note(ctx, hit)
    if unbound:
        return unbound
    compiled = scripted(ctx, node)
    if compiled:
        return (f"not rewritten: TorchScript compiles `{compiled}` (`torch.jit.script`), and the device-agnostic "
                "code a fix writes is not TorchScript: the module would fail to import. Pass the device in")
    late = torch_imported_after(ctx, node)
    if late:
        return (f"not rewritten: it runs when the module is imported, before `torch` is (line {late}); the "
                "device-agnostic code a fix writes needs torch there. Move the import up first")
    patched = replaced_cuda_api(ctx, node)
    if patched:
        return (f"not rewritten: it assigns to `{patched}`, replacing CUDA's own function (a monkey patch, such as "
                "sd-scripts' IPEX support that sends CUDA calls to XPU); rewritten, it would replace another "
                "device's function, or `torch.accelerator`'s, for the whole process")
    older = older_torch_branch(ctx, node)
    if older is not None and _asks_for_accelerator(ctx, older.test):
        return (f"not rewritten: it is the fallback for a PyTorch without `torch.accelerator` (the test on "
                f"line {older.lineno}); written with `torch.accelerator` it would fail exactly there")
    if older is not None:
        return (f"not rewritten: it is the branch for an older PyTorch (the version test on line {older.lineno}); "
                "the device-agnostic APIs a fix writes may not exist there")
    ancient = pre_1_0_import(ctx)
    if ancient is not None:
        return (f"not rewritten: the module imports `{ancient.module or ancient.names[0].name}` (line {ancient.lineno}), "
                "which PyTorch 1.0 removed: it runs on an older torch, without `torch.accelerator` (and the "
                "legacy modules `load_lua` returns have `.cuda()` but no `.to()`)")
    expected = expected_to_raise(ctx, node)
    if expected is not None:
        return (f"not rewritten: the test expects this code to raise (`{ctx.segment(expected)[:40]}`, line "
                f"{expected.lineno}), so it is the code under test")
    gate = test_gate(ctx, node)
    if gate:
        return (f"not rewritten: in test code, or a function whose name asks for CUDA, `{gate}` decides "
                "whether (and on which device) tests run. "
                "Rewritten, CUDA-only tests would run on Trainium, and what they need (kernels, Inductor, "
                "CUDA graphs, the project's compiled operators) is mostly out of sight; decide by hand which "
                "tests Trainium runs")
    keyed = hit.rule.category == "cuda-specific" and nccl_keyed(ctx, node)
    if keyed:
        return (f"not rewritten: it is what the test on line {keyed} picks for NCCL, whose tensors are CUDA's; "
                "rewritten, Trainium would hand NCCL another device. Port the backend and its device together")
    nccl = hit.rule.category == "cuda-specific" and nccl_code(ctx, node)
    if nccl:
        return (f"not rewritten: {nccl}, so the devices here are what NCCL moves, CUDA's; rewritten, Trainium "
                "would hand NCCL another device's tensors. Give Trainium its own transport")
    mapped = hit.rule.category == "cuda-specific" and indexed_comparison(ctx, node)
    if mapped:
        return (f"not rewritten: the code here compares devices by CUDA's name and index (`{ctx.segment(mapped)[:50]}`, "
                f"line {mapped.lineno}); rewritten alone, this device would disagree with that test on Trainium. "
                "Port the device map and its comparisons together")
    cuda_code = hit.rule.category == "cuda-specific" and _cuda_code(ctx, node)
    if cuda_code:
        return cuda_code
    dispatched = hit.rule.category == "cuda-specific" and _dispatched(ctx, node)
    if dispatched:
        return dispatched
    named = hit.rule.category == "cuda-specific" and cuda_class(ctx, node)
    if named and "." in named:
        return (f"not rewritten: it is in `{named}`, the class's own `cuda()`, which moves its parts to CUDA "
                "(they may be the project's own objects, with their own `cuda()`, not modules). Rewritten, "
                "`cuda()` would no longer mean CUDA; give the class a device-agnostic `to(device)` instead")
    if named:
        return (f"not rewritten: it is in `{named}`, named for CUDA, the GPU or TensorRT or built on a CUDA-only "
                "library (bitsandbytes, apex, xformers, flash-attn): the project's CUDA "
                "implementation of something other devices do their own way. Rewritten, Trainium would get a "
                "CUDA class half converted; give Trainium its own implementation")
    about = cuda_test(ctx, node)
    if about:
        return (f"not rewritten: {about}, so CUDA is what it checks: rewritten, it would hand another "
                "device's tensors to the CUDA code under test; give it a CUDA skip instead")
    mocked = mocked_by_tests(ctx, node)
    if mocked:
        return (f"not rewritten: the project's tests replace `{mocked}` (`mock.patch`, `monkeypatch`), so the "
                "rewritten code would not call it as they expect and they would fail; change the tests and this "
                "code together")
    if hit.rule.code == "NRN203" and _cuda_in_message(ctx, node):
        return ("not rewritten: it reports CUDA's state in the error being raised (FastSAM's `select_device`); "
                "rewritten, the message would describe another device")
    elsewhere = _decided_elsewhere(ctx, hit, node)
    if elsewhere:
        return elsewhere
    cpu_path = hit.rule.category == "cuda-specific" and (cpu_path_note(ctx, node) or placement_note(ctx, hit))
    if cpu_path:
        return cpu_path
    replicated = _replicated(ctx, node)
    if replicated:
        return replicated
    fallback = api_fallback(ctx, node)
    if fallback:
        return (f"not rewritten: it is the fallback for a PyTorch without the API the `try` on line {fallback} "
                "uses; the device-agnostic APIs a fix writes may not exist there either")
    return ""


def _cuda_code(ctx, node: ast.AST) -> str:
    """The note when the code around ``node`` is CUDA's own: its module's, a kernel's function's, a fork's parent's."""
    return cuda_module_note(ctx, node) or kernel_function_note(ctx, node) or early_driver_note(ctx, node)


def _decided_elsewhere(ctx, hit, node: ast.AST) -> str:
    """The note when code outside the module decides this site's device: mmcv's wrapper it goes
    into, the package's own CUDA-only ``select_device``, or the CUDA-only library a test calls; else ``""``."""
    library = hit.rule.category == "cuda-specific" and _test_of_cuda_library(ctx, node)
    if library:
        return (f"not rewritten: the test calls `{library}`, from a library whose kernels run on CUDA only "
                "(xFormers, flash-attn, apex, bitsandbytes), so the tensors it makes are for them; skip the "
                "test where CUDA is absent instead")
    wrapper = mmcv_wrapper(ctx, node)
    if wrapper:
        return (f"not rewritten: {wrapper}, which sends its inputs to CUDA devices with CUDA's own streams; "
                "the models and devices here must stay where those inputs go")
    api = mmcv_api(ctx, hit.rule.code, node)
    if api:
        return api
    if hit.rule.category == "cuda-specific" and "_nrn_chooser" not in ctx.__dict__:  # once per module
        ctx.__dict__["_nrn_chooser"] = selecting_package(ctx.path)
    chooser = hit.rule.category == "cuda-specific" and ctx.__dict__["_nrn_chooser"]
    if chooser:
        return (f"not rewritten: this package chooses its device with its own `select_device` ({chooser}), "
                "which knows the CPU, MPS and CUDA indices only and raises for `neuron`: on Trainium the package "
                "runs on the CPU, and device-agnostic code here would disagree with it. Port `select_device` first")
    return ""


def _cuda_in_message(ctx, node: ast.AST) -> bool:
    """Is ``node`` in the error a ``raise`` makes, whose text names CUDA (``f"torch.cuda.device_count():
    {torch.cuda.device_count()}"``)? A message about "available devices" (vq-vae-2's) goes with the
    test it reports on."""
    raised = next((p for p in ctx.ancestors(node) if isinstance(p, ast.Raise)), None)
    return raised is not None and raised.exc is not None and any(
        isinstance(n, ast.Constant) and isinstance(n.value, str) and "cuda" in n.value.lower()
        for n in ast.walk(raised.exc))


_RAISES = frozenset({"raises", "assertRaises", "assertRaisesRegex"})


def expected_to_raise(ctx, node: ast.AST):
    """The ``pytest.raises(...)``/``self.assertRaises(...)`` of the ``with`` block holding ``node``,
    or None: fairscale checks that ``Pipe.cuda()`` and ``.to("cuda")`` are refused, which a rewrite
    to the current device would stop testing. A statement of the block before its last one prepares
    the input (BasicSR: ``img = torch.rand(...).cuda()`` then ``net(img)`` under
    ``pytest.raises(AssertionError)``, which ``.cuda()`` itself raises on a CPU-only torch): not held."""
    child = node
    for p in ctx.ancestors(node):
        if isinstance(p, (ast.With, ast.AsyncWith)):
            for item in p.items:
                call = item.context_expr
                if isinstance(call, ast.Call) and getattr(call.func, "attr", getattr(call.func, "id", "")) in _RAISES:
                    return None if child in p.body[:-1] else call
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return None
        child = p
    return None




#: With ``cuda``, the words of a function's name that make it a question about CUDA (``require_cuda``,
#: ``skip_if_no_cuda``, ``is_cuda_available``), not work done on it (``gc_cuda``, ``to_cuda``).
_ASKING = frozenset({"require", "requires", "skip", "has", "is", "available", "needs", "only", "check"})


def _asks_for_cuda(words: list[str]) -> bool:
    return "cuda" in words and bool(_ASKING & set(words))


def test_gate(ctx, node: ast.AST) -> str:
    """The CUDA availability check or device count (as written) that a fix at ``node`` would
    rewrite in test code, or in a function whose name asks for CUDA, or ``""``.

    Reviewing the fixed tests of torchtitan and detectron2 showed CUDA skips widened to
    ``torch.accelerator`` in front of Triton custom operators, Inductor, CUDA graphs, gloo process
    groups and the project's own compiled operators, none of which a neuron tensor can use. The
    decided code is mostly in other modules, so the check stays as it is. Test code is the test
    modules and everything under a ``tests`` folder (lerobot's ``tests/utils.py`` defines the
    ``require_cuda`` decorator 55 tests use); a function whose name asks for CUDA (``require_cuda``,
    ``skip_if_no_cuda``, ``has_cuda``) does so wherever it is."""
    from .name_words import name_words

    if not (is_test_path(getattr(ctx, "path", "")) and not named_test_without_tests(ctx)) and not any(
            isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)) and _asks_for_cuda(name_words(p.name))
            for p in ctx.ancestors(node)):
        return ""
    return gate(ctx, node)


def _test_of_cuda_library(ctx, node: ast.AST) -> str:
    """What the test function holding ``node`` calls from a CUDA-only library (lingua's
    ``test_toy_model``: xFormers' ``fmha.memory_efficient_attention`` on float16 CUDA tensors), or ``""``."""
    from .cuda_only import CUDA_LIBRARY_ROOTS

    test = next((p for p in ctx.ancestors(node) if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if test is None or not test.name.startswith("test"):
        return ""
    known = ctx.__dict__.setdefault("_nrn_library_tests", {})  # once per test function
    if id(test) not in known:
        known[id(test)] = next((q for c in ctx.walk(test) if isinstance(c, ast.Call)
                                for q in [ctx.qualname(c.func) or ""] if q.split(".")[0] in CUDA_LIBRARY_ROOTS), "")
    return known[id(test)]


def _replicated(ctx, node: ast.AST) -> str:
    """The note when the device count at ``node`` decides how a model is replicated (DataParallel) or
    how many workers another module's code runs in; else ``""``."""
    parallel = data_parallel_count(ctx, node)
    if parallel:
        return (f"not rewritten: the module wraps models in `{parallel}`, which replicates them over CUDA "
                "devices only (its scatter and broadcast are CUDA's); counting the accelerator's devices "
                "would send Trainium's NeuronCores into it. Move to DistributedDataParallel first")
    spawned = spawn_count(ctx, node)
    if spawned:
        return (f"not rewritten: it sets how many workers `torch.multiprocessing.spawn` starts (line {spawned[1]}), "
                f"each running `{spawned[0]}`, code from another module, which may need CUDA or NCCL; counting "
                "the accelerator's devices would start that many on Trainium. Port the workers' code, then this")
    return ""


def _dispatched(ctx, node: ast.AST) -> str:
    """The note when a dispatch by device decides ``node``: an arm of another device's
    (:func:`.device_dispatch.dispatch_branch`) or kernels chosen by ``is_cuda``; else ``""``."""
    branch = dispatch_branch(ctx, node)
    if branch:
        return _dispatch_note(*branch)
    kernel = kernel_dispatch(ctx, node)
    if kernel:
        return (f"not rewritten: the function hands its tensors to its kernels by `is_cuda` (line {kernel[0]}: "
                f"{kernel[1]}), so the device named here is the CUDA kernel's; on Trainium the tensors would "
                "reach the CPU kernel, which reads host memory. Port the dispatch and this device together")
    return ""


def _dispatch_note(line: int, device: str) -> str:
    if device.lower().startswith("neuron"):
        return (f"not rewritten: it is the CUDA branch of a choice between devices whose branch on line {line} "
                "is Trainium's own, so `torch.cuda` is exactly right here; rewritten, it would only probe the "
                "device again (initialising CUDA where the original did not) or break another device's branch")
    return (f"not rewritten: it is the CUDA branch of a choice between devices (line {line} handles "
            f"`{device}` its own way), where `torch.cuda` is exactly right; give Trainium a branch of its "
            "own beside it")


def replaced_cuda_api(ctx, node: ast.AST) -> str:
    """``torch.cuda.stream`` when ``node`` is (in) the target of an assignment to a ``torch.cuda``
    attribute (``torch.cuda.stream = torch.xpu.stream``), else ``""``. Flags (``cudnn.benchmark =``,
    NRN209) are settings, not replacements, and are not such targets."""
    child = node
    for p in ctx.ancestors(node):
        if isinstance(p, ast.Attribute):
            child = p
            continue
        if isinstance(p, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and child in (
                p.targets if isinstance(p, ast.Assign) else [p.target]):
            name = ctx.qualname(child) or ""
            return name if name.startswith("torch.cuda.") else ""
        return ""
    return ""


def cuda_test(ctx, node: ast.AST) -> str:
    """Why the test function holding ``node`` is about CUDA (its name, ``test_dtw_cuda_equivalence``,
    or a marker, ``@pytest.mark.requires_cuda``), or ``""``. whisper's test compares its Triton DTW
    kernel with the CPU one: with ``.cuda()`` rewritten, the kernel got neuron or CPU tensors."""
    from .device_choice import is_test_file

    if not is_test_file(ctx):
        return ""
    for p in ctx.ancestors(node):
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)) and p.name.startswith("test"):
            if {"cuda", "gpu", "gpus", "nvidia"} & set(p.name.lower().split("_")):
                # (tnt's `test_get_gpu_stats`, `test_get_process_group_backend_gpu`, read set 72)
                return f"the test's name, `{p.name}`, says it tests CUDA"
            for dec in p.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Attribute)
                        and target.value.attr == "mark" and "cuda" in target.attr.lower()):
                    return f"the test is marked `@{ctx.segment(target)}`"
                faked = _patched_cuda(dec)
                if faked:  # tnt's `@patch("torch.cuda.Stream")` beside a `cuda:0` device (set 72)
                    return f"the test replaces `{faked}` (`@{ctx.segment(target)}`): it fakes CUDA"
            return ""
    return ""


def _patched_cuda(decorator) -> str:
    """The ``torch.cuda`` name a ``@patch("torch.cuda....")`` / ``@mock.patch(...)`` decorator replaces, or ``""``."""
    if not (isinstance(decorator, ast.Call) and decorator.args and isinstance(decorator.args[0], ast.Constant)):
        return ""
    func = decorator.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    target = decorator.args[0].value
    return target if name == "patch" and isinstance(target, str) and target.startswith("torch.cuda.") else ""


_MISSING_API = {"AttributeError", "ImportError", "ModuleNotFoundError", "NameError"}


def api_fallback(ctx, node: ast.AST) -> int:
    """The line of a ``try`` that uses a torch API and falls back, in an ``except AttributeError``
    (or ``ImportError``...) handler holding ``node``, to something older (timm's ``NativeScaler``:
    ``try: torch.amp.GradScaler(device=...) except (AttributeError, TypeError):
    torch.cuda.amp.GradScaler()``), or 0."""
    for p in ctx.ancestors(node):
        if isinstance(p, ast.ExceptHandler):
            caught = p.type.elts if isinstance(p.type, ast.Tuple) else [p.type] if p.type is not None else []
            if any(isinstance(c, ast.Name) and c.id in _MISSING_API for c in caught):
                tried = ctx.parent(p)
                if isinstance(tried, ast.Try) and any(
                        isinstance(n, ast.Attribute) and (ctx.qualname(n) or "").startswith("torch.")
                        for stmt in tried.body for n in ast.walk(stmt)):
                    return tried.lineno
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return 0
    return 0


_NEWER = {">=": True, ">": True, "<": False, "<=": False}
_NEWER_OPS = {ast.GtE: True, ast.Gt: True, ast.Lt: False, ast.LtE: False}


def _newer_when_true(ctx, test: ast.AST) -> bool | None:
    """For a test of torch's version: True when it holds on newer releases (``is_torch_version(">=",
    "2.3")``, ``version.parse(torch.__version__) >= ...``), False when on older ones, None when it
    is no such test."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _newer_when_true(ctx, test.operand)
        return None if inner is None else not inner
    if _asks_for_accelerator(ctx, test):
        return True
    if isinstance(test, ast.Call) and test.args and is_str(test.args[0], *_NEWER):
        name = test.func.attr if isinstance(test.func, ast.Attribute) else getattr(test.func, "id", "")
        if "torch" in name.lower() and "version" in name.lower():
            return _NEWER[test.args[0].value]
        return None
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _NEWER_OPS:
        left = ctx.segment(test.left)
        if "version" in left.lower() and ("torch" in left.lower() or left.strip().isupper()):
            return _NEWER_OPS[type(test.ops[0])]
    return None


def _asks_for_accelerator(ctx, test: ast.AST) -> bool:
    """``hasattr(torch, "accelerator")`` (``not`` aside)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    return (isinstance(test, ast.Call) and getattr(test.func, "id", "") == "hasattr" and len(test.args) == 2
            and ctx.qualname(test.args[0]) == "torch" and is_str(test.args[1], "accelerator"))


def older_torch_branch(ctx, node: ast.AST) -> ast.If | ast.IfExp | None:
    """The test of torch's version or of ``hasattr(torch, "accelerator")`` whose branch for older
    releases holds ``node`` (accelerate's ``if is_torch_version(">=", "2.3"): ... else:
    torch.cuda.amp.GradScaler(...)``, diffusers' ``... if hasattr(torch, "accelerator") else
    torch.cuda.current_device()``), or None."""
    child = node
    for p in ctx.ancestors(node):
        if isinstance(p, (ast.If, ast.IfExp)):
            newer = _newer_when_true(ctx, p.test)
            if newer is not None and child is not p.test:
                branch = p.orelse if newer else p.body
                if child is branch or (isinstance(branch, list) and any(s is child for s in branch)):
                    return p
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return None
        child = p
    return None
