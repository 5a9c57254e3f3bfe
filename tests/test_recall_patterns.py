"""Patterns a porting user must change that reach the API indirectly (issue 12), and their look-alikes.

Each case is a small program and the (line, code) findings it must produce; the held-out labelled
set in bench/recall/ measures the same patterns on real code nobody tuned on.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from neuron_lint.api import check_source
from neuron_lint.config.settings import Settings
from neuron_lint.manifests import check_manifest_text

ALL = Settings(extend_select=("NRN",))
ROOT = Path(__file__).resolve().parents[1]


def found(text):
    return {(f.line, f.code) for f in check_source(text.lstrip("\n"), "example.py", ALL)}


def test_every_import_of_a_kernel_package_is_reported():
    text = """
import triton
import triton.language as tl
"""
    assert {(1, "NRN601"), (2, "NRN601")} <= found(text)


def test_an_import_whose_handler_raises_is_not_optional():
    text = """
try:
    import triton
except ImportError:
    raise RuntimeError("this package needs Triton")
"""
    assert (2, "NRN601") in found(text)


def test_an_import_whose_handler_installs_and_imports_again_is_not_optional():
    text = """
try:
    import tensorrt as trt
except Exception:
    check_requirements("tensorrt")
    import tensorrt as trt
"""
    assert {(2, "NRN612"), (5, "NRN612")} <= found(text)


def test_an_import_with_a_fallback_stays_optional():
    text = """
try:
    import triton
except ImportError:
    triton = None
try:
    import xformers.ops as xops
except ImportError:
    from torch.nn.functional import scaled_dot_product_attention as sdpa
"""
    assert found(text) == set()


def test_names_after_a_try_are_what_its_body_imported_not_the_fallback():
    # ignite (set 49): the `except ImportError:` import serves a torch without `torch.amp`; the
    # annotations after the `try` use torch.amp's GradScaler, and were reported as CUDA AMP
    text = """
try:
    from torch.amp import GradScaler
except ImportError:
    from torch.cuda.amp import GradScaler


def step(scaler: GradScaler | None = None) -> GradScaler | None:
    return scaler
"""
    assert {line for line, code in found(text)} <= {4}
    # the other way round the CUDA import is what the code uses
    assert (7, "NRN205") in found(text.replace("torch.amp", "torch.TMP").replace("torch.cuda.amp", "torch.amp")
                                  .replace("torch.TMP", "torch.cuda.amp"))


@pytest.mark.parametrize("line", [
    "from torch.distributions import Categorical",
    "from torch.func import vmap",
    "import torch.backends.cudnn as cudnn",
    "from torch.fft import fftn",
])
def test_imports_of_unsupported_modules_are_reported(line):
    assert any(ln == 1 for ln, _ in found(line + "\n"))


@pytest.mark.parametrize("text, code", [
    ("import torch\ntorch.cuda.memory_snapshot()\n", "NRN212"),
    ("import torch\ntorch.cuda.memory._dump_snapshot('x.pickle')\n", "NRN212"),
    ("import torch\ndef f():\n    return torch.cuda\n", "NRN212"),
    ("import torch\nm = getattr(torch, device_type, torch.cuda)\n", "NRN212"),
    ("import torch\nd = torch.get_autocast_gpu_dtype()\n", "NRN212"),
    ("import torch\nd = torch.get_autocast_dtype('cuda')\n", "NRN212"),
])
def test_every_torch_cuda_reference_is_reported(text, code):
    assert code in {c for _, c in found(text)}


def test_specific_torch_cuda_rules_win_over_the_general_one():
    codes = {c for _, c in found("import torch\ntorch.cuda.synchronize()\n")}
    assert "NRN203" in codes and "NRN212" not in codes


@pytest.mark.parametrize("text, line", [
    ("import torch.distributed as dist\nbackend = 'nccl'\ndist.init_process_group(backend=backend)\n", 2),
    ("import torch\ndef f(args):\n    args.dist_backend = 'nccl'\n    torch.distributed.init_process_group(backend=args.dist_backend)\n", 3),
    ("import torch\nloc = f'cuda:{gpu}'\nckpt = torch.load(p, map_location=loc)\n", 2),
    ("import torch\narg = 'cuda:0'\nd = torch.device(arg)\n", 2),
    ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--device', default='cuda')\n", 3),
    ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--dist_backend', default='nccl')\n", 3),
    ("import torch\nx = torch.device(getattr(args, 'device', 'cuda'))\n", 2),
    ("import torch\ndevice = _get_available_device_type() or 'cuda'\n", 2),
    ("backends = {'cuda': 'nccl', 'cpu': 'gloo'}\n", 1),
    ("import torch.distributed as dist\ndist.init_process_group('NCCL')\n", 2),
])
def test_cuda_strings_that_reach_a_device_or_backend_indirectly(text, line):
    assert line in {ln for ln, _ in found(text)}


@pytest.mark.parametrize("text", [
    "import torch\ncuda_available = torch.accelerator.is_available()\nprint(f'cuda: {cuda_available}')\n",
    "name = 'cuda'\nprint(name)\n",
    "import argparse\np = argparse.ArgumentParser()\np.add_argument('--device', default='', help='cuda device, i.e. 0 or cpu')\n",
    "x = 'nccl'\nlog(x)\n",
    "import torch\nx = torch.zeros(3, dtype=torch.float32)  # not float64\n",
    "import torch\ndef f(device):\n    return torch.ones(2, device=device)\n",
    '"""Runs on cuda or cpu; uses float64 only on the host."""\n',
    "import os\nos.environ['PYTHONHASHSEED'] = '0'\n",
    "from utils.triton import TritonRemoteModel\n",
    "import re\nPAT = re.compile('cuda')\n",
])
def test_look_alikes_are_not_reported(text):
    assert found(text) == set()


@pytest.mark.parametrize("text", [
    "import os\nos.environ['CUBLAS_WORKSPACE_CONFIG'] = ':4096:8'\n",
    "import os\nos.environ.get('TORCH_CUDA_ARCH_LIST')\n",
    "ENV_ASYNC = 'TORCH_NCCL_ASYNC_ERROR_HANDLING'\n",
    "import os\nx = os.getenv('CUDNN_LOGINFO_DBG')\n",
])
def test_cuda_stack_environment_variables(text):
    assert "NRN207" in {c for _, c in found(text)}


def test_cuda_variable_names_do_not_get_two_findings():
    lines = [ln for ln, c in found("import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n") if c == "NRN207"]
    assert lines == [2]


@pytest.mark.parametrize("text, code", [
    ("import torch\ny = torch.view_as_real(xq_ * freqs_cis)\n", "NRN303"),
    ("import torch\ns = torch.stft(a, 400, return_complex=True)\n", "NRN303"),
    ("import torch\nm = torch.compile(model, mode=args.mode, backend=args.backend)\n", "NRN408"),
    ("from accelerate.utils import compile_regions\nm = compile_regions(model, mode='reduce-overhead')\n", "NRN408"),
    ("import importlib\nm = importlib.import_module('fused_adam_cuda')\n", "NRN602"),
    ("import megablocks\n", "NRN612"),
])
def test_more_patterns(text, code):
    assert code in {c for _, c in found(text)}


def test_project_cuda_extension_module(tmp_path):
    (tmp_path / "setup.py").write_text(
        "from torch.utils.cpp_extension import CUDAExtension\n"
        "ext = CUDAExtension('pkg._C', ['csrc/k.cu'])\n"
    )
    (tmp_path / "pkg").mkdir()
    source = tmp_path / "pkg" / "ops.py"
    source.write_text("from pkg import _C\n")
    out = subprocess.run(
        [sys.executable, "-m", "neuron_lint", "check", "--no-cache", "--output-format", "json", "--exit-zero",
         "--select", "NRN602", str(source)], capture_output=True, text=True, cwd=tmp_path,
    )
    assert [f["code"] for f in json.loads(out.stdout)] == ["NRN602"]
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(name='pkg')\n")
    source.write_text("from pkg import _C  # a CPU extension\n")
    out = subprocess.run(
        [sys.executable, "-m", "neuron_lint", "check", "--no-cache", "--output-format", "json", "--exit-zero",
         "--select", "NRN602", str(source.parent)], capture_output=True, text=True, cwd=tmp_path / "pkg",
    )
    assert json.loads(out.stdout) == []


def test_a_wheel_url_under_a_cuda_index_is_one_finding():
    text = "xformers @ https://download.pytorch.org/whl/cu121/xformers-0.0.22.post7-cp310-cp310-manylinux2014_x86_64.whl\n"
    codes = [f.code for f in check_manifest_text(text, "requirements", "requirements.txt", ALL)]
    assert codes == ["NRN680"]
    index_only = "--extra-index-url https://download.pytorch.org/whl/cu121\n"
    assert [f.code for f in check_manifest_text(index_only, "requirements", "requirements.txt", ALL)] == ["NRN686"]


def test_the_general_torch_cuda_finding_leaves_a_switched_off_rule_alone():
    settings = Settings(extend_select=("NRN",), ignore=("NRN203",))
    found = {f.code for f in check_source("import torch\nok = torch.cuda.is_available()\n", "x.py", settings)}
    assert found == set()
