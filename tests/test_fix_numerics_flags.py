"""What a user notices of the NRN208/NRN209/NRN301/NRN401/NRN403 fixes: the traps they stay out of,
and that the rewritten code runs (and means the same) on the CPU torch of the test environment."""

import ast
import textwrap
import warnings

import pytest

from neuron_lint.api import check_source
from neuron_lint.config.settings import Settings
from neuron_lint.fixes.apply import fix_text

torch = pytest.importorskip("torch")


def _fix(src: str, *codes: str, path: str = "example.py", unsafe: bool = True) -> str:
    return fix_text(textwrap.dedent(src), path, Settings(select=codes, unsafe_fixes=unsafe)).text


def _notes(src: str, code: str, path: str = "example.py") -> list[str]:
    return [f.fix_note for f in check_source(textwrap.dedent(src), path, Settings(select=(code,), unsafe_fixes=True))
            if f.code == code]


def _run(src: str, **env) -> dict:
    scope = {"__name__": "fixed", **env}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(src, "fixed.py", "exec"), scope)
    return scope


def _empty_blocks(src: str) -> int:
    """Blocks holding nothing but `pass`."""
    count = 0
    for node in ast.walk(ast.parse(src)):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list) and block and all(isinstance(s, ast.Pass) for s in block):
                count += 1
    return count


# ------------------------------------------------------------------ NRN209: backend flags
DETERMINISM = """
import torch


def configure(deterministic):
    if deterministic:
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
    else:
        torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = True
"""


def test_the_cudnn_autotuner_switch_stays_with_a_note():
    # diffusers' train_vqgan.py: removing it slowed CUDA training down and changed its kernel choice
    src = """
    import torch
    torch.backends.cudnn.benchmark = True
    x = 1
    """
    assert _fix(src, "NRN209") == textwrap.dedent(src)
    assert "would slow GPU runs down" in _notes(src, "NRN209")[0]


def test_a_determinism_switch_stays_for_the_code_that_reads_it():
    # vissl (set 55): classy_vision's copy_model_to_gpu turns the cuDNN autotuner on when the flag
    # is False, so replacing the flag by the global switch made a reproducible run pick its kernels
    # per run; the flag stays, and the note says how to ask every device
    src = DETERMINISM + """

def copy_model_to_gpu(model):
    if not torch.backends.cudnn.deterministic:
        torch.backends.cudnn.benchmark = True
    return model
"""
    fixed = _fix(src, "NRN209")
    assert fixed.count("torch.backends.cudnn.deterministic = True") == 1
    assert "use_deterministic_algorithms" not in fixed
    namespace = _run(fixed)
    before = torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark
    try:
        namespace["configure"](True)
        namespace["copy_model_to_gpu"](None)
        assert torch.backends.cudnn.deterministic and not torch.backends.cudnn.benchmark
    finally:
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = before
        torch.set_float32_matmul_precision("highest")
    note = next(n for n in _notes(src, "NRN209") if "other code may read the flag" in n)
    assert "torch.use_deterministic_algorithms(True, warn_only=True)" in note


def test_no_fix_leaves_an_empty_block():
    sources = [DETERMINISM, """
    import torch
    if args.fast:
        torch.backends.cudnn.allow_tf32 = True
    for _ in range(2):
        torch.backends.cudnn.allow_tf32 = True
    try:
        torch.backends.cudnn.allow_tf32 = True
    except Exception:
        torch.backends.cuda.enable_flash_sdp(False)
    """]
    for src in sources:
        fixed = _fix(src, "NRN209")
        assert _empty_blocks(fixed) == _empty_blocks(textwrap.dedent(src)), fixed
    notes = _notes(sources[1], "NRN209")
    assert any("alone in its block" in n for n in notes)


def test_matmul_tf32_rewrite_sets_the_same_cublas_state():
    def state(src):
        previous = torch.get_float32_matmul_precision()
        try:
            _run(src)
            return torch.backends.cuda.matmul.allow_tf32, torch.backends.cuda.matmul.fp32_precision
        finally:
            torch.set_float32_matmul_precision(previous)

    for value in ("True", "False"):
        src = f"import torch\ntorch.backends.cuda.matmul.allow_tf32 = {value}\n"
        fixed = _fix(src, "NRN209")
        assert "set_float32_matmul_precision" in fixed and "allow_tf32" not in fixed
        assert state(fixed) == state(src)
    # Unsafe: it also sets the CPU (oneDNN) matmul precision, which the flag does not.
    assert _fix("import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n", "NRN209", unsafe=False).count("allow_tf32") == 1


def test_cudnn_tf32_and_sdpa_switches_are_left_with_a_note():
    src = """
    import torch
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.enable_flash_sdp(False)
    """
    assert _fix(src, "NRN209") == textwrap.dedent(src)
    notes = _notes(src, "NRN209")
    assert "convolutions" in notes[0] and "context manager" in notes[1]


SDP_CALLS = [
    "enable_flash=False",
    "enable_math=False, enable_mem_efficient=False",
    "True, False, False",
    "enable_flash=False, enable_math=True, enable_mem_efficient=True, enable_cudnn=False",
    "enable_flash=False, enable_math=False, enable_mem_efficient=False, enable_cudnn=False",
    "",
]


@pytest.mark.filterwarnings("ignore::FutureWarning")  # the deprecated sdp_kernel, run for comparison
@pytest.mark.parametrize("args", SDP_CALLS)
def test_sdpa_kernel_rewrite_selects_the_same_backends_and_runs_on_cpu(args):
    src = textwrap.dedent(f"""
    import torch
    import torch.nn.functional as F


    def attend(q, k, v):
        with torch.backends.cuda.sdp_kernel({args}):
            flags = (
                torch.backends.cuda.flash_sdp_enabled(),
                torch.backends.cuda.mem_efficient_sdp_enabled(),
                torch.backends.cuda.math_sdp_enabled(),
                torch.backends.cuda.cudnn_sdp_enabled(),
                torch._C._get_overrideable_sdp_enabled(),
            )
            out = F.scaled_dot_product_attention(q, k, v) if flags[2] else None
        return flags, out
    """)
    fixed = _fix(src, "NRN209", unsafe=False)  # the rewrite is safe
    assert "sdp_kernel(" not in fixed and "sdpa_kernel(" in fixed, fixed
    q = torch.randn(1, 2, 4, 8)
    before_flags, before_out = _run(src)["attend"](q, q, q)
    after_flags, after_out = _run(fixed)["attend"](q, q, q)
    assert after_flags == before_flags
    if before_out is not None:
        assert torch.equal(after_out, before_out)
    assert torch.backends.cuda.math_sdp_enabled()  # the previous state is restored on exit


# ------------------------------------------------------------------ NRN301: float64
def test_dtype_lists_in_test_files_are_untouched():
    src = """
    import pytest
    import torch

    DTYPES = [torch.float32, torch.float64]


    @pytest.mark.parametrize("dtype", DTYPES)
    def check(dtype):
        x = torch.zeros(2, dtype=torch.float64, device="cuda")
        assert x.double().dtype == torch.float64
    """
    for path in ("tests/test_ops.py", "pkg/ops_test.py", "test_ops.py", "pkg/tests/helpers.py"):
        assert _fix(src, "NRN301", path=path) == textwrap.dedent(src)
        notes = _notes(src, "NRN301", path=path)
        assert notes and all("test code" in n for n in notes)  # still reported, with the reason


def test_dtype_list_outside_tests_is_not_collapsed():
    src = """
    import torch
    for dtype in (torch.float32, torch.float64):
        y = torch.ones(2, dtype=dtype).to(device)
    """
    assert _fix(src, "NRN301") == textwrap.dedent(src)


def test_a_checkout_under_a_folder_called_test_is_not_test_code():
    from neuron_lint.fixes.fixers.float32 import is_test_path

    assert not is_test_path("/home/ci/test/checkout/project/model.py")
    assert is_test_path("/home/ci/checkout/tests/test_model.py")
    assert not is_test_path("src/pkg/model.py")


def test_gradcheck_code_is_untouched():
    src = """
    import torch
    from torch.autograd import gradcheck


    def check(fn, device):
        x = torch.randn(3, dtype=torch.float64, device=device, requires_grad=True)
        return gradcheck(fn, (x,), eps=1e-6, atol=1e-4)


    def run(fn, device):
        return torch.autograd.gradgradcheck(fn, (torch.randn(3, device=device).double().requires_grad_(),))
    """
    fixed = _fix(src, "NRN301")
    assert fixed == textwrap.dedent(src)
    assert _run(fixed)["check"](torch.sin, "cpu")  # still passes: float32 would not


def test_host_side_float64_and_documented_float64_are_untouched():
    src = """
    import numpy as np
    import torch

    err = (pred - target).double().cpu()
    ref = out.double().numpy()
    # float64 needed: the reference grid must match the paper bit for bit
    grid = torch.linspace(0, 1, 9, dtype=torch.float64, device=device)
    y = x.double()
    """
    fixed = _fix(src, "NRN301")
    assert fixed.count(".double()") == 2 and "y = x.float()" in fixed
    assert "dtype=torch.float64" in fixed


def test_float32_rewrite_still_runs():
    src = "import torch\nfrom torch import float64\nx = torch.ones(2, dtype=float64, device=device).double()\n"
    fixed = _fix(src, "NRN301")
    assert "float64" not in fixed and "double" not in fixed
    assert _run(fixed, device="cpu")["x"].dtype == torch.float32


# ------------------------------------------------------------------ NRN208: is_cuda
def test_is_cuda_rewrite_agrees_with_is_cuda_on_cpu_and_meta_tensors():
    src = textwrap.dedent("""
    def probe(t):
        on_accelerator = t.is_cuda
        if on_accelerator:
            return "accelerator"
        return "host"


    def loader_options(t):
        return dict(pin_memory=not t.is_cuda)
    """)
    fixed = _fix(src, "NRN208")
    assert "is_cuda" not in fixed, fixed
    before, after = _run(src), _run(fixed)
    for t in (torch.zeros(2), torch.empty(2, device="meta")):
        assert after["probe"](t) == before["probe"](t) == "host"
        assert after["loader_options"](t) == before["loader_options"](t) == {"pin_memory": True}


def test_a_guard_of_a_compiled_cuda_extension_is_kept():
    src = """
    from detectron2 import _C


    def forward(input, weight, offset):
        if not input.is_cuda:
            raise NotImplementedError("Deformable Conv is not supported on CPUs!")
        return _C.deform_conv_forward(input, weight, offset)
    """
    assert _fix(src, "NRN208") == textwrap.dedent(src)
    (note,) = _notes(src, "NRN208")
    assert "_C.deform_conv_forward" in note and "keep it" in note


def test_a_guard_is_rewritten_only_with_the_cuda_api_it_guards():
    src = "import torch\nif x.is_cuda:\n    torch.cuda.synchronize()\n"
    alone = _fix(src, "NRN208")
    assert alone == src  # nothing else rewrites torch.cuda.synchronize: the guard stays
    both = _fix(src, "NRN208", "NRN203")
    assert ("is_cuda" in both) == ("torch.cuda.synchronize" in both), both



def test_an_is_cuda_guard_of_data_parallel_is_kept():
    # pytorch/examples dcgan: `(input.is_cuda or input.is_xpu) and self.ngpu > 1` opens
    # `nn.parallel.data_parallel` (NRN210, no fix): on Trainium a neuron tensor would reach it.
    src = """
    import torch.nn as nn


    def forward(self, input):
        if (input.is_cuda or input.is_xpu) and self.ngpu > 1:
            output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        else:
            output = self.main(input)
        return output
    """
    assert _fix(src, "NRN2") == textwrap.dedent(src)
    (note,) = _notes(src, "NRN208")
    assert "not rewritten" in note and "line 7" in note

# ------------------------------------------------------------------ NRN401 / NRN403
def test_compile_keywords_keep_comments():
    src = """
    import torch
    a = torch.compile(model, mode="max-autotune",  # tuned on A100
                      fullgraph=True)
    b = torch.compile(
        model,
        dynamic=True,  # varying shapes
    )
    c = torch.compile(model, fullgraph=True, mode="reduce-overhead")
    """
    fixed = _fix(src, "NRN401", "NRN403")
    assert "# tuned on A100" in fixed and 'mode="max-autotune"' in fixed
    assert "dynamic=False,  # varying shapes" in fixed
    assert "c = torch.compile(model, fullgraph=True)\n" in fixed
    assert any("comment" in n for n in _notes(src, "NRN403"))


def test_removing_flag_lines_next_to_a_removed_seed_keeps_the_statements_after_them():
    # nanoGPT's sample.py/bench.py: the duplicate `torch.cuda.manual_seed` goes, and so does the cuDNN
    # flag line below it; the statement after them (nanoGPT's `device_type = ...`) must stay.
    src = """\
    import torch
    seed = 1
    torch.manual_seed(seed)
    torch.cuda.manual_seed(seed)
    torch.backends.cudnn.allow_tf32 = True # allow tf32 on cudnn
    x = 1
    y = x + 1
    """
    out = _fix(src, "NRN2")
    assert "torch.cuda.manual_seed" not in out and "cudnn.allow_tf32" not in out
    assert "x = 1" in out and "y = x + 1" in out
    assert _run(out)["y"] == 2
