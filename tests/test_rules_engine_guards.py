"""Engine behaviour the NRN1xx/3xx-6xx rules rely on: import guards, list values, value-only matchers."""

import pytest

from neuron_lint.api import check_source
from neuron_lint.config.settings import Settings

ALL = Settings(extend_select=("NRN",))


def codes(src: str) -> list[str]:
    return [f.code for f in check_source(src, "t.py", ALL)]


@pytest.mark.parametrize(
    "src",
    [
        # typing-only imports never run
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch_xla\n",
        "import typing\nif typing.TYPE_CHECKING:\n    from torchao.float8 import Float8LinearConfig\n",
        # optional-package checks, in the forms real libraries write them
        "if is_torch_xla_available():\n    import torch_xla.core.xla_model as xm\n",
        "if is_bnb_available() and not is_adamw:\n    import bitsandbytes.optim as bnb_opt\n",
        "if not is_triton_available():\n    pass\nelse:\n    import triton\n",
        "import importlib.util\nif importlib.util.find_spec('cupy') is not None:\n    import cupy\n",
        "if _TRITON_AVAILABLE:\n    import triton\n",
        "if HAS_APEX:\n    from apex.optimizers import FusedAdam\n",
        # an early exit when the package is missing guards the rest of the block
        "def f():\n    if not is_te_available():\n        return False\n    import transformer_engine\n",
    ],
)
def test_imports_behind_an_availability_check_are_guarded(src):
    assert codes(src) == []


@pytest.mark.parametrize(
    "src,code",
    [
        # a device check is not a package check: the branch is still reported
        ("import torch\nif torch.cuda.is_available():\n    import pynvml\n", "NRN608"),
        # the else-branch of a positive check runs when the package is missing
        ("if is_bnb_available():\n    pass\nelse:\n    import triton\n", "NRN601"),
        # raising when the package is missing makes it a requirement, not an option
        ("if not is_pynvml_available():\n    raise ImportError('pip install nvidia-ml-py')\nimport pynvml\n", "NRN608"),
        # an early exit on an ordinary condition guards nothing
        ("def f(x):\n    if not x:\n        return\n    import triton\n", "NRN601"),
        # the guard ends with its block
        ("def f():\n    if True:\n        if not is_te_available():\n            return\n    import transformer_engine\n", "NRN610"),
        # an ordinary condition guards nothing
        ("if args.fp8:\n    import transformer_engine.pytorch as te\n", "NRN610"),
        # a guarded import still reports each kernel decorated with it
        ("try:\n    import triton\nexcept ImportError:\n    pass\n@triton.jit\ndef k(x):\n    pass\n", "NRN601"),
    ],
)
def test_unguarded_or_device_branches_are_reported(src, code):
    assert code in codes(src)


def test_string_values_look_into_list_literals():
    src = "from torch.utils.cpp_extension import load\nm = load('k', ['k.cpp', 'k_kernel.cu'])\n"
    (f,) = [f for f in check_source(src, "t.py", ALL) if f.code == "NRN602"]
    assert "k_kernel.cu" in f.message
    assert codes("from torch.utils.cpp_extension import load\nm = load('k', ['k.cpp'])\n") == []


def test_int64_literal_reported_once_per_call_at_the_value():
    src = "import torch\nseed = torch.randint(-2**63, 2**63 - 1, (1,), device=dev)\n"
    found = [f for f in check_source(src, "t.py", ALL) if f.code == "NRN304"]
    assert len(found) == 1
    assert (found[0].line, found[0].col) == (2, 22)


@pytest.mark.parametrize(
    "src",
    [
        "import torch\nx = torch.tensor([2**31 - 1, -2**31], device=d)\n",  # the int32 bounds themselves fit
        "import torch\nx = torch.randint(0, 10, (2**40,), device=d)\n",  # a huge size is not an element value
        "import torch\nx = torch.tensor(n * 2**40, device=d)\n",  # not a constant: nothing evident
        "import torch\nx = torch.tensor(2**10**10, device=d)\n",  # not evaluated (too big to compute cheaply)
        "import torch\nx = torch.tensor(2**40)\n",  # a host tensor
    ],
)
def test_int64_silent_cases(src):
    assert "NRN304" not in codes(src)


def test_inductor_config_read_is_silent_write_is_reported():
    read = "import torch\nold = torch._inductor.config.max_autotune\n"
    write = "import torch\ntorch._inductor.config.max_autotune = old\n"
    assert "NRN405" not in codes(read)
    assert "NRN405" in codes(write)


def test_generate_needs_transformers_in_the_file():
    body = "out = model.generate(ids, max_new_tokens=8)\n"
    assert "NRN407" not in codes(body)
    assert "NRN407" in codes("from transformers import AutoModel\n" + body)
    # inside a function, a module import written below still counts (Python resolves it at call time)
    assert "NRN407" in codes("def f(model, ids):\n    return model." + body.split("model.", 1)[1] + "import transformers\n")


@pytest.mark.parametrize(
    "src",
    [
        "import torch\nSIZES = {torch.float64: 8, torch.complex64: 8}\n",
        "import torch\nd = torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32\n",
        "import torch\nx = torch.zeros(2, dtype=torch.float64, device='cpu')\n",
        "import torch\nx = torch.zeros(2, dtype=torch.complex64, device=torch.device('cpu'))\n",
        "import torch\nw = W.detach().to(torch.float64).cpu()\n",
        "v0, v1 = diff.cpu().double(), pred.detach().cpu().double()\n",
        "import torch\nw = W.cpu().to(torch.float64)\n",
        "import torch\nT = {'a': torch.float32, 'b': torch.float64}\n",
    ],
)
def test_dtypes_that_never_reach_the_device_are_silent(src):
    assert codes(src) == []


@pytest.mark.parametrize(
    "src",
    [
        "import torch\nx = torch.zeros(2, dtype=torch.float64, device=dev)\n",
        "import torch\nd = torch.float64 if args.fp64 else torch.float32\n",
        "import torch\nw = W.to(torch.float64).sum().cpu()\n",
        "import torch\ncfg = {'dtype': torch.float64, 'device': device}\n",  # a config, not a table
        "import torch\ncfg = {'dtype': torch.float64}\n",
        "import torch\nA = {'cpu': torch.profiler.ProfilerActivity.CPU, 'cuda': torch.profiler.ProfilerActivity.CUDA}\n",
        "w = W.double().cpu().sum()\n",  # the conversion happens on the device
        "import torch\nx = torch.zeros(2, dtype=torch.float64, device=torch.device('cuda'))\n",
    ],
)
def test_dtypes_that_may_reach_the_device_are_reported(src):
    assert {"NRN301", "NRN109"} & set(codes(src))


def _walk_file(path) -> list[str]:
    """Rule codes the analyzer reports for a file on disk (the analyzer knows where the file lives)."""
    import ast

    from neuron_lint.catalog.index import build_index
    from neuron_lint.catalog.loading import load_catalog
    from neuron_lint.catalog.registry import MATCHERS
    from neuron_lint.engine.analyzer import Analyzer

    catalog = load_catalog()
    index = build_index(catalog, ALL.enabled_codes(catalog))
    hits = Analyzer(index, MATCHERS, path=str(path)).run(ast.parse(path.read_text()))
    return sorted({h.rule.code for h in hits})


def test_a_projects_own_package_is_not_a_cuda_package(tmp_path):
    """`import mamba_ssm` inside the mamba repository is the project's code; real Triton is still found."""
    pkg = tmp_path / "mamba_ssm" / "ops" / "triton"
    pkg.mkdir(parents=True)
    for d in (tmp_path / "mamba_ssm", tmp_path / "mamba_ssm" / "ops", pkg):
        (d / "__init__.py").write_text("")
    kernel = pkg / "layer_norm.py"
    kernel.write_text("import triton\nfrom mamba_ssm.utils import x\n")
    bench = tmp_path / "benchmarks" / "bench.py"
    bench.parent.mkdir()
    bench.write_text("from mamba_ssm.models import MambaLMHeadModel\n")
    assert _walk_file(kernel) == ["NRN601"]  # the real triton; not mamba_ssm, not the ops/triton subpackage
    assert _walk_file(bench) == []
    # the same import in someone else's project is reported
    other = tmp_path.parent / (tmp_path.name + "_user") / "train.py"
    other.parent.mkdir()
    other.write_text("from mamba_ssm.models import MambaLMHeadModel\n")
    assert _walk_file(other) == ["NRN612"]


def test_one_import_finding_per_import_statement():
    # each import statement is a line that fails (issue 12); one `from x import a, b` is one finding
    src = "import triton\nimport triton.language as tl\nfrom triton import testing, jit\n"
    found = [f for f in check_source(src, "t.py", ALL) if f.code == "NRN601"]
    assert [f.line for f in found] == [1, 2, 3]
    # a guarded import is not reported
    src = "try:\n    import triton\nexcept ImportError:\n    pass\nimport triton.language as tl\n"
    assert [f.line for f in check_source(src, "t.py", ALL) if f.code == "NRN601"] == [5]
