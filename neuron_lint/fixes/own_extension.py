"""Does the project build its own C++/CUDA operators?

A project whose ``setup.py`` builds extensions with ``torch.utils.cpp_extension`` (pytorch3d's
``_C``, detectron2's ``_C``, fairseq's ``libnat_cuda``) has operators with a CPU and a CUDA
kernel and nothing else: a ``neuron`` tensor reaching one raises ("Cannot use CPU implementation").
So does a project that compiles CUDA sources when a module is imported (``cpp_extension.load(...,
sources=[..., "upfirdn2d_kernel.cu"])``: rosinality's stylegan2 ``op/``, score_sde_pytorch), whose
operators pick their native path only for CPU tensors (test modules, which may only name such
sources, do not count), and one that builds them with PyTorch 0.4's ``torch.utils.ffi``
(``create_extension("_ext.nms", ..., with_cuda=True)`` in a ``build.py``: faster-rcnn.pytorch,
CenterNet's DCNv2). Its ``torch.cuda.is_available()`` tests send
Trainium down the CPU path, the one that works there; rewritten, they would send it to the
accelerator and into those operators. Read once per project.
"""

from __future__ import annotations

import ast
import contextlib
import os
import re

from .module_kind import (
    import_bases,
    is_test_path,
    module_files,
    non_test,
    search_bases,
    top_import_files,
    top_imports,
)
from .project_scan import (
    MAX_BYTES,
    per_file_version,
    project_memo,
    project_root,
    python_files,
    source_index,
    source_reader,
)

_BUILDS = re.compile(rb"\b(CUDAExtension|CppExtension|BuildExtension)\b")
_JIT = re.compile(rb"\bcpp_extension\b")
_CUDA_SOURCE = re.compile(rb"""\.cu['"]""")
_CUDA_FILE = re.compile(r"[\w/.-]{1,200}\.cu")


@project_memo(64)
def _built_by(root: str) -> str:
    found = _BUILDS.search(_read(os.path.join(root, "setup.py")))
    if found:
        return f"`{found.group(1).decode()}` in setup.py"
    for file, source in _compiling_modules(root).items():
        name = os.path.relpath(file, root).replace(os.sep, "/")
        return f"`{source}` compiled by `cpp_extension` in {name}"
    for file, _folder, extension in _ffi_builds(root):
        name = os.path.relpath(file, root).replace(os.sep, "/")
        return f"`{extension}` built by `torch.utils.ffi` in {name}"
    return ""


_FFI = re.compile(rb"\btorch\.utils\.ffi\b")


@project_memo(64)
def _ffi_builds(root: str) -> tuple[tuple[str, str, str], ...]:
    """The project's ``torch.utils.ffi.create_extension(NAME, ...)`` calls (PyTorch 0.4's C
    extensions, CUDA kernels linked in): (build file, its folder, NAME)."""
    found = []
    # read only the build scripts (`build.py`, `build_double.py`, `make.py`, `setup.py`), as the
    # PyTorch 0.4 recipe names them: the whole tree would be read again for every project checked
    for file, data in python_files(root, lambda parts, name: name.startswith(("build", "make", "setup"))):
        if not _FFI.search(data) or b"create_extension" not in data:
            continue
        for node in _calls(data):
            if (_callee(node.func) == "create_extension" and node.args
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                found.append((os.path.abspath(file), os.path.dirname(os.path.abspath(file)), node.args[0].value))
    return tuple(found)


def _imported_modules(tree: ast.Module) -> set[str]:
    """Every dotted name the module's imports mention, and each of its parts (relative ones too)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            dotted = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            dotted = [f"{node.module}.{a.name}" if node.module else a.name for a in node.names]
        else:
            continue
        for name in dotted:
            names.update(name.split("."))
    return names


def _ffi_modules(root: str) -> dict[str, str]:
    """The modules beside an ffi build (its folder and below) that import its extension, or import,
    one module after another, one that does (DCNv2's ``dcn_v2_func.py`` imports ``_ext.dcn_v2``, its
    ``dcn_v2.py`` imports ``dcn_v2_func``, its ``test.py`` imports ``dcn_v2``): each as the note names
    what it loads."""
    found: dict[str, str] = {}
    for build, folder, extension in _ffi_builds(root):
        package = extension.split(".")[0]
        imports = {}
        for file, data in python_files(folder):
            tree = _parsed(data)
            if tree is not None:
                imports[os.path.abspath(file)] = _imported_modules(tree)
        imports.pop(build, None)
        kernels = {file for file, names in imports.items() if package in names}
        while True:
            stems = {os.path.splitext(os.path.basename(f))[0] for f in kernels}
            more = {file for file, names in imports.items() if file not in kernels and names & stems}
            if not more:
                break
            kernels |= more
        for file in kernels:
            found.setdefault(file, f"the extension `{extension}` (`torch.utils.ffi`), imported by")
    return found


@project_memo(64)
def _setups(root: str) -> list[tuple[str, bytes]]:
    """The ``setup.py`` files of the project (its own and those of folders below it) that build
    extensions with ``torch.utils.cpp_extension``: (folder, text)."""
    return [(os.path.dirname(os.path.abspath(file)), data)
            for file, data in python_files(root, lambda parts, name: name == "setup.py") if _BUILDS.search(data)]


_VENDORED_CUDA_LIBRARIES = frozenset({"apex", "xformers", "flash_attn", "bitsandbytes"})


def _vendors_cuda_library(folder: str) -> bool:
    """Is the folder of a setup.py a copy of a CUDA-only library (jukebox's ``apex/``)? Its kernels are
    that library's (NRN6xx), not the project's own operators."""
    return any(os.path.isfile(os.path.join(folder, name, "__init__.py")) for name in _VENDORED_CUDA_LIBRARIES)


@project_memo(64)
def _installed_subprojects(root: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """The folders below the root with a ``setup.py`` building extensions whose package the project
    imports (stable-fast-3d's ``texture_baker/``, installed with ``pip install texture_baker/``: its
    operators have CPU, CUDA and MPS kernels only): (the note's words, the top-level folders of the
    modules importing it, ``""`` for the root's own). A vendored CUDA-only library (jukebox's apex) is
    another rule's (NRN6xx)."""
    here, found = os.path.abspath(root), []
    for folder, data in _setups(root):
        if folder == here:
            continue
        try:
            packages = sorted(d for d in os.listdir(folder) if d.isidentifier()
                              and os.path.isfile(os.path.join(folder, d, "__init__.py")))
        except OSError:
            continue
        if not packages or _vendors_cuda_library(folder):
            continue
        imports = re.compile(rb"^[ \t]*(?:from|import)[ \t]+(?:" + "|".join(packages).encode() + rb")\b", re.M)
        users = frozenset(_top_folder(file, here) for file, text in python_files(root)
                          if not os.path.abspath(file).startswith(folder + os.sep) and imports.search(text))
        if users:
            shown = os.path.relpath(os.path.join(folder, "setup.py"), root).replace(os.sep, "/")
            found.append((f"`{_BUILDS.search(data).group(1).decode()}` in {shown}", users))
    return tuple(found)


def cuda_only_packages(path: str) -> frozenset[str]:
    """The packages of the project around ``path`` that a ``setup.py`` of their own folder builds with
    ``CUDAExtension`` and no ``CppExtension`` (mip-splatting's ``diff_gaussian_rasterization``, read set
    116): what they run takes CUDA tensors only."""
    root = project_root(path) if path and os.path.isfile(path) else None
    return _cuda_only_packages(root) if root else frozenset()


@project_memo(64)
def _cuda_only_packages(root: str) -> frozenset[str]:
    found = set()
    for folder, data in _setups(root):
        if b"CUDAExtension" not in data or b"CppExtension" in data or _vendors_cuda_library(folder):
            continue
        with contextlib.suppress(OSError):
            found.update(d for d in os.listdir(folder) if d.isidentifier() and os.path.isfile(os.path.join(folder, d, "__init__.py")))
    return frozenset(found)


def _top_folder(file: str, root: str) -> str:
    """The folder right below ``root`` that holds ``file`` (``""`` for a module at the root)."""
    parts = os.path.relpath(os.path.abspath(file), root).split(os.sep)
    return parts[0] if len(parts) > 1 else ""


@project_memo(64)
def _extension_modules(root: str) -> frozenset[str]:
    """The top-level extension modules the project's setup.py files build by name
    (``CUDAExtension("swin_window_process", ...)``; Mask2Former's ``MultiScaleDeformableAttention``):
    a kernel package of their own. (A package's ``_C``, like detectron2's, is not one.)"""
    names = set()
    for folder, data in _setups(root):
        if _vendors_cuda_library(folder):
            continue
        for node in _calls(data):
            if "extension" in _callee(node.func).lower():
                given = node.args[:1] + [k.value for k in node.keywords if k.arg == "name"]
                names.update(a.value for a in given if isinstance(a, ast.Constant) and isinstance(a.value, str)
                             and a.value.isidentifier())
    return frozenset(names)


def _parsed(data: bytes) -> ast.Module | None:
    """A module's source parsed, or None when it does not parse."""
    try:
        return ast.parse(data)
    except (SyntaxError, ValueError, RecursionError):
        return None


def _calls(data: bytes) -> list[ast.Call]:
    """The calls of a module's source (none when it does not parse)."""
    tree = _parsed(data)
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)] if tree is not None else []


def _callee(func: ast.expr) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _imports_extension(data: bytes, names: frozenset[str]) -> str:
    """The first of ``names`` that the module ``data`` imports, or ``""``."""
    if not any(n.encode() in data for n in names):
        return ""
    tree = _parsed(data)
    if tree is None:
        return ""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found = [a.name for a in node.names if a.name in names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found = [node.module] if node.module in names else []
        else:
            continue
        if found:
            return found[0]
    return ""


@project_memo(64)
def _compiling_modules(root: str) -> dict[str, str]:
    """The project's modules that compile CUDA sources with ``cpp_extension`` when imported (their
    absolute paths), each with the first ``.cu`` file it names. A setup.py below the root builds a
    vendored library (jukebox's copy of apex), not what the project runs; test modules do not count."""
    return dict(source_index(root, "compiling_modules"))


@source_reader("compiling_modules", lambda parts, name: name != "setup.py" and non_test(parts, name))
def _compiling_module(file: str, data: bytes) -> tuple[str, str] | None:
    """(the module's absolute path, the first ``.cu`` file it compiles) of a module that compiles
    CUDA sources with ``cpp_extension`` when imported, else None."""
    source = (_cuda_source(data) if b"cpp_extension" in data and _JIT.search(data) and _CUDA_SOURCE.search(data)
              else "")
    return (os.path.abspath(file), source) if source else None


@project_memo(64)
def _kernel_modules(root: str) -> dict[str, str]:
    """The modules that load the project's kernels, each as the note names what it loads: those of
    :func:`_compiling_modules`, and those importing an extension module a setup.py of the project
    builds by name (Mask2Former's ``ms_deform_attn_func.py``: ``import MultiScaleDeformableAttention``,
    whose CPU kernel only raises)."""
    found = {file: f"`{source}`, compiled by" for file, source in _compiling_modules(root).items()}
    found.update({file: note for file, note in _ffi_modules(root).items() if file not in found})
    extensions = _extension_modules(root)
    if extensions:
        for file, data in python_files(root, lambda parts, name: name != "setup.py"
                                       and not is_test_path(os.path.join(*parts, name))):
            name = _imports_extension(data, extensions)
            if name:
                found.setdefault(os.path.abspath(file), f"the extension `{name}`, imported by")
    return found


def kernel_wrapper(ctx) -> str:
    """The project's module loading its kernels (:func:`_kernel_modules`: compiling CUDA sources, or
    importing an extension a setup.py builds by name) that this module is or imports from, or the
    extension it imports itself, anywhere in it, as the note names it, or ``""``. stable-dreamfusion's
    ``freqencoder/freq.py`` does ``from .backend import _backend`` and moves its inputs with
    ``if not x.is_cuda: x = x.cuda()`` right before the kernel: its CUDA code is the kernels' glue.
    Asked once per module (the answer is kept on ``ctx``)."""
    found = ctx.__dict__.get("_nrn_kernel_wrapper")
    if found is None:
        found = ctx.__dict__["_nrn_kernel_wrapper"] = _cuda_custom_op(ctx) or _kernel_wrapper(ctx)
    return found


def _cuda_custom_op(ctx) -> str:
    """The operator the module registers for CUDA alone (lingua's mamba components:
    ``@torch.library.custom_op(..., device_types="cuda")`` over a CUDA extension or Triton kernels),
    as the note names it, or ``""``: called with another device's tensors, it has no kernel."""
    if "device_types" not in ctx.text:
        return ""
    for node in ctx.walk(ctx.tree):
        if isinstance(node, ast.Call) and ctx.qualname(node.func) in _CUSTOM_OPS:
            kinds = next((k.value for k in node.keywords if k.arg == "device_types"), None)
            values = kinds.elts if isinstance(kinds, (ast.Tuple, ast.List)) else [kinds]
            if kinds is not None and all(isinstance(v, ast.Constant) and v.value == "cuda" for v in values):
                name = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else "?"
                return f"`{name}`, registered for `device_types=\"cuda\"` only on line {node.lineno}"
    return ""


_CUSTOM_OPS = frozenset({"torch.library.custom_op", "torch.library.triton_op"})


def _kernel_wrapper(ctx) -> str:
    root = project_root(ctx.path) if ctx.path else None
    compiling = _kernel_modules(root) if root else {}
    if not compiling:
        return ""
    here = os.path.abspath(ctx.path)
    if here in compiling:
        return "its own " + compiling[here].rpartition(",")[0].removeprefix("the ")
    extensions = _extension_modules(root)
    # a test of the kernels themselves (torch-ngp's testing/test_hashencoder.py: `from gridencoder
    # import GridEncoder`, a package whose grid.py calls them): what it imports is their package
    tests = is_test_path(os.path.relpath(here, root))
    folders = {os.path.dirname(file): file for file in sorted(compiling, reverse=True)} if tests else {}
    for node in ctx.walk(ctx.tree):
        imported = ([a.name for a in node.names] if isinstance(node, ast.Import)
                    else [node.module] if isinstance(node, ast.ImportFrom) and not node.level else [])
        built = next((name for name in imported if name in extensions), None)
        if built:  # the extension itself (Swin's kernels/window_process/unit_test.py)
            return f"the extension `{built}`"
        if isinstance(node, ast.ImportFrom):
            bases = import_bases(here, root, node.level)
            parts = node.module.split(".") if node.module else []
            names = [parts] + [parts + [a.name] for a in node.names]
        elif isinstance(node, ast.Import):
            bases, names = search_bases(here, root), [a.name.split(".") for a in node.names]
        else:
            continue
        for base in bases:
            for name in names:
                for file in module_files(base, name):
                    if file in compiling:
                        shown = os.path.relpath(file, root).replace(os.sep, "/")
                        return f"{compiling[file]} {shown}"
                    if tests and os.path.dirname(file) in folders and os.path.isfile(file):
                        shown = os.path.relpath(folders[os.path.dirname(file)], root).replace(os.sep, "/")
                        return f"{compiling[folders[os.path.dirname(file)]]} {shown}, beside the tested module"
    return ""


def _cuda_source(data: bytes) -> str:
    """The first string of the module that names a ``.cu`` file (not one inside a docstring or a
    string of code), or ``""``."""
    tree = _parsed(data)
    if tree is None:
        return ""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _CUDA_FILE.fullmatch(node.value):
            return node.value
    return ""


def _read(path: str) -> bytes:
    try:
        if os.path.getsize(path) > MAX_BYTES:
            return b""
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return b""


#: Libraries whose operators have a CPU and a CUDA kernel only (or accept only those devices):
#: TorchRec (compute devices cpu/cuda/mtia), FBGEMM-GPU, PyG's extension packages, sparse
#: convolutions, pytorch3d, mmcv's ops, and the detectors built on them (mmdet's RoI heads and NMS are
#: mmcv's ops: PVT's `get_flops.py` put a Mask R-CNN on the accelerator under a rewritten test), and
#: torchsummary, whose `summary` makes its inputs on CUDA or else on the CPU (unet-pytorch's
#: `summary.py`: a model moved to the accelerator got CPU inputs), and maskrcnn_benchmark's detectors
#: (its `_C` RoIAlign, RoIPool and NMS: mmf's feature extractors, set 55, and scene_graph_benchmark's
#: AttrRCNN built on it). (A
#: module using bitsandbytes gets no CUDA rewrite at all: :func:`.withheld.uses_bitsandbytes`.)
CPU_CUDA_LIBRARIES = frozenset({"torchrec", "fbgemm_gpu", "torch_scatter", "torch_sparse", "torch_cluster",
                                 "torch_spline_conv", "MinkowskiEngine", "spconv", "pytorch3d", "mmcv.ops",
                                 "mmdet", "mmdet3d", "mmrotate", "torchsummary", "maskrcnn_benchmark",
                                 "scene_graph_benchmark",
                                 # Isaac Gym simulates on CUDA or the CPU (cleanrl's PPO, set 41)
                                 "isaacgym", "isaacgymenvs",
                                 # DGL's graphs live on the CPU or a CUDA GPU (RFdiffusion's SE(3)
                                 # transformer, read set 87), so do DGL-LifeSci's (read set 90)
                                 "dgl", "dgllife"})


#: AOTInductor's entry points: a shared library compiled and loaded for the CPU or GPUs.
AOT_INDUCTOR = frozenset({"torch._export.aot_compile", "torch._export.aot_load", "torch._inductor.aot_compile",
                          "torch._inductor.aoti_compile_and_package", "torch._inductor.aoti_load_package"})


def operator_library(ctx) -> str:
    """The library of CPU-and-CUDA-only operators the module imports at its top, in backticks (dlrm's
    ``torchrec_dlrm``: ``if torch.cuda.is_available(): device = cuda, backend = nccl`` else the CPU
    with gloo, which is the TorchRec path that works on Trainium), or AOTInductor, which the module
    calls (TorchServe's export scripts, set 57: a shared library built and loaded for the CPU or
    CUDA), or ``""``."""
    found = next((n for n in top_imports(ctx) if cpu_cuda_library(n)), "")
    if not found and "aot" in ctx.text:
        found = next((ctx.segment(n.func) for n in ctx.walk(ctx.tree) if isinstance(n, ast.Call)
                      and ctx.qualname(n.func) in AOT_INDUCTOR), "")
    return f"`{found}`" if found else _through_project_module(ctx)


def cpu_cuda_library(name: str) -> bool:
    return name.split(".")[0] in CPU_CUDA_LIBRARIES or ".".join(name.split(".")[:2]) in CPU_CUDA_LIBRARIES


def _through_project_module(ctx) -> str:
    """```dgl` (through `rfdiffusion.util_module`)`` when a module of the project that this one imports
    at its top imports such a library at its own (RFdiffusion's ``model_runners``, whose sampler runs
    the DGL graphs ``util_module`` builds), or ``""``."""
    for path, module in top_import_files(ctx):
        library = _library_imported_by(path)
        if library:
            return f"`{library}` (through `{module}`)"
    return ""


_TOP_IMPORT = re.compile(rb"^(?:import|from)\s+([A-Za-z_][\w.]*)", re.MULTILINE)


@per_file_version(missing="")
def _library_imported_by(path: str) -> str:
    """The CPU-and-CUDA-only library the module at ``path`` imports at its top level, or ``""``."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES)
    except OSError:
        return ""
    return next((name for m in _TOP_IMPORT.finditer(data)
                 for name in [m.group(1).decode("ascii", "replace")] if cpu_cuda_library(name)), "")


def own_extension(path: str) -> str:
    """How the project around ``path`` builds its C++/CUDA operators (for the note), or ``""``."""
    root = project_root(path) if path else None
    if not root:
        return ""
    # an installed subproject's operators are those of the part of the project that imports it
    # (sam-hq's SAM 2 copy builds its own; its train/ scripts never reach them)
    top = _top_folder(path, os.path.abspath(root))
    return _built_by(root) or next((note for note, users in _installed_subprojects(root) if top in users), "")
