"""A project that builds its own C++/CUDA operators keeps its CUDA availability tests.

pytorch3d's ``_C`` (and detectron2's) has a CPU and a CUDA kernel for each operator and nothing
else: a ``neuron`` tensor reaching one raises. Its scripts and notebooks pick the CPU when CUDA is
missing, which is the path that works on Trainium; rewritten to ``torch.accelerator``, they sent
neuron tensors into the rasterizer (held-out pytorch3d, read by reviewers).
"""

from __future__ import annotations

from neuron_lint.api import check_source
from neuron_lint.config.settings import Settings
from neuron_lint.fixes.apply import fix_text

SCRIPT = (
    "import torch\n\n\n"
    "def main():\n"
    "    if torch.cuda.is_available():\n"
    "        device = torch.device(\"cuda:0\")\n"
    "    else:\n"
    "        device = torch.device(\"cpu\")\n"
    "    return torch.zeros(2).cuda(), device\n"
)
SETTINGS = Settings(select=("NRN2",))
SETUP = "from setuptools import setup\nfrom torch.utils.cpp_extension import {kind}\n\nsetup(name='p')\n"


def _project(tmp_path, setup: str | None):
    if setup is not None:
        (tmp_path / "setup.py").write_text(setup)
    else:
        (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "scripts").mkdir()
    script = tmp_path / "scripts" / "render.py"
    script.write_text(SCRIPT)
    return str(script)


def test_a_project_with_its_own_operators_keeps_its_availability_tests(tmp_path):
    path = _project(tmp_path, SETUP.format(kind="CUDAExtension, CppExtension"))
    fixed = fix_text(SCRIPT, path, SETTINGS).text
    assert "    if torch.cuda.is_available():\n        device" in fixed
    # the kept test places the device on the CPU on Trainium: the function's other moves stay with it
    # (moved to the accelerator, they met the CPU device there: fairseq's LM in OFA, read set 65)
    assert "torch.zeros(2).cuda()" in fixed
    notes = {f.line: f.fix_note for f in check_source(SCRIPT, path, SETTINGS)}
    assert "builds its own C++/CUDA operators (`CUDAExtension` in setup.py)" in notes[5]
    assert "on Trainium what it places stays on the CPU" in notes[9]


def test_a_project_without_them_gets_the_test_rewritten(tmp_path):
    for setup in (None, "from setuptools import setup\n\nsetup(name='p')\n"):
        sub = tmp_path / ("a" if setup is None else "b")
        sub.mkdir()
        path = _project(sub, setup)
        fixed = fix_text(SCRIPT, path, SETTINGS).text
        assert "    if torch.accelerator.is_available():\n        device" in fixed


JIT_OP = (
    "import os\n\nfrom torch.utils.cpp_extension import load\n\n"
    "module_path = os.path.dirname(__file__)\n"
    "op = load(\n    'upfirdn2d',\n"
    "    sources=[os.path.join(module_path, 'upfirdn2d.cpp'), os.path.join(module_path, 'upfirdn2d_kernel.cu')],\n)\n"
)


def test_a_project_compiling_cuda_sources_at_import_keeps_its_availability_tests(tmp_path):
    """score_sde_pytorch and rosinality's stylegan2 build ``op/`` with ``cpp_extension.load`` when it is
    imported; their operators take the native path for CPU tensors only, so the CPU that a CUDA
    availability test picks without CUDA is what works on Trainium."""
    path = _project(tmp_path, None)
    (tmp_path / "op").mkdir()
    (tmp_path / "op" / "upfirdn2d.py").write_text(JIT_OP)
    fixed = fix_text(SCRIPT, path, SETTINGS).text
    assert "    if torch.cuda.is_available():\n        device" in fixed
    notes = {f.line: f.fix_note for f in check_source(SCRIPT, path, SETTINGS)}
    assert "(`upfirdn2d_kernel.cu` compiled by `cpp_extension` in op/upfirdn2d.py)" in notes[5]


def test_cpp_sources_alone_or_cuda_sources_without_a_build_do_not_count(tmp_path):
    # ... nor a vendored library's own setup.py below the root (jukebox's copy of apex)
    vendored = ("from torch.utils.cpp_extension import CUDAExtension\n"
                "ext = CUDAExtension('amp_C', sources=['csrc/multi_tensor_scale_kernel.cu'])\n")
    for name, text, where in (("cpp", JIT_OP.replace("_kernel.cu", ".cc"), "ops.py"),
                              ("listed", "KERNELS = ['upfirdn2d_kernel.cu']\n", "ops.py"),
                              ("vendored", vendored, "apex/setup.py")):
        sub = tmp_path / name
        sub.mkdir()
        path = _project(sub, None)
        (sub / where).parent.mkdir(parents=True, exist_ok=True)
        (sub / where).write_text(text)
        assert "    if torch.accelerator.is_available():\n        device" in fix_text(SCRIPT, path, SETTINGS).text


def test_a_module_importing_a_library_of_cpu_and_cuda_operators_keeps_its_availability_tests(tmp_path):
    """dlrm's TorchRec trainer picks CUDA and NCCL when CUDA is there, else the CPU and gloo; TorchRec
    knows only cpu/cuda/mtia compute devices, so the CPU path is the one that works on Trainium."""
    path = _project(tmp_path, None)
    for library, kept in (("from torchrec.distributed.planner import Topology\n", True),
                          ("import torch_scatter\n", True), ("import torchvision\n", False)):
        source = SCRIPT.replace("import torch\n", "import torch\n" + library, 1)
        fixed = fix_text(source, path, SETTINGS).text
        assert ("    if torch.cuda.is_available():\n        device" in fixed) == kept, (library, fixed)



def test_a_module_importing_a_project_module_built_on_such_a_library_keeps_its_availability_tests(tmp_path):
    """RFdiffusion's sampler (read set 87) picks CUDA or the CPU, and runs the model whose
    ``util_module`` builds DGL graphs (CPU and CUDA only): on Trainium the CPU path is the one
    that works. One import away counts; a project module importing neither does not."""
    path = _project(tmp_path, None)
    (tmp_path / "scripts" / "graphs.py").write_text("import torch\nimport dgl\n")
    (tmp_path / "scripts" / "plain.py").write_text("import torch\n")
    for imported, kept in (("from graphs import build\n", True), ("from plain import build\n", False)):
        source = SCRIPT.replace("import torch\n", "import torch\n" + imported, 1)
        fixed = fix_text(source, path, SETTINGS).text
        assert ("    if torch.cuda.is_available():\n        device" in fixed) == kept, (imported, fixed)
    (left,) = [f for f in check_source(SCRIPT.replace("import torch\n", "import torch\nfrom graphs import build\n", 1),
                                       path, SETTINGS) if f.message.startswith("`torch.cuda.is_available`")]
    assert "`dgl` (through `graphs`)" in left.fix_note, left.fix_note


WRAPPER = (
    "import torch\n"
    "from torch.autograd import Function\n\n"
    "try:\n    import _freqencoder as _backend\nexcept ImportError:\n    from .backend import _backend\n\n\n"
    "class _FreqEncoder(Function):\n"
    "    @staticmethod\n"
    "    def forward(ctx, inputs, degree):\n"
    "        if not inputs.is_cuda:\n            inputs = inputs.cuda()\n"
    "        outputs = torch.empty_like(inputs)\n"
    "        _backend.freq_encode_forward(inputs, degree, outputs)\n"
    "        return outputs\n"
)


def test_the_glue_of_the_projects_own_kernels_keeps_its_cuda_code(tmp_path):
    """stable-dreamfusion's ``freqencoder/freq.py`` moves its inputs with ``.cuda()`` right before the
    kernel its ``backend.py`` compiles; rewritten, a CPU tensor went to the neuron device and into the
    CUDA kernel (raymarching's kernels do not even check). A module importing nothing compiled
    keeps its rewrite."""
    _project(tmp_path, None)
    package = tmp_path / "freqencoder"
    package.mkdir()
    (package / "__init__.py").write_text("from .freq import _FreqEncoder\n")
    (package / "backend.py").write_text(JIT_OP.replace("upfirdn2d_kernel.cu", "freqencoder.cu"))
    path = str(package / "freq.py")
    fixed = fix_text(WRAPPER, path, SETTINGS).text
    assert "inputs = inputs.cuda()" in fixed
    notes = [f.fix_note for f in check_source(WRAPPER, path, SETTINGS) if f.code == "NRN201"]
    assert notes and "own compiled CUDA operators (`freqencoder.cu`, compiled by freqencoder/backend.py)" in notes[0]
    # the same module without the compiled backend is ordinary code
    other = tmp_path / "plain"
    other.mkdir()
    plain = WRAPPER.replace("from .backend import _backend", "from .native import _backend")
    assert "inputs = inputs.to(_current_device())" in fix_text(plain, str(other / "freq.py"), SETTINGS).text


def test_a_script_importing_the_compiling_module_from_its_own_folder_keeps_its_cuda_code(tmp_path):
    """RWKV-v2-RNN/train.py (held out) runs from its folder and does ``from src.model import GPT``,
    whose import compiles ``cuda/timex_cuda.cu``; ``.cuda()`` there feeds the model the kernel runs
    on, so moving it to the neuron device would send neuron tensors into the CUDA kernel."""
    _project(tmp_path, None)
    folder = tmp_path / "RWKV-v2-RNN"
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "model.py").write_text(JIT_OP.replace("upfirdn2d_kernel.cu", "timex_cuda.cu"))
    train = "import torch\nfrom src.model import GPT\n\nmodel = GPT().cuda()\n"
    assert "GPT().cuda()" in fix_text(train, str(folder / "train.py"), SETTINGS).text
    # another version's train.py, whose own src/model.py compiles nothing, is ordinary code
    (tmp_path / "RWKV-v1" / "src").mkdir(parents=True)
    (tmp_path / "RWKV-v1" / "src" / "model.py").write_text("import torch\n")
    assert "GPT().to(DEVICE)" in fix_text(train, str(tmp_path / "RWKV-v1" / "train.py"), SETTINGS).text



def test_a_test_of_the_kernels_package_keeps_its_cuda_code(tmp_path):
    """torch-ngp's testing/test_hashencoder.py (held out, set 31): ``from gridencoder import
    GridEncoder``, a package whose backend.py compiles the CUDA kernel, then ``GridEncoder(...).cuda()``
    and inputs moved with ``.cuda()``: a test of the kernel itself, which rewritten sent neuron
    tensors into it. A script outside test folders importing the same package is left to the other
    rules (its model code is not the kernels' glue)."""
    _project(tmp_path, None)
    package = tmp_path / "gridencoder"
    package.mkdir()
    (package / "__init__.py").write_text("from .grid import GridEncoder\n")
    (package / "grid.py").write_text("import torch\n\n\nclass GridEncoder(torch.nn.Module):\n    pass\n")
    (package / "backend.py").write_text(JIT_OP.replace("upfirdn2d_kernel.cu", "gridencoder.cu"))
    (tmp_path / "testing").mkdir()
    test = "import torch\nfrom gridencoder import GridEncoder\n\nenc = GridEncoder().cuda()\nx = torch.rand(4, 3).cuda()\n"
    fixed = fix_text(test, str(tmp_path / "testing" / "test_hashencoder.py"), SETTINGS).text
    assert "enc = GridEncoder().cuda()" in fixed and "x = torch.rand(4, 3).cuda()" in fixed
    notes = [f.fix_note for f in check_source(test, str(tmp_path / "testing" / "test_hashencoder.py"), SETTINGS)]
    assert notes and "(`gridencoder.cu`, compiled by gridencoder/backend.py, beside the tested module)" in notes[0]
    (tmp_path / "scripts").mkdir(exist_ok=True)
    assert "GridEncoder().to(DEVICE)" in fix_text(test, str(tmp_path / "scripts" / "run.py"), SETTINGS).text


EXT_SETUP = (
    "from setuptools import setup\nfrom torch.utils.cpp_extension import BuildExtension, CUDAExtension\n\n"
    "setup(name='{name}', ext_modules=[CUDAExtension('{name}', ['k.cu'])], cmdclass={{'build_ext': BuildExtension}})\n"
)


def test_modules_around_an_extension_built_by_name_keep_their_cuda(tmp_path):
    """Swin's kernels/window_process (held-out set 23) and Mask2Former's pixel_decoder/ops (set 22): a
    setup.py builds a top-level extension module; the module importing it, its test, and a script
    importing from that module feed its CUDA kernel (its CPU kernel, where there is one, only raises)."""
    ops = tmp_path / "ops"
    (ops / "functions").mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (ops / "setup.py").write_text(EXT_SETUP.format(name="DeformAttn"))
    (ops / "functions" / "__init__.py").write_text("")
    wrapper = "import torch\nimport DeformAttn as DA\n\n\ndef run(x):\n    return DA.forward(x.cuda())\n"
    (ops / "functions" / "attn_func.py").write_text(wrapper)
    script = "import torch\nfrom functions.attn_func import run\n\nvalue = torch.rand(2).cuda()\nprint(run(value))\n"
    (ops / "test.py").write_text(script)
    unit = "import torch\nimport DeformAttn\n\nx = torch.rand(2).cuda()\n"
    (ops / "unit_test.py").write_text(unit)
    settings = Settings(select=("NRN2",), unsafe_fixes=True)
    for name, text in (("functions/attn_func.py", wrapper), ("test.py", script), ("unit_test.py", unit)):
        path = str(ops / name)
        assert fix_text(text, path, settings).text == text, name
        notes = [f.fix_note for f in check_source(text, path, settings)]
        assert notes and all("`DeformAttn`" in n for n in notes), (name, notes)
    # a module elsewhere in the project that only imports the package around it is rewritten
    other = "import torch\n\nx = torch.rand(2).cuda()\n"
    (tmp_path / "train.py").write_text(other)
    assert ".to(DEVICE)" in fix_text(other, str(tmp_path / "train.py"), settings).text


def _installed_subproject(root, folder: str, package: str, importer: str):
    """A repository (``root``) with ``folder/setup.py`` building ``package``'s CUDA operators, and
    ``importer`` (a path below ``root``) importing the package: the subproject's folder."""
    (root / ".git").mkdir()
    sub = root / folder
    (sub / package).mkdir(parents=True)
    (sub / "setup.py").write_text(EXT_SETUP.format(name=f"{package}._C"))
    (sub / package / "__init__.py").write_text("")
    (root / importer).parent.mkdir(parents=True, exist_ok=True)
    (root / importer).write_text(f"from {package} import Something\n")
    return sub


def test_a_subproject_the_project_installs_keeps_the_device_choice_and_rank_maps_are_rewritten(tmp_path):
    """stable-fast-3d (set 22): texture_baker/setup.py builds operators with CPU, CUDA and MPS kernels,
    and sf3d imports the package. `get_device()` keeps its CUDA test and the "cuda" it picks; a rank
    taken modulo the device count (GLIP's SLURM setup) decides no path and is rewritten."""
    baker = _installed_subproject(tmp_path, "texture_baker", "texture_baker", "sf3d/system.py")
    utils = (
        "import torch\n\n\ndef get_device():\n    device = 'cpu'\n    if torch.cuda.is_available():\n"
        "        device = 'cuda'\n    return device\n\n\n"
        "def local_gpu(rank):\n    return rank % torch.cuda.device_count()\n\n\n"
        "def init_dist(rank):\n    num_gpus = torch.cuda.device_count()\n    return rank % num_gpus\n"
    )
    path = str(tmp_path / "sf3d" / "utils.py")
    fixed = fix_text(utils, path, Settings(select=("NRN2",), unsafe_fixes=True)).text
    assert "    if torch.cuda.is_available():\n        device = 'cuda'\n" in fixed
    assert "return rank % torch.accelerator.device_count()" in fixed
    assert "    num_gpus = torch.accelerator.device_count()\n" in fixed  # each use divides (Restormer, set 26)
    notes = [f.fix_note for f in check_source(utils, path, SETTINGS)]
    assert any("`BuildExtension` in texture_baker/setup.py" in n for n in notes)
    # a vendored CUDA-only library (jukebox's copy of apex) is not the project's own operators
    (baker / "texture_baker").rename(baker / "apex")
    (tmp_path / "sf3d" / "system.py").write_text("from apex import amp\n")
    from neuron_lint.fixes import own_extension

    own_extension._built_by.cache_clear()
    own_extension._installed_subprojects.cache_clear()
    fixed = fix_text(utils, path, Settings(select=("NRN2",), unsafe_fixes=True)).text
    assert "if torch.accelerator.is_available():" in fixed


def test_extensions_of_a_vendored_cuda_library_are_not_the_projects_kernels(tmp_path):
    """jukebox keeps a copy of apex (apex/setup.py builds `syncbn`, `apex_C`...): its kernels are
    NRN6xx's, not the project's own, and its examples stay as rewritable as before (31 sites were lost)."""
    (tmp_path / ".git").mkdir()
    apex = tmp_path / "apex"
    (apex / "apex" / "parallel").mkdir(parents=True)
    (apex / "examples").mkdir()
    (apex / "setup.py").write_text(EXT_SETUP.format(name="syncbn"))
    (apex / "apex" / "__init__.py").write_text("")
    (apex / "apex" / "parallel" / "__init__.py").write_text("import syncbn\n")
    train = ("import torch\n\ntry:\n    from apex.parallel import SyncBatchNorm\nexcept ImportError:\n"
             "    SyncBatchNorm = None\n\nx = torch.rand(2).cuda()\n")
    (apex / "examples" / "main_amp.py").write_text(train)
    assert ".to(DEVICE)" in fix_text(train, str(apex / "examples" / "main_amp.py"), SETTINGS).text


TRAIN = (
    "import torch\n\n"
    "from synthesizer.utils import data_parallel_workaround\n\n\n"
    "def train(model, batch_size, x):\n"
    "    if batch_size % torch.cuda.device_count() != 0:\n"
    "        raise ValueError('`batch_size` must be evenly divisible by n_gpus!')\n"
    "    if torch.cuda.device_count() > 1:\n"
    "        return data_parallel_workaround(model, x)\n"
    "    return model(x)\n"
)
WORKAROUND = (
    "import torch\n\n\n"
    "def data_parallel_workaround(model, *input):\n"
    "    device_ids = list(range(torch.cuda.device_count()))\n"
    "    replicas = torch.nn.parallel.replicate(model, device_ids)\n"
    "    inputs = torch.nn.parallel.scatter(input, device_ids)\n"
    "    return torch.nn.parallel.gather(torch.nn.parallel.parallel_apply(replicas, inputs), device_ids[0])\n"
)


def test_gpus_counted_for_the_projects_own_data_parallel_stay_cuda(tmp_path):
    """Real-Time-Voice-Cloning (set 28): `data_parallel_workaround` replicates over CUDA devices only;
    its batch-size check, rewritten, raised on Trainium when the NeuronCores did not divide the batch."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "synthesizer" / "utils").mkdir(parents=True)
    (tmp_path / "synthesizer" / "__init__.py").write_text("")
    (tmp_path / "synthesizer" / "utils" / "__init__.py").write_text(WORKAROUND)
    path = str(tmp_path / "synthesizer" / "train.py")
    assert fix_text(TRAIN, path, SETTINGS).text == TRAIN
    notes = [f.fix_note for f in check_source(TRAIN, path, SETTINGS)]
    assert any("wraps models in `data_parallel_workaround`" in n for n in notes), notes
    # a function of the same name that does not replicate is no reason to keep the count
    (tmp_path / "synthesizer" / "utils" / "__init__.py").write_text(
        "def data_parallel_workaround(model, *input):\n    return model(*input)  # one device\n")
    assert "torch.accelerator.device_count()" in fix_text(TRAIN, path, SETTINGS).text


FFI_BUILD = (
    "import torch\nfrom torch.utils.ffi import create_extension\n\n"
    "with_cuda = False\nif torch.cuda.is_available():\n    with_cuda = True\n"
    "ffi = create_extension('_ext.nms', headers=[], sources=[], with_cuda=with_cuda)\n"
)


def test_extensions_built_with_torch_utils_ffi_are_the_projects_own_operators(tmp_path):
    """faster-rcnn.pytorch and CenterNet's DCNv2 (set 35) build their kernels with PyTorch 0.4's
    ``torch.utils.ffi`` from a ``build.py``: ``nms_wrapper.py`` imported the CUDA kernel's module under a
    rewritten availability test, and DCNv2's ``test.py`` (two imports away from ``_ext``) sent neuron
    tensors into the CUDA kernel; a module of the package that does not reach ``_ext`` keeps its fix."""
    _project(tmp_path, None)
    nms = tmp_path / "lib" / "model" / "nms"
    nms.mkdir(parents=True)
    (nms / "build.py").write_text(FFI_BUILD)
    (nms / "nms_gpu.py").write_text("import torch\nfrom ._ext import nms\n\n\ndef nms_gpu(dets):\n    return nms.run(dets)\n")
    (nms / "nms_layer.py").write_text("from .nms_gpu import nms_gpu\n")
    wrapper = "import torch\n\nif torch.cuda.is_available():\n    from .nms_gpu import nms_gpu\n"
    assert fix_text(wrapper, str(nms / "nms_wrapper.py"), SETTINGS).text == wrapper
    test = "import torch\nfrom nms_layer import nms_gpu\n\nprint(nms_gpu(torch.zeros(4).cuda()))\n"
    assert fix_text(test, str(nms / "test.py"), SETTINGS).text == test
    notes = [f.fix_note for f in check_source(test, str(nms / "test.py"), SETTINGS) if f.code == "NRN201"]
    assert notes and "(the extension `_ext.nms` (`torch.utils.ffi`)" in notes[0]
    # the project's other scripts keep their availability tests (the CPU path works on Trainium)
    notes = {f.line: f.fix_note for f in check_source(SCRIPT, str(tmp_path / "scripts" / "render.py"), SETTINGS)}
    assert "(`_ext.nms` built by `torch.utils.ffi` in lib/model/nms/build.py)" in notes[5]
    plain = "import torch\n\nx = torch.zeros(4).cuda()\n"
    assert ".to(DEVICE)" in fix_text(plain, str(nms / "nms_cpu.py"), SETTINGS).text


def test_an_installed_subprojects_operators_are_those_of_the_folder_importing_it(tmp_path):
    """sam-hq (set 40): its SAM 2 copy (sam-hq2/setup.py) builds CUDA operators, imported only by a
    seginw/ script; train/train.py never reaches them. Its guards used to stay for those operators
    while the `--device` default moved to the accelerator: on Trainium the model went to `neuron` and
    the batches stayed on the CPU."""
    _installed_subproject(tmp_path, "sam-hq2", "sam2", "seginw/eval_sam2.py")
    (tmp_path / "train").mkdir()
    loop = ("import torch\n\n\ndef step(x):\n    if torch.cuda.is_available():\n        x = x.cuda()\n    return x\n\n\n"
            "if __name__ == \"__main__\":\n    step(torch.rand(2))\n")
    train, seginw = tmp_path / "train" / "train.py", tmp_path / "seginw" / "run.py"
    fixed = fix_text(loop, str(train), SETTINGS).text
    assert "    if torch.accelerator.is_available():\n        x = x.to(DEVICE)\n" in fixed, fixed
    kept = fix_text(loop, str(seginw), SETTINGS).text
    assert "if torch.cuda.is_available():" in kept, kept
    notes = [f.fix_note for f in check_source(loop, str(seginw), SETTINGS)]
    assert any("sam-hq2/setup.py" in n for n in notes), notes


SELECT_DEVICE = '''
import os

import torch


def select_device(device=""):
    device = str(device).lower().replace("cuda:", "")
    if device in ("", "cpu", "mps"):
        return torch.device(device or "cpu")
    os.environ["CUDA_VISIBLE_DEVICES"] = device
    if not torch.cuda.is_available():
        raise ValueError(f"Invalid CUDA 'device={device}' requested.")
    return torch.device("cuda:0")
'''


def test_a_package_choosing_its_device_with_a_cuda_only_select_device_keeps_its_cuda_code(tmp_path):
    """MobileSAM's and FastSAM's copies of ultralytics (sets 38, 40): `select_device` raises for
    `neuron`, so on Trainium the package runs on the CPU; its trainer's world size from
    `torch.cuda.device_count()` became the NeuronCore count and launched DDP there."""
    (tmp_path / ".git").mkdir()
    package = tmp_path / "vendor" / "ultralytics"
    (package / "utils").mkdir(parents=True)
    (package / "engine").mkdir()
    for folder in (package, package / "utils", package / "engine"):
        (folder / "__init__.py").write_text("")
    (package / "utils" / "torch_utils.py").write_text(SELECT_DEVICE)
    trainer = "import torch\n\n\ndef world_size(device):\n    return torch.cuda.device_count() if device else 0\n"
    path = str(package / "engine" / "trainer.py")
    assert fix_text(trainer, path, Settings(select=("NRN2",), unsafe_fixes=True)).text == trainer
    notes = [f.fix_note for f in check_source(trainer, path, SETTINGS)]
    assert any("`select_device` (vendor/ultralytics/utils/torch_utils.py:7)" in n for n in notes), notes
    # a script outside the package is the project's own and moves
    assert "torch.accelerator.device_count()" in fix_text(trainer, str(tmp_path / "vendor" / "run.py"), SETTINGS).text
    # once `select_device` knows the accelerator, the package is ported like any other code
    from neuron_lint.fixes import vendored_device

    (package / "utils" / "torch_utils.py").write_text(SELECT_DEVICE.replace(
        'if device in ("", "cpu", "mps"):', 'if device == "neuron":\n        return torch.device("neuron")\n'
        '    if device in ("", "cpu", "mps"):'))
    from neuron_lint.fixes.project_scan import forget_project_reads

    forget_project_reads()
    assert "torch.accelerator.device_count()" in fix_text(trainer, path, SETTINGS).text



RENDERER = '''import torch
from diff_rast import Rasterizer


def render(points):
    screen = torch.zeros_like(points, requires_grad=True, device="cuda")
    return Rasterizer()(points, screen)
'''


def _cuda_only_package(tmp_path, builds: str):
    from conftest import write_project

    setup = ("from setuptools import setup\nfrom torch.utils.cpp_extension import " + builds
             + "\n\nsetup(name='diff_rast', ext_modules=[" + builds.split(",")[0] + "('diff_rast._C', ['r.cu'])])\n")
    return write_project(tmp_path, {"submodules/diff-rast/setup.py": setup,
                                    "submodules/diff-rast/diff_rast/__init__.py": "from ._C import Rasterizer\n",
                                    "renderer.py": RENDERER}) / "renderer.py"


def test_what_imports_from_a_package_the_project_builds_for_cuda_alone_keeps_its_placements(tmp_path):
    # mip-splatting's render(): its screen-space points go only into diff_gaussian_rasterization, a
    # package its own setup.py builds with CUDAExtension alone (read set 116)
    renderer = _cuda_only_package(tmp_path, "CUDAExtension, BuildExtension")
    [finding] = check_source(RENDERER, str(renderer), Settings(select=("NRN202",)))
    assert finding.fix is None and "a package the project builds for CUDA alone" in finding.fix_note


def test_a_package_with_a_cpu_build_too_is_no_cuda_only_package(tmp_path):
    renderer = _cuda_only_package(tmp_path, "CppExtension, CUDAExtension")
    [finding] = check_source(RENDERER, str(renderer), Settings(select=("NRN202",)))
    assert "a package the project builds for CUDA alone" not in (finding.fix_note or "")
