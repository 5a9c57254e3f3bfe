"""The NRN202 / NRN205 / NRN206 rewrites, seen from a user's side.

- Fixed programs still run on a CPU-only host (the CPU build of torch 2.13 in the test extra) and
  compute what the original computes with CUDA mapped to the CPU.
- A string chosen by a device test is rewritten together with the test, in a way that reads the
  same on a GPU machine and picks the Neuron path on Trainium (nanoGPT's autocast switch).
- Code that only runs under `if device == "cuda":` is left alone, with a note.
- `from torch.cuda.amp import ...` goes in the same run as its uses; an alias still used stays.
- A second `fix` changes nothing.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
import types
import unittest
import warnings

import pytest

from neuron_lint.api import check_source
from neuron_lint.config.settings import Settings
from neuron_lint.fixes.apply import fix_text

CODES = ("NRN202", "NRN205", "NRN206")


def fix(src: str, path: str = "train.py", **settings) -> str:
    s = Settings(**{"select": CODES, **settings})
    src = textwrap.dedent(src).lstrip("\n")
    result = fix_text(src, path, s)
    ast.parse(result.text)
    again = fix_text(result.text, path, s)
    assert again.text == result.text and not again.applied, f"a second fix changed:\n{result.text}"
    return result.text


def notes(src: str, path: str = "train.py", **settings) -> list[str]:
    s = Settings(**{"select": CODES, **settings})
    return [f.fix_note for f in check_source(textwrap.dedent(src).lstrip("\n"), path, s) if f.fix is None]


def run(code: str, **names) -> dict:
    """Execute a module's text as a script; its globals afterwards."""
    namespace = {"__name__": "__main__", **names}
    exec(compile(code, "<fixed>", "exec"), namespace)  # noqa: S102 - the snippets are this file's own
    return namespace


# ---------------------------------------------------------------------- device strings
DEVICE_SCRIPT = """
import torch

device = torch.device("cuda")
rank = 0
model = torch.nn.Linear(4, 2).to(device)
x = torch.ones(3, 4, device="cuda")
y = torch.zeros(2, device="cuda:0")
z = torch.zeros(2, device="cuda:{}".format(rank))
w = torch.full((2,), 3.0).to("cuda:%d" % rank)
v = torch.ones(2).to(f"cuda:{rank}", non_blocking=True)
device_name = "cuda" if torch.cuda.is_available() else "cpu"
out = model(x)
"""


def test_device_strings_still_run_on_a_cpu_only_host_and_compute_the_same():
    torch = pytest.importorskip("torch")
    fixed = fix(DEVICE_SCRIPT)
    assert '"cuda' not in fixed and "torch.accelerator.current_accelerator()" in fixed
    assert 'f"{device.type}:{rank}"' in fixed and "device_name = device.type" in fixed
    torch.manual_seed(0)
    got = run(fixed)
    torch.manual_seed(0)
    want = run(textwrap.dedent(DEVICE_SCRIPT).replace('"cuda', '"cpu'))  # CUDA mapped to the CPU
    for name in ("x", "y", "z", "w", "v", "out"):
        assert torch.equal(got[name], want[name]), name
        assert got[name].device.type == "cpu"
    assert got["device_name"] == "cpu" and got["device"] == torch.device("cpu")


def test_the_module_device_variable_becomes_the_idiom_the_way_ruff_prints_it():
    fixed = fix(DEVICE_SCRIPT)
    assert fixed.startswith(
        "import torch\n\n"
        "device = (\n"
        "    torch.accelerator.current_accelerator()\n"
        "    if torch.accelerator.is_available()\n"
        '    else torch.device("cpu")\n'
        ")\n"
    )
    assert max(len(line) for line in fixed.splitlines()) <= 88


def test_the_idiom_uses_the_module_torch_alias():
    fixed = fix("""
        import torch as t

        device = t.device("cuda")
        model = t.nn.Linear(2, 2).to(device)
    """)
    # 96 characters on one line: broken over lines as well
    assert fixed.startswith(
        "import torch as t\n\ndevice = (\n    t.accelerator.current_accelerator()\n"
        "    if t.accelerator.is_available()\n    else t.device(\"cpu\")\n)\n"
    )
    assert "import torch\n" not in fixed


# ---------------------------------------------------------------------- the nanoGPT trap
NANOGPT = """
import torch
from contextlib import nullcontext

device = "cuda"
device_type = "cuda" if "cuda" in device else "cpu"
ptdtype = torch.bfloat16
ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type, dtype=ptdtype)
model = torch.nn.Linear(4, 4).to(device)
with ctx:
    y = model(torch.ones(1, 4, device=device))
"""


def test_nanogpt_autocast_switch_keeps_choosing_the_accelerator():
    fixed = fix(NANOGPT)
    assert "device = DEVICE.type\n" in fixed
    assert "device_type = DEVICE.type if DEVICE.type in device else \"cpu\"\n" in fixed
    line = next(l for l in fixed.splitlines() if l.startswith("device_type = "))
    expr = ast.parse(line).body[0].value
    original = ast.parse('"cuda" if "cuda" in device else "cpu"', mode="eval").body

    def ev(node, **names):
        return eval(compile(ast.Expression(node), "<e>", "eval"), names)

    # On a GPU machine DEVICE.type is "cuda": the same answer for every device string.
    for device in ("cuda", "cuda:1", "cpu", "mps", "meta", "xla"):
        assert ev(expr, DEVICE=types.SimpleNamespace(type="cuda"), device=device) == ev(original, device=device)
    # On Trainium `device = DEVICE.type` is "neuron", and so is the autocast device type
    # (the old rewrite, `DEVICE.type if 'cuda' in device else 'cpu'`, gave "cpu": autocast off).
    trn = types.SimpleNamespace(type="neuron")
    assert ev(expr, DEVICE=trn, device="neuron") == "neuron"
    assert ev(expr, DEVICE=trn, device="neuron:3") == "neuron"
    assert ev(expr, DEVICE=trn, device="cpu") == "cpu"  # `--device=cpu` still means the CPU


def test_nanogpt_fixed_runs_on_a_cpu_only_host():
    torch = pytest.importorskip("torch")
    got = run(fix(NANOGPT))
    assert got["device_type"] == "cpu" and got["y"].shape == (1, 4)
    assert got["y"].device == torch.device("cpu")


@pytest.mark.parametrize("test,arm", [
    ('device.type == "cuda"', '"cuda"'),
    ('device.type != "cuda"', '"cpu"'),
    ('str(device).startswith("cuda")', '"cuda"'),
    ('device in ("cuda", "cuda:0")', '"cuda"'),
])
def test_a_string_decided_by_a_device_test_is_rewritten_with_it(test, arm):
    other = '"cpu"' if arm == '"cuda"' else '"cuda"'
    src = f"import torch\n\nx = torch.ones(2)\ny = x.to({arm} if {test} else {other})\n"
    fixed = fix(src)
    (line,) = [l for l in fixed.splitlines() if l.startswith("y = ")]
    assert '"cuda"' not in line
    new = ast.parse(line).body[0].value.args[0]
    old = ast.parse(src.splitlines()[-1]).body[0].value.args[0]

    def ev(node, **names):
        return eval(compile(ast.Expression(node), "<e>", "eval"), {"str": str, **names})

    for value in ("cuda", "cuda:0", "cpu"):
        dev = types.SimpleNamespace(type=value.split(":")[0]) if "type" in test else value
        dev = value if "startswith" in test or " in " in test else dev
        assert ev(new, DEVICE=types.SimpleNamespace(type="cuda"), device=dev) == ev(old, device=dev)
    trn = "neuron" if "startswith" in test or " in " in test else types.SimpleNamespace(type="neuron")
    assert ev(new, DEVICE=types.SimpleNamespace(type="neuron"), device=trn) == "neuron"


def test_code_under_a_cuda_test_is_left_alone_with_a_note():
    src = """
        import torch


        def move(x, device):
            if device == "cuda":
                torch.cuda.synchronize()
                x = x.to("cuda")
            return x
    """
    assert fix(src) == textwrap.dedent(src).lstrip("\n")
    (note,) = notes(src)
    assert 'device == "cuda"' in note and "by hand" in note


# ---------------------------------------------------------------------- device lists
def test_a_loop_over_device_choices_tests_the_accelerator_and_still_runs_on_the_cpu():
    pytest.importorskip("torch")
    src = """
        import torch


        def check_add():
            seen = []
            for device in ["cuda", "cpu"]:
                x = torch.ones(2, device=device)
                seen.append((x + x).sum().item())
            return seen
    """
    fixed = fix(src, path="lib.py")
    assert 'for device in [_current_device().type, "cpu"]:' in fixed
    assert run(fixed)["check_add"]() == [4.0, 4.0]


def test_a_parametrized_test_tests_cuda_on_gpus_and_neuron_on_trainium():
    src = """
        import pytest
        import torch


        @pytest.mark.parametrize("device", ["cpu", "cuda"])
        def test_add(device):
            assert torch.ones(2, device=device).sum() == 2
    """
    fixed = fix(src, path="tests/test_ops.py")
    assert '@pytest.mark.parametrize("device", ["cpu", _current_device().type])' in fixed
    # outside a test module the list is evaluated when a library is imported: left alone
    assert fix(src, path="ops.py") == textwrap.dedent(src).lstrip("\n")
    assert any("imported" in n for n in notes(src, path="ops.py"))


def test_a_loop_that_compares_the_device_with_cuda_is_left_alone():
    src = """
        import torch


        def check():
            for device in ["cpu", "cuda"]:
                if device == "cuda" and not torch.cuda.is_available():
                    continue
                assert torch.ones(2, device=device).sum() == 2
    """
    assert fix(src) == textwrap.dedent(src).lstrip("\n")
    assert any("compares `device` with CUDA" in n for n in notes(src))


# ---------------------------------------------------------------------- mixed precision
AMP_SCRIPT = """
import torch
from torch.cuda.amp import GradScaler, autocast

torch.manual_seed(0)
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = GradScaler(init_scale=1024)
x = torch.randn(8, 4)
with autocast(True, torch.bfloat16):
    out = model(x)
loss = out.float().pow(2).mean()
scaler.scale(loss).backward()
scaler.step(opt)
scaler.update()
"""


@pytest.mark.slow
def test_amp_fix_drops_the_import_and_runs_like_cuda_amp_on_the_cpu():
    """On a CPU-only host CUDA AMP switches itself off; the fixed script must too (CPU autocast
    would run the model in bfloat16, a CPU GradScaler would scale the loss)."""
    torch = pytest.importorskip("torch")
    fixed = fix(AMP_SCRIPT)
    assert "torch.cuda.amp" not in fixed
    assert "torch.autocast(" in fixed and "torch.amp.GradScaler(" in fixed
    assert fixed.count('enabled=DEVICE.type != "cpu"') == 2
    got = run(fixed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "CUDA is not available. Disabling"
        want = run(textwrap.dedent(AMP_SCRIPT))
    assert not want["scaler"].is_enabled() and not got["scaler"].is_enabled()
    assert want["out"].dtype == got["out"].dtype == torch.float32  # no autocast on the CPU
    assert torch.equal(got["out"], want["out"]) and torch.equal(got["model"].weight, want["model"].weight)

    # where the device type is not the CPU (CUDA, Neuron) the same objects are on: CUDA mapped to the CPU
    on = run(fixed.replace('DEVICE.type != "cpu"', "True"))
    assert on["out"].dtype == torch.bfloat16 and on["scaler"].is_enabled()


def test_an_amp_alias_still_used_keeps_its_import():
    src = """
        import torch
        from torch.cuda.amp import autocast as ac


        def run(model, x, fast):
            ctx = ac if fast else None
            with ac(dtype=torch.bfloat16):
                return model(x)
    """
    fixed = fix(src, path="lib.py")
    assert "from torch.cuda.amp import autocast as ac\n" in fixed  # `ac` is still used
    assert "with torch.autocast(\n        _current_device().type,\n        dtype=torch.bfloat16,\n" in fixed
    assert "ctx = ac if fast else None" in fixed


CUSTOM_FWD = """
import torch
from torch.cuda.amp import custom_bwd, custom_fwd


class Square(torch.autograd.Function):
    @staticmethod
    @custom_fwd(cast_inputs=torch.float32)
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    @custom_bwd
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


if __name__ == "__main__":
    x = torch.ones(2, dtype=torch.bfloat16, requires_grad=True)
    with torch.autocast(DEVICE_TYPE, dtype=torch.bfloat16):
        y = Square.apply(x)
    y.sum().backward()
"""


def test_a_removed_import_leaves_its_groups_apart():
    # stable-dreamfusion's guidance/sd_utils.py: the unused `from torch.cuda.amp import ...` sat
    # after a blank line between the third-party and the local imports; removed with its blank
    # line, the local import joined the third-party group (ruff I001)
    src = """
        import torch
        import torch.nn as nn

        from torch.cuda.amp import custom_bwd, custom_fwd
        from .perpneg_utils import weighted


        def seed_everything(seed):
            torch.manual_seed(seed)

            torch.cuda.manual_seed(seed)
            return torch.zeros(1).cuda()
    """
    fixed = fix(src, path="pkg/sd_utils.py", select=("NRN2",))
    assert "import torch.nn as nn\n\nfrom .perpneg_utils import weighted\n" in fixed
    assert "torch.cuda" not in fixed
    # inside a function the paragraph break stays too, and none is added where there was none
    assert "    torch.manual_seed(seed)\n\n    return torch.zeros(1).to(_current_device())" in fixed


def test_custom_fwd_casts_under_the_current_device_autocast():
    torch = pytest.importorskip("torch")
    src = CUSTOM_FWD.replace("DEVICE_TYPE", '"cpu"')
    fixed = fix(src)
    assert "@torch.amp.custom_fwd(device_type=DEVICE.type, cast_inputs=torch.float32)" in fixed
    assert "@torch.amp.custom_bwd(device_type=DEVICE.type)" in fixed and "torch.cuda.amp" not in fixed
    got = run(fixed)
    assert got["y"].dtype == torch.float32  # cast_inputs applies under CPU autocast on a CPU host
    assert got["x"].grad is not None


def test_custom_fwd_in_a_library_is_not_probed_at_import():
    src = CUSTOM_FWD.split('if __name__')[0]
    assert fix(src, path="ops.py") == textwrap.dedent(src).lstrip("\n")
    assert any('device_type="neuron"' in n and "imported" in n for n in notes(src, path="ops.py"))
    neuron = fix(src, path="ops.py", device="neuron")
    assert '@torch.amp.custom_fwd(device_type="neuron", cast_inputs=torch.float32)' in neuron
    assert "torch.cuda.amp" not in neuron


# ---------------------------------------------------------------------- distributed
DDP_SCRIPT = """
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main(local_rank, init):
    dist.init_process_group(
        backend="nccl",
        init_method=init,
        rank=0,
        world_size=1,
    )
    model = torch.nn.Linear(4, 2).to(f"cuda:{local_rank}")
    ddp = DDP(model, device_ids=[local_rank], output_device=local_rank)
    out = ddp(torch.ones(3, 4))
    backend = dist.get_backend()
    dist.destroy_process_group()
    print(backend, tuple(out.shape), out.device.type)


if __name__ == "__main__":
    main(0, sys.argv[1])
"""


@pytest.mark.slow
def test_ddp_script_starts_on_a_cpu_only_host(tmp_path):
    pytest.importorskip("torch")
    fixed = fix(DDP_SCRIPT)
    assert "backend=dist.get_default_backend_for_device(DEVICE)," in fixed
    assert 'ddp = DDP(model, device_ids=[local_rank] if DEVICE.type != "cpu" else None)' in fixed
    script = tmp_path / "train.py"
    init = (tmp_path / "store").as_uri()
    script.write_text(fixed)
    done = subprocess.run([sys.executable, str(script), init], capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["gloo", "(3,", "2)", "cpu"]
    # the original cannot start there
    original = tmp_path / "original.py"
    original.write_text(textwrap.dedent(DDP_SCRIPT).lstrip("\n"))
    (tmp_path / "store").unlink(missing_ok=True)
    before = subprocess.run([sys.executable, str(original), init], capture_output=True, text=True, timeout=240,
                            check=False)
    assert before.returncode != 0


def test_ddp_device_ids_stay_with_device_neuron():
    src = """
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(model, device_ids=[local_rank])
    """
    assert fix(src, device="neuron") == textwrap.dedent(src).lstrip("\n")
    assert any("neuron" in n for n in notes(src, device="neuron"))


# ---------------------------------------------------------------------- device strings defined by the module itself
def fix_all(src: str, path: str = "train.py", **settings) -> str:
    return fix(src, path, select=("NRN2",), **settings)


def test_a_device_string_named_DEVICE_becomes_the_string_idiom_and_still_runs_on_the_cpu():
    pytest.importorskip("torch")
    src = """
        import torch

        DEVICE = 'cuda' if torch.cuda.is_available() else 'cpu'


        def main():
            return torch.ones(2).to(DEVICE)


        if __name__ == "__main__":
            y = main()
    """
    fixed = fix_all(src)
    assert "DEVICE = (\n    torch.accelerator.current_accelerator().type\n    if torch.accelerator.is_available()\n    else 'cpu'\n)\n" in fixed
    assert "torch.cuda" not in fixed and "DEVICE.type" not in fixed.split("def main")[0].split("DEVICE = (")[0]
    got = run(fixed)
    assert got["DEVICE"] == "cpu" and got["y"].device.type == "cpu"


def test_a_device_string_stored_under_any_name_goes_with_its_availability_test():
    pytest.importorskip("torch")
    src = """
        import argparse

        import torch


        def main(argv):
            parser = argparse.ArgumentParser()
            parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
            args = parser.parse_args(argv)
            where = 'cuda' if torch.cuda.is_available() else 'cpu'
            return args.device, where


        if __name__ == "__main__":
            result = main([])
    """
    fixed = fix_all(src)
    assert 'default=DEVICE.type)' in fixed and "where = DEVICE.type\n" in fixed
    assert "torch.cuda" not in fixed
    assert run(fixed)["result"] == ("cpu", "cpu")


CUDA_TEST_CLASS = """
    import unittest

    import torch


    @unittest.skipUnless(torch.cuda.is_available(), "CUDA required")
    class TestOnDevice(unittest.TestCase):
        DEVICE = "cuda"

        def test_add(self):
            x = torch.ones(3, device=self.DEVICE)
            y = torch.ones(3, device="cuda")
            self.assertEqual((x + y).sum().item(), 6.0)
"""


def test_a_cuda_test_class_gets_its_device_but_keeps_its_skip_even_with_unsafe_fixes():
    safe = fix_all(CUDA_TEST_CLASS, "test_device.py")
    # the device strings are safe (same device on CUDA) and go; the skip stays: it decides whether the
    # test runs, and on Trainium a CUDA-only test would fail (what it needs is mostly out of sight)
    assert '"cuda"' not in safe and "skipUnless(torch.cuda.is_available()" in safe
    assert "    DEVICE = (\n        torch.accelerator.current_accelerator().type\n" in safe
    unsafe = fix_all(CUDA_TEST_CLASS, "test_device.py", unsafe_fixes=True)
    assert "skipUnless(torch.cuda.is_available()" in unsafe and '"cuda"' not in unsafe
    left = notes(CUDA_TEST_CLASS, "test_device.py", select=("NRN2",), unsafe_fixes=True)
    assert any("decides whether (and on which device) tests run" in n for n in left)


def test_a_fixed_cuda_test_class_is_skipped_on_a_cpu_only_host_as_before():
    pytest.importorskip("torch")
    fixed = fix_all(CUDA_TEST_CLASS, "test_device.py", unsafe_fixes=True)
    namespace = run(fixed)
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(namespace["TestOnDevice"])
    result = unittest.TestResult()
    suite.run(result)
    assert result.testsRun == 1 and len(result.skipped) == 1 and not result.errors


def test_a_skip_whose_test_shows_no_cuda_code_is_left_with_a_note():
    src = """
        import unittest

        import torch

        from mylib import fused_kernel


        class TestKernel(unittest.TestCase):
            @unittest.skipUnless(torch.cuda.is_available(), "the kernel is CUDA-only")
            def test_kernel(self):
                self.assertTrue(fused_kernel())
    """
    assert fix_all(src, "test_kernel.py", unsafe_fixes=True) == textwrap.dedent(src).lstrip("\n")
    (note,) = [n for n in notes(src, "test_kernel.py", select=("NRN2",)) if n]
    assert "out of sight" in note


def test_a_library_module_defining_its_device_string_gets_it_only_as_an_unsafe_fix():
    src = """
        import torch

        DEVICE = "cuda"


        def zeros(n):
            return torch.zeros(n, device=DEVICE)
    """
    assert fix_all(src, "mylib/ops.py") == textwrap.dedent(src).lstrip("\n")
    fixed = fix_all(src, "mylib/ops.py", unsafe_fixes=True)
    assert "DEVICE = (\n    torch.accelerator.current_accelerator().type\n" in fixed


def test_a_skip_whose_reason_names_a_cuda_feature_is_left_with_a_note():
    src = """
        import unittest

        import torch


        class TestDeform(unittest.TestCase):
            @unittest.skipIf(not torch.cuda.is_available(), "Deformable not supported for cpu")
            def test_forward(self):
                x = torch.ones(3, device="cuda")
                self.assertEqual(x.sum().item(), 3.0)
    """
    fixed = fix_all(src, "test_deform.py", unsafe_fixes=True)
    assert 'skipIf(not torch.cuda.is_available(), "Deformable' in fixed  # the skip stays
    note = next(n for n in notes(src, "test_deform.py", select=("NRN2",), unsafe_fixes=True) if "reason" in n)
    assert "Deformable not supported for cpu" in note


REQUIRE_CUDA = """
    from functools import wraps

    import pytest
    import torch


    def require_cuda(func):
        @wraps(func)
        def wrapper(*args, **kwargs):
            if not torch.cuda.is_available():
                pytest.skip("requires cuda")
            return func(*args, **kwargs)

        return wrapper


    def needs_gpu(func):
        @wraps(func)
        def wrapper(*args, **kwargs):
            if not torch.cuda.is_available():
                pytest.skip("requires a GPU")
            return func(*args, **kwargs)

        return wrapper
"""


def test_a_skip_decorator_in_a_tests_folder_helper_or_named_for_cuda_keeps_its_cuda_check():
    # lerobot's tests/utils.py: `require_cuda` guards 55 tests that call .cuda() or build configs
    # that only know cuda/mps/xpu/cpu; widened, they ran (and failed) on Trainium
    for unsafe in (False, True):
        fixed = fix_all(REQUIRE_CUDA, "tests/utils.py", unsafe_fixes=unsafe)
        assert fixed.count("torch.cuda.is_available()") == 2 and "accelerator" not in fixed
    left = notes(REQUIRE_CUDA, "tests/utils.py", select=("NRN2",), unsafe_fixes=True)
    assert any("decides whether (and on which device) tests run" in n for n in left)
    # transformers' testing_utils.py (vendored in held-out LoRA): `require_torch_gpu` there let
    # tests asserting a CUDA device run on Trainium; a package's test helpers are test code too
    for helpers in ("src/transformers/testing_utils.py", "examples/_test_seq2seq_examples.py"):
        fixed = fix_all(REQUIRE_CUDA, helpers, unsafe_fixes=True)
        assert fixed.count("torch.cuda.is_available()") == 2 and "accelerator" not in fixed
    # outside test code only the function named for CUDA keeps its check
    fixed = fix_all(REQUIRE_CUDA, "mylib/testing.py", unsafe_fixes=True)
    require, needs = fixed.split("def needs_gpu")
    assert "torch.cuda.is_available()" in require and "torch.accelerator.is_available()" in needs


def test_a_device_string_a_test_expects_back_is_left_as_data():
    # lm-eval's test_cli_subcommands: Namespace(device="cuda:1") ... assert cfg.device == "cuda:1";
    # rewritten, the test failed on every host but CUDA
    src = """
        from argparse import Namespace

        import pytest
        import torch


        def test_device_passed_through():
            cfg = Namespace(device="cuda:1", batch_size=16)
            assert cfg.device == "cuda:1"


        def test_runs_on_device():
            assert torch.ones(2).to("cuda").sum() == 2


        @pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA not available")
        def test_stays_on_device():
            x = torch.ones(2, device="cuda")
            assert x.device.type == "cuda"
    """
    fixed = fix_all(src, "tests/test_cli.py", unsafe_fixes=True)
    assert 'Namespace(device="cuda:1"' in fixed and '.to("cuda")' not in fixed
    # a test that runs on CUDA only (its skip stays) keeps its CUDA code with the skip: rewritten, it
    # would change nothing on CUDA and never run anywhere else (mmdetection3d's NMS tests, set 71)
    assert 'torch.ones(2, device="cuda")' in fixed
    (note,) = [n for n in notes(src, "tests/test_cli.py", select=("NRN2",), unsafe_fixes=True) if "data" in n]
    assert 'cfg.device == "cuda:1"' in note


def test_a_test_named_for_the_gpu_or_faking_cuda_keeps_its_cuda_device():
    # tnt's tests (set 72): `test_get_gpu_stats` hands `cuda:0` to an nvidia-smi reader, and a test
    # that patches `torch.cuda.Stream` hands it to a CUDA prefetcher; on a CPU host `cpu:0` failed both
    src = """
        from unittest.mock import patch

        import torch


        def test_get_gpu_stats():
            device = torch.device("cuda:0")
            assert read_stats(device)


        @patch("torch.cuda.Stream")
        def test_prefetcher(mock_stream):
            device = torch.device("cuda:0")
            assert make_prefetcher(device)


        def test_anywhere():
            device = torch.device("cuda:0")
            assert torch.ones(2, device=device).sum() == 2
    """
    fixed = fix_all(src, "tests/test_stats.py", unsafe_fixes=True)
    assert fixed.count('torch.device("cuda:0")') == 2
    assert "def test_anywhere():\n    device = torch.device(\"cuda:0\")" not in fixed


def test_a_kept_cuda_skip_keeps_its_test_and_no_other():
    # mmdetection3d's NMS tests (set 71): under a CUDA skip that stays, the test runs on CUDA only, so a
    # rewrite there changes nothing on CUDA and runs nowhere else; the other tests of its class are
    # not held back with it
    src = """
        import unittest

        import torch


        class TestOps(unittest.TestCase):
            @unittest.skipUnless(torch.cuda.is_available(), "requires CUDA")
            def test_on_gpu(self):
                x = torch.ones(2).cuda()
                self.assertEqual(x.sum().item(), 2)

            def test_anywhere(self):
                y = torch.ones(3).cuda()
                self.assertEqual(y.sum().item(), 3)
    """
    fixed = fix_all(src, "tests/test_ops.py", unsafe_fixes=True)
    assert "x = torch.ones(2).cuda()" in fixed
    assert "y = torch.ones(3).to(" in fixed


# ---------------------------------------------------------------- device lists and defaults (issue 11)
DEVICE_LIST = """
    import torch


    def devices():
        return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


    def run_all(fn):
        return [fn(torch.zeros(2, device=d)).sum().item() for d in devices()]
"""


def test_a_device_list_keeps_its_devices_on_a_cpu_host_and_gains_the_accelerator_elsewhere():
    fixed = fix(DEVICE_LIST, select=("NRN203",))
    assert "torch.cuda" not in fixed and "[_current_device().type] if torch.accelerator.is_available() else []" in fixed
    scope: dict = {}
    exec(compile(fixed, "devices.py", "exec"), scope)
    assert scope["devices"]() == ["cpu"]  # torch 2.13 CPU build: no accelerator, the same list as before
    assert scope["run_all"](lambda t: t + 1) == [2.0]


def test_a_device_list_in_a_test_module_is_left_even_with_unsafe_fixes():
    # detectron2's rotated-box tests: the loop would run the project's CPU/CUDA-only compiled
    # operators on neuron tensors; which tests Trainium runs is decided by hand
    src = DEVICE_LIST.replace("def devices", "def _devices").replace("in devices()", "in _devices()")
    for unsafe in (False, True):
        fixed = fix(src, path="test_ops.py", select=("NRN203",), unsafe_fixes=unsafe)
        assert "torch.cuda.is_available()" in fixed and "torch.accelerator" not in fixed
    left = notes(src, "test_ops.py", select=("NRN203",), unsafe_fixes=True)
    assert any("decides whether (and on which device) tests run" in n for n in left)
    # the same list in a module that is not a test is rewritten
    assert "torch.accelerator.is_available()" in fix(src, path="ops.py", select=("NRN203",), unsafe_fixes=True)


def test_a_device_list_whose_loop_compares_the_device_with_cuda_is_left_with_a_note():
    src = textwrap.dedent("""
        import torch


        def check():
            for d in ["cpu"] + (["cuda"] if torch.cuda.is_available() else []):
                if d == "cuda":
                    torch.cuda.synchronize()
    """).lstrip("\n")
    (guard,) = [f for f in check_source(src, "m.py", Settings(select=("NRN203",), unsafe_fixes=True))
                if f.line == 5]
    assert guard.fix is None and "compares `d` with CUDA" in guard.fix_note


def test_a_library_default_device_is_resolved_when_the_function_runs():
    fixed = fix("""
        import torch


        def noise(shape, device="cuda"):
            return torch.randn(shape, device=device)
    """, unsafe_fixes=True)
    assert "def noise(shape, device=None):\n    if device is None:\n        device = _current_device().type\n" in fixed
    scope: dict = {}
    exec(compile(fixed, "noise.py", "exec"), scope)
    assert scope["noise"]((2,)).device.type == "cpu"  # was "cuda": it failed on a CPU-only host
    assert fix("""
        import torch


        def noise(shape, device="cuda"):
            return torch.randn(shape, device=device)
    """).count('device="cuda"') == 1  # unsafe: not without --unsafe-fixes


def test_a_default_whose_annotation_would_need_a_new_import_is_left_with_a_note():
    src = 'import torch\n\n\ndef noise(shape, device: str = "cuda"):\n    return torch.randn(shape, device=device)\n'
    (finding,) = check_source(src, "m.py", Settings(select=("NRN202",), unsafe_fixes=True))
    assert finding.fix is None and "Optional" in finding.fix_note
    future = "from __future__ import annotations\n\n" + src
    fixed = fix(future, select=("NRN202",), unsafe_fixes=True)
    assert "device: str | None = None" in fixed


# ------------------------------------------------------------------ guards over code that stays CUDA-only
# (read in the unsafe diffs of torchtitan, detectron2 and pytorch/examples; see hunks.md)
def _unchanged(src: str, path: str, guard: str = "torch.cuda.is_available()") -> list[str]:
    """The guard stays as it is (what it decides may still be made device-agnostic); the notes."""
    before = textwrap.dedent(src)
    after = fix_all(src, path, unsafe_fixes=True)
    assert after.count(guard) == before.count(guard), after
    return [n for n in notes(src, path, select=("NRN2",), unsafe_fixes=True) if n and "not rewritten" in n]


def test_a_skip_over_a_test_that_launches_a_kernel_is_kept():
    # torchtitan test_minimal_async_ep_kernels.py: a generic reason, device strings to rewrite, and kernels
    src = """
        import unittest

        import torch

        from mylib.kernels import invert_flat_indices_kernel


        @unittest.skipUnless(torch.cuda.is_available(), "CUDA required")
        class TestKernels(unittest.TestCase):
            def test_invert(self):
                flat = torch.tensor([2, 0, 3, 1], device="cuda")
                self.assertEqual(invert_flat_indices_kernel(flat, num_rows=4).shape, flat.shape)
    """
    assert any("invert_flat_indices_kernel" in n for n in _unchanged(src, "test_kernels.py"))


def test_a_skip_over_a_float64_gradcheck_is_kept():
    # detectron2 test_roi_align_rotated.py / TensorMask: float64 runs as float32 on Trainium
    src = """
        import unittest

        import torch
        from torch.autograd import gradcheck


        class TestGrad(unittest.TestCase):
            @unittest.skipIf(not torch.cuda.is_available(), "CUDA not available")
            def test_gradient_cuda(self):
                x = torch.rand(2, 3, dtype=torch.float64, device="cuda", requires_grad=True)
                self.assertTrue(gradcheck(torch.sin, (x,)))
    """
    assert any("float32" in n for n in _unchanged(src, "test_grad.py"))


def test_a_generic_skip_in_a_module_whose_other_skips_name_the_cuda_need_is_kept():
    # detectron2 test_deformable.py: DeformConv raises for any tensor that is not a CUDA one
    src = """
        import unittest

        import torch

        from mylib import DeformConv


        class DeformableTest(unittest.TestCase):
            @unittest.skipIf(not torch.cuda.is_available(), "Deformable not supported for cpu")
            def test_forward(self):
                DeformConv(1, 1, 3)(torch.ones(1, 1, 5, 5).to("cuda"))

            @unittest.skipIf(not torch.cuda.is_available(), "This test requires gpu access")
            def test_cpu_equals_gpu(self):
                DeformConv(1, 1, 3).to("cuda")(torch.ones(1, 1, 5, 5).to("cuda"))
    """
    assert any("Deformable not supported" in n for n in _unchanged(src, "test_deformable.py"))


def test_a_device_comparison_deciding_a_custom_operator_is_kept():
    # detectron2 export/shared.py: `src.type == "cuda"` decides `torch.ops._caffe2.CopyGPUToCPU`
    src = """
        import torch


        def to_device(t, device_str):
            src = t.device
            dst = torch.device(device_str)
            if src == dst:
                return t
            elif src.type == "cuda" and dst.type == "cpu":
                return torch.ops._caffe2.CopyGPUToCPU(t)
            elif src.type == "cpu" and dst.type == "cuda":
                return torch.ops._caffe2.CopyCPUToGPU(t)
            else:
                raise RuntimeError("Can't cast tensor from device {} to device {}".format(src, dst))
    """
    out = fix_all(src, "shared.py", unsafe_fixes=True)
    assert 'src.type == "cuda"' in out
    assert any("custom operator" in n for n in notes(src, "shared.py", select=("NRN2",)) if n)


def test_a_device_count_skip_over_a_class_that_stays_cuda_is_kept():
    # torchtitan test_dist_muon.py: the class's `device_type` is "cuda" (no rule rewrites a returned string)
    src = """
        import unittest

        import torch


        @unittest.skipUnless(torch.cuda.device_count() >= 2, "requires 2 GPUs")
        class TestDistMuon(unittest.TestCase):
            @property
            def device_type(self):
                return "cuda"

            def test_it(self):
                self.assertEqual(torch.device(self.device_type, 0).index, 0)
    """
    assert any("tests run" in n for n in _unchanged(src, "test_dist_muon.py", "torch.cuda.device_count()"))


def test_a_device_count_guard_is_kept_while_a_cuda_f_string_it_decides_stays():
    # detectron2 test_export_torchscript.py: `== 0` returns early, the code after it is the CUDA path
    src = """
        import torch


        def devices():
            if torch.cuda.device_count() == 0:
                return [None]
            testing = ["cpu"]
            if torch.cuda.device_count() > 1:
                testing.append(f"cuda:{torch.cuda.device_count() - 1}")
            return testing
    """
    out = fix_all(src, "devices.py", unsafe_fixes=True)
    assert "if torch.cuda.device_count() == 0:" in out and "if torch.cuda.device_count() > 1:" in out, out


def test_a_device_count_guard_goes_with_the_device_string_it_decides():
    src = """
        import torch


        def main():
            if torch.cuda.device_count() >= 2:
                x = torch.ones(1).to("cuda:1")
                return x
    """
    out = fix_all(src, "main.py", unsafe_fixes=True)
    assert ("torch.cuda.device_count()" in out) == ('"cuda:1"' in out), out


def test_a_package_module_with_a_main_guard_is_a_library_module(tmp_path):
    # detectron2/utils/collect_env.py: runnable, but `detectron2.engine.defaults` imports it, so a
    # module-level `DEVICE = ...` would probe the device whenever detectron2 is imported
    src = """
        import torch


        def info():
            return torch.cuda.device_count(), torch.ones(1).to("cuda")


        if __name__ == "__main__":
            print(info(), torch.zeros(2).cuda())
    """
    sub = tmp_path / "pkg" / "utils"
    sub.mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (sub / "__init__.py").write_text("")
    inside = fix_all(src, str(sub / "collect_env.py"))
    assert "def _current_device() -> torch.device:" in inside and "DEVICE = (" not in inside, inside
    # the `__main__` block runs only when the module is run: it asks the helper then
    assert "print(info(), torch.zeros(2).to(_current_device()))" in inside, inside
    tools = tmp_path / "tools"  # detectron2's tools/ has an __init__.py: its scripts stay scripts
    tools.mkdir()
    (tools / "__init__.py").write_text("")
    assert "DEVICE = (" in fix_all(src, str(tools / "train_net.py"))
    assert "DEVICE = (" in fix_all(src, str(tmp_path / "collect_env.py"))
    # a top-level package whose __init__.py imports from its modules is a library
    # (denoising_diffusion_pytorch: its modules end in `__main__` demos); a docstring alone is not code
    lib = tmp_path / "diffusion"
    lib.mkdir()
    (lib / "__init__.py").write_text("from diffusion.model import Unet\n")
    assert "def _current_device() -> torch.device:" in fix_all(src, str(lib / "guided.py"))
    (tools / "__init__.py").write_text('"""Training scripts."""\n')
    assert "DEVICE = (" in fix_all(src, str(tools / "train_net.py"))
    # a folder without an __init__.py inside such a package is a namespace subpackage, imported as
    # one (LAVIS's lavis/datasets/data_utils.py, imported by every LAVIS run); inside a package of
    # scripts (an __init__.py without code) it is a folder of scripts
    (lib / "data").mkdir()
    assert "def _current_device() -> torch.device:" in fix_all(src, str(lib / "data" / "utils.py"))
    (tools / "extra").mkdir()
    assert "DEVICE = (" in fix_all(src, str(tools / "extra" / "train_more.py"))
    # a module a YAML config names by dotted path is imported (stable-dreamfusion's
    # ldm/modules/encoders/modules.py: `target: ldm.modules.encoders.modules.FrozenCLIPEmbedder`,
    # instantiated with importlib); one no config names stays a script
    project = tmp_path / "dreamfusion"
    encoders = project / "ldm" / "modules" / "encoders"
    encoders.mkdir(parents=True)
    (project / "setup.py").write_text("")
    (encoders / "__init__.py").write_text("")
    (project / "configs").mkdir()
    (project / "configs" / "zero123.yaml").write_text(
        "model:\n  params:\n    cond_stage_config:\n      target: ldm.modules.encoders.modules.FrozenCLIPEmbedder\n")
    assert "def _current_device() -> torch.device:" in fix_all(src, str(encoders / "modules.py"))
    assert "DEVICE = (" in fix_all(src, str(encoders / "demo.py"))


def test_a_script_another_module_imports_is_a_library_module(tmp_path):
    # lit-llama's generate.py has a __main__ guard, and finetune/adapter.py does
    # `from generate import generate`: a module-level DEVICE would probe the device on that import
    src = """
        import torch


        def generate(model, idx):
            return model(idx.cuda())


        if __name__ == "__main__":
            generate(torch.nn.Identity(), torch.zeros(1))
    """

    def project(name: str, files: dict):
        root = tmp_path / name  # a project of its own: the scan of its imports is kept per root
        root.mkdir()
        (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        return root

    lit = project("lit", {"finetune/adapter.py": "from generate import generate\n"})
    assert "def _current_device() -> torch.device:" in fix_all(src, str(lit / "generate.py"))
    # a test importing it does not count, nor a name imported from a package
    tested = project("tested", {"finetune/adapter.py": "from lit import generate\n",
                                "tests/test_generate.py": "import generate\n"})
    assert "DEVICE = (" in fix_all(src, str(tested / "generate.py"))
    # in a monorepo of examples, another folder's `from train import ...` is its own train.py
    mono = project("mono", {"mnist/main.py": "from train import train\n", "mnist/train.py": ""})
    assert "DEVICE = (" in fix_all(src, str(mono / "snli" / "train.py"))
    assert "def _current_device() -> torch.device:" in fix_all(src, str(mono / "mnist" / "train.py"))
    # ijepa's src/train.py imports its helper by dotted path with the names in brackets below
    ijepa = project("ijepa", {"src/train.py": "from src.helper import (\n    generate,\n)\n"})
    assert "def _current_device() -> torch.device:" in fix_all(src, str(ijepa / "src" / "helper.py"))
    # RWKV-v4neo/chat.py runs from its own folder and does `from src.model_run import ...` before it
    # sets CUDA_VISIBLE_DEVICES: a probe at model_run's import would pin the first GPU (held out)
    rwkv = project("rwkv", {"RWKV-v4neo/chat.py": "from src.model_run import generate\n"})
    assert "def _current_device() -> torch.device:" in fix_all(src, str(rwkv / "RWKV-v4neo" / "src" / "model_run.py"))
    assert "DEVICE = (" in fix_all(src, str(rwkv / "RWKV-v3" / "src" / "model_run.py"))  # not on its path



def test_a_script_importing_the_module_that_picks_the_visible_gpus_asks_for_the_device_at_run_time(tmp_path):
    # MedicalNet (set 80): train.py imports generate_model from model.py, which sets
    # CUDA_VISIBLE_DEVICES from --gpu_id before building the model; a DEVICE probed at train.py's
    # import started CUDA first, and `--gpu_id 1` trained on GPU 0
    (tmp_path / ".git").mkdir()
    (tmp_path / "model.py").write_text(
        "import os\n\n\ndef generate_model(opt):\n    os.environ['CUDA_VISIBLE_DEVICES'] = str(opt.gpu_id)\n")
    src = """
        from model import generate_model
        import torch


        def train(model, loss):
            loss = loss.cuda()
            return model, loss


        if __name__ == "__main__":
            train(generate_model(None), torch.nn.MSELoss())
    """
    fixed = fix_all(src, str(tmp_path / "train.py"))
    assert "def _current_device() -> torch.device:" in fixed and "DEVICE = (" not in fixed
    # a module that only reads the variable does not pick the GPUs
    (tmp_path / "model.py").write_text("import os\n\nGPUS = os.environ.get('CUDA_VISIBLE_DEVICES')\n")
    other = tmp_path / "other"
    other.mkdir()
    (other / "model.py").write_text("import os\n\nGPUS = os.environ.get('CUDA_VISIBLE_DEVICES')\n")
    assert "DEVICE = (" in fix_all(src, str(other / "train.py"))


def test_a_module_of_a_src_layout_package_is_a_library_module_even_with_a_main_block(tmp_path):
    # diffwave (set 80): src/diffwave/inference.py is imported by users (`from diffwave.inference import
    # predict`) and has a `__main__` block; a DEVICE probed at its import starts CUDA in every importer
    src = """
        import torch


        def predict(spectrogram, device=torch.device("cuda")):
            return spectrogram.to(device)


        if __name__ == "__main__":
            predict(torch.zeros(1))
    """
    (tmp_path / "setup.py").write_text("")
    package = tmp_path / "src" / "diffwave"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    fixed = fix_all(src, str(package / "inference.py"), unsafe_fixes=True)
    assert "def _current_device() -> torch.device:" in fixed and "DEVICE = (" not in fixed
    scripts = tmp_path / "scripts" / "tools"  # the same module in a folder of scripts stays a script
    scripts.mkdir(parents=True)
    (scripts / "__init__.py").write_text("")
    assert "DEVICE = (" in fix_all(src, str(scripts / "inference.py"), unsafe_fixes=True)

def test_a_package_module_doing_work_at_import_is_a_library_module(tmp_path):
    # diffusers/pipelines/pipeline_utils.py: a module-level loop made it look like a script
    src = """
        import torch

        LIBRARIES = []
        for library in ("diffusers", "transformers"):
            LIBRARIES.append(library)


        def offload(pipe, device="cuda"):
            pipe.to(device)
            return getattr(pipe, "_offload_device", "cuda")
    """
    sub = tmp_path / "diffusers" / "pipelines"
    sub.mkdir(parents=True)
    (tmp_path / "diffusers" / "__init__.py").write_text("")
    (sub / "__init__.py").write_text("")
    out = fix_all(src, str(sub / "pipeline_utils.py"), unsafe_fixes=True)
    assert "DEVICE = (" not in out and "_current_device()" in out, out
    scripts = tmp_path / "scripts"  # diffusers' scripts/ has an __init__.py: its modules stay scripts
    scripts.mkdir()
    (scripts / "__init__.py").write_text("")
    assert "DEVICE = (" in fix_all(src, str(scripts / "convert.py"), unsafe_fixes=True)


def test_the_device_definition_goes_after_the_whole_run_of_imports_holding_torch():
    # pytorch/examples rpc/batch/reinforce.py, DensePose's densepose_coco_evaluation.py: code before
    # the imports (`warnings.filterwarnings(...)`, `__author__ = ...`) ends the leading block early
    src = """
        import warnings

        warnings.filterwarnings("ignore")

        import torch
        import torch.nn as nn
        from torch.distributions import Categorical

        model = nn.Linear(2, 2).cuda()
    """
    out = fix_all(src, "reinforce.py")
    lines = out.splitlines()
    assert lines.index("from torch.distributions import Categorical") < lines.index("DEVICE = ("), out
    assert "model = nn.Linear(2, 2).to(DEVICE)" in out


def test_the_fallback_for_a_torch_without_accelerator_is_left():
    # diffusers gguf_quantizer.py / lora_pipeline.py: the else branch runs only where torch.accelerator is missing
    src = """
        import torch


        def place(model):
            device = (
                torch.accelerator.current_accelerator()
                if hasattr(torch, "accelerator")
                else torch.cuda.current_device()
            )
            if not hasattr(torch, "accelerator"):
                model.to("cuda")
            return model.to(device)
    """
    assert fix_all(src, "gguf_quantizer.py", unsafe_fixes=True) == textwrap.dedent(src).lstrip("\n")
    assert sum("fallback for a PyTorch without" in n for n in notes(src, "gguf_quantizer.py", select=("NRN2",)) if n) == 2


def test_a_guard_opening_a_cuda_only_library_is_kept():
    # diffusers bnb_quantizer.py: `validate_environment` lets bitsandbytes quantization go on
    src = """
        import torch

        from .utils import is_bitsandbytes_available


        def validate_environment():
            if not (torch.cuda.is_available() or torch.xpu.is_available()):
                raise RuntimeError("No GPU found. A GPU is needed for quantization.")
            if not is_bitsandbytes_available():
                raise ImportError("bitsandbytes is needed")
    """
    assert any("is_bitsandbytes_available" in n for n in _unchanged(src, "bnb_quantizer.py"))


def test_a_skip_over_a_test_compiled_with_inductor_is_kept():
    # torchtitan test_compile_moe.py: Inductor does not compile for the neuron device
    src = """
        import unittest

        import torch


        class TestCompile(unittest.TestCase):
            @unittest.skipUnless(torch.cuda.is_available(), "requires CUDA")
            def test_compiles_and_runs(self):
                model = torch.compile(torch.nn.Linear(2, 2).cuda(), backend="inductor")
                model(torch.ones(2, 2, device="cuda"))
    """
    assert any("Inductor" in n for n in _unchanged(src, "test_compile.py"))


PINNED_TEST = """
    import torch

    from trainer import utils


    def test_local_device(monkeypatch):
        monkeypatch.setattr(utils, "device_type", "cuda")
        assert utils.get_local_device() == torch.device("cuda:3")
"""


def test_a_test_that_fakes_a_cuda_machine_keeps_the_cuda_devices_it_expects():
    # torchtitan test_tools_utils.py: rewritten, the expectation followed the host (cpu:3 on a
    # CPU-only host) while the patched code still returned cuda:3, and the test failed everywhere but CUDA
    fixed = fix(PINNED_TEST, "test_utils.py", select=("NRN202",))
    assert 'torch.device("cuda:3")' in fixed
    assert any("pins the device to CUDA" in n for n in notes(PINNED_TEST, "test_utils.py", select=("NRN202",)))
    # outside a test module it is still a comparison with CUDA, which the current device's type would
    # turn true for the CPU on a CPU-only host
    assert 'torch.device("cuda:3")' in fix(PINNED_TEST, "local.py", select=("NRN202",))
    assert any("asks whether a device is CUDA" in n for n in notes(PINNED_TEST, "local.py", select=("NRN202",)))


ACCELERATE_SCRIPT = """
    import torch
    from accelerate import Accelerator


    def main():
        accelerator = Accelerator()
        ema = torch.nn.Linear(2, 2)
        ema.to(device="cuda", non_blocking=True)
        return ema(torch.ones(2).cuda())
"""


def test_a_function_with_an_accelerate_accelerator_uses_its_device():
    # diffusers' training scripts: accelerate chose the process's device (its rank's index on a
    # multi-device host); a device of our own could land on the first one
    fixed = fix_all(ACCELERATE_SCRIPT, "train.py")
    assert 'ema.to(device=accelerator.device.type, non_blocking=True)' in fixed
    assert "torch.ones(2).to(accelerator.device)" in fixed
    assert "DEVICE" not in fixed and "_current_device" not in fixed
    # an `accelerator` bound twice is not trusted
    twice = ACCELERATE_SCRIPT.replace("        ema = torch", "        accelerator = make()\n        ema = torch")
    assert "accelerator.device" not in fix_all(twice, "train.py")


METRIC_LOGGER = """
    import torch


    def log_every(items):
        if torch.cuda.is_available():
            log_msg = "{i} max mem: {memory:.0f}"
        else:
            log_msg = "{i}"
        for i in items:
            if torch.cuda.is_available():
                print(log_msg.format(i=i, memory=torch.cuda.max_memory_allocated()))
            else:
                print(log_msg.format(i=i))
"""


def test_two_guards_with_the_same_test_are_rewritten_together_or_not_at_all():
    # detr's MetricLogger (held out): below --min-torch 2.9 the memory statistic has no rewrite, so
    # the second guard stays; the first alone made the format string ask for {memory} on Trainium,
    # and the second, still CUDA-only, did not supply it (KeyError at the first logged step)
    left = fix(METRIC_LOGGER, "metrics.py", select=("NRN203",), min_torch="2.6")
    assert "torch.accelerator.is_available()" not in left
    both = fix(METRIC_LOGGER, "metrics.py", select=("NRN203",), min_torch="2.9")
    assert both.count("if torch.accelerator.is_available():") == 2
    assert "torch.accelerator.max_memory_allocated()" in both


def test_an_assert_decides_everything_after_it_in_its_function():
    # ConvNeXt's optim_factory (held out): the assert stands before apex's fused optimizers, which a
    # neuron device cannot run; rewritten, it let Trainium through to them
    src = """
        import torch
        from apex.optimizers import FusedSGD


        def create_optimizer(name, params, has_apex):
            if name.startswith("fused"):
                assert has_apex and torch.cuda.is_available(), "APEX and CUDA required for fused optimizers"
            if name == "fusedsgd":
                return FusedSGD(params, lr=0.1)
            return torch.optim.SGD(params, lr=0.1)
    """
    assert "torch.cuda.is_available()" in fix(src, "optim_factory.py", select=("NRN203",))
    assert any("FusedSGD" in n for n in notes(src, "optim_factory.py", select=("NRN203",)))
    # with nothing CUDA-only after it, and a model table called by name (not a kernel launch), it goes
    train = """
        import torch

        MODELS = {"tiny": torch.nn.Linear}


        def main(args):
            assert torch.cuda.is_available(), "Training requires a GPU."
            model = MODELS[args.model](4, 4)
            return model.cuda()
    """
    fixed = fix(train, "train.py", select=("NRN201", "NRN203"))
    assert "assert torch.accelerator.is_available()" in fixed and ".cuda()" not in fixed


def test_a_storage_moved_in_map_location_gets_its_device_by_keyword(tmp_path):
    # fairscale's tests (held out): `map_location=lambda storage, loc: storage.cuda(rank)`; a
    # storage's `to` takes the device by keyword only, so `storage.to("cuda:0")` raised TypeError on CUDA
    pytest.importorskip("torch")
    import torch

    src = """
        import torch


        def load(p, rank):
            return torch.load(p, map_location=lambda s, loc: s.cuda(rank))


        if __name__ == "__main__":
            load("ckpt.pt", 0)
    """
    fixed = fix(src, "ckpt.py", select=("NRN201",))
    assert "s.to(device=torch.device(DEVICE.type, rank))" in fixed
    path = tmp_path / "ck.pt"
    torch.save({"w": torch.ones(2)}, path)
    loaded = run(fixed, __name__="ckpt")["load"](str(path), 0)  # on this CPU-only host: cpu:0
    assert loaded["w"].tolist() == [1.0, 1.0]


def test_a_loop_over_the_device_count_goes_with_its_body():
    # fairscale's OSS (held out): on Trainium the loop ran once per NeuronCore and asked CUDA for
    # each one's compute capability, which raises; before, the loop was empty there
    src = """
        import torch


        def old_gpu():
            for i in range(torch.cuda.device_count()):
                major, minor = torch.cuda.get_device_capability(f"cuda:{i}")
                if major <= 5:
                    return True
            return False


        def sync_all():
            for i in range(torch.cuda.device_count()):
                torch.cuda.synchronize(i)
    """
    fixed = fix(src, "oss.py", select=("NRN2",))
    assert "for i in range(torch.cuda.device_count()):\n        major" in fixed
    assert "for i in range(torch.accelerator.device_count()):\n        torch.accelerator.synchronize(i)" in fixed


def test_a_cuda_device_in_a_comparison_is_not_made_the_current_device():
    # fairscale's OSS (held out): `torch.device("cuda").type == default.type` with the current
    # device's type held for the CPU too, and the branch then called torch.accelerator.synchronize,
    # which raises on a CPU-only host
    src = """
        import torch


        def refresh(default_device):
            if torch.device("cuda").type == default_device.type:
                torch.cuda.synchronize()
    """
    fixed = fix(src, "oss.py", select=("NRN2",))
    assert 'torch.device("cuda").type == default_device.type' in fixed
    pytest.importorskip("torch")
    import torch

    run(fixed, __name__="oss")["refresh"](torch.device("cpu"))  # the CPU branch is not taken: no raise
    assert any("asks whether a device is CUDA" in n for n in notes(src, "oss.py", select=("NRN2",)))


def test_a_function_used_as_a_decorator_at_import_runs_at_import():
    # fairscale's offload.py (held out): `_conditional_amp_fwd_decorator` wraps a method of a
    # module-level class, so `torch.amp.custom_fwd(..., device_type=_current_device().type)` in its
    # body probed the device when the library was imported
    src = """
        import torch


        def _amp_fwd(orig_func):
            if hasattr(torch.cuda.amp, "custom_fwd"):
                return torch.cuda.amp.custom_fwd(orig_func)
            return orig_func


        class F(torch.autograd.Function):
            @staticmethod
            @_amp_fwd
            def forward(ctx, x):
                return x * 2
    """
    fixed = fix(src, "offload.py", select=("NRN205",))
    assert "torch.cuda.amp.custom_fwd(orig_func)" in fixed and "_current_device" not in fixed
    assert any("when the module is imported" in n for n in notes(src, "offload.py", select=("NRN205",)))


def test_the_same_test_in_two_methods_of_a_class_is_rewritten_in_both_or_neither():
    # nanotron's timers (held out): start() rewritten, end() left behind a CUDA-only call, so on
    # Trainium end() took the CPU path with a start time that was never set
    src = """
        import torch


        class Timer:
            def start(self):
                if torch.cuda.is_available():
                    self.t0 = torch.cuda.Event(enable_timing=True)
                else:
                    self.t0 = 0.0

            def end(self):
                if torch.cuda.is_available():
                    return torch.cuda.nvtx.range_pop()
                return 1.0
    """
    fixed = fix(src, "timers.py", select=("NRN2",))
    assert "torch.accelerator.is_available()" not in fixed


CUDA_NAMED_TESTS = """
    import pytest
    import torch

    from whisper.timing import dtw, dtw_cpu


    @pytest.mark.requires_cuda
    def test_dtw_equivalence():
        x = torch.randn(4, 5)
        assert (dtw_cpu(x.numpy()) == dtw(x.cuda())).all()


    def test_dtw_cuda_matches_cpu():
        x = torch.randn(4, 5)
        assert (dtw_cpu(x.numpy()) == dtw(x.cuda())).all()


    def test_dtw_moves_its_input():
        assert dtw_cpu(torch.randn(4, 5).cuda().cpu().numpy()) is not None
"""


def test_a_test_named_or_marked_for_cuda_keeps_its_cuda_tensors():
    # whisper's test of its Triton DTW kernel: `.cuda()` rewritten handed the kernel neuron or CPU
    # tensors; the test is about CUDA (its name, or its marker), so it stays as it is
    fixed = fix_all(CUDA_NAMED_TESTS, "test_timing.py", unsafe_fixes=True)
    assert fixed.count("dtw(x.cuda())") == 2
    assert "torch.randn(4, 5).cuda()" not in fixed  # a test not about CUDA gets the current device
    left = notes(CUDA_NAMED_TESTS, "test_timing.py", select=("NRN2",), unsafe_fixes=True)
    assert any("`@pytest.mark.requires_cuda`" in n for n in left)
    assert any("`test_dtw_cuda_matches_cpu`, says it tests CUDA" in n for n in left)
    # outside a test module the same code is rewritten
    assert "dtw(x.cuda())" not in fix_all(CUDA_NAMED_TESTS, "timing_check.py", unsafe_fixes=True)
    # ... except where the tensor goes straight into a kernel named for CUDA (`dtw_cuda`, Triton's)
    kernel = CUDA_NAMED_TESTS.replace("dtw(x.cuda())", "dtw_cuda(x.cuda())")
    assert fix_all(kernel, "timing_check.py", unsafe_fixes=True).count("dtw_cuda(x.cuda())") == 2
    assert any("goes straight into `dtw_cuda`" in n for n in notes(kernel, "timing_check.py", select=("NRN2",)))


def test_the_cuda_arm_of_a_dispatch_with_a_neuron_arm_says_why_it_stays():
    # accelerate's set_seed: Trainium takes its own arm; the note names it
    src = """
        import torch


        def set_seed(seed):
            if is_xpu_available():
                torch.xpu.manual_seed_all(seed)
            elif is_neuron_available():
                torch.neuron.manual_seed_all(seed)
            else:
                torch.cuda.manual_seed_all(seed)
    """
    said = notes(src, path="utils/random.py", select=("NRN2",), unsafe_fixes=True)
    assert any("branch on line 7 is Trainium's own" in n for n in said), said


def test_cuda_of_an_object_built_by_a_project_class_with_its_own_cuda_is_kept(tmp_path):
    # InstantID (held out): its pipelines define `cuda(self, dtype=torch.float16, use_xformers=False)`,
    # which casts and moves the image projection model; `pipe.to(DEVICE)` skipped both
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "pipeline.py").write_text(
        "import torch\n\n\nclass InstantIDPipeline:\n"
        "    def cuda(self, dtype=torch.float16, use_xformers=False):\n"
        "        self.to('cuda', dtype)\n        return self\n\n\n"
        "class Meshes:\n    def cuda(self):\n        return self.to('cuda')\n")
    src = """
        import torch
        from pipeline import InstantIDPipeline


        class Predictor:
            def setup(self):
                self.pipe = InstantIDPipeline.from_pretrained("x")
                self.pipe.cuda()


        def main():
            pipe = InstantIDPipeline.from_pretrained("x")
            pipe.cuda()
            net = torch.nn.Linear(2, 2)
            net.cuda()
            meshes = Meshes()
            meshes.cuda()
    """
    fixed = fix_all(src.replace("import InstantIDPipeline", "import InstantIDPipeline, Meshes"),
                    str(tmp_path / "infer.py"))
    assert "self.pipe.cuda()" in fixed and "    pipe.cuda()" in fixed
    assert "net.to(" in fixed  # an nn.Module's own cuda() is still rewritten
    assert "meshes.to(" in fixed  # so is pytorch3d's `Meshes.cuda`, which is `return self.to("cuda")`


def test_cuda_of_an_object_a_project_class_loads_is_kept_however_it_is_reached(tmp_path):
    # DrQA (held out, set 33): `DocReader` is no nn.Module; its `cuda()` moves its network and sets
    # `use_cuda`. It is reached through its package (`reader.DocReader.load`) and through one of
    # several assignments (`model, epoch = DocReader.load_checkpoint(...)`); `.to(...)` raised
    # AttributeError on CUDA
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "reader").mkdir()
    (tmp_path / "reader" / "__init__.py").write_text("from .model import DocReader\n")
    (tmp_path / "reader" / "model.py").write_text(
        "class DocReader(object):\n    def cuda(self):\n        self.use_cuda = True\n"
        "        self.network = self.network.cuda()\n")
    src = """
        import torch
        import reader
        from reader import DocReader


        class Pipeline:
            def __init__(self, path, cuda):
                self.reader = reader.DocReader.load(path)
                if cuda:
                    self.reader.cuda()


        def main(args):
            if args.checkpoint:
                model, start_epoch = DocReader.load_checkpoint(args.checkpoint)
            else:
                model = init_from_scratch(args)
            if args.cuda:
                model.cuda()
            net = torch.nn.Linear(2, 2).cuda()
    """
    fixed = fix_all(src, str(tmp_path / "train.py"))
    assert "self.reader.cuda()" in fixed and "        model.cuda()" in fixed
    assert "net = torch.nn.Linear(2, 2).to(" in fixed


def test_cuda_of_an_object_named_like_a_project_class_with_its_own_cuda_is_kept(tmp_path):
    # XLM (set 68): the trainer gets a `SentenceEmbedder` (no nn.Module; its `cuda()` moves its model)
    # as a parameter and copies it; `.to(...)` raised AttributeError on CUDA. A name that ends the
    # way the class's name ends is taken for one; a module built in place is still rewritten
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "embedder.py").write_text(
        "class SentenceEmbedder(object):\n    def cuda(self):\n        self.model.cuda()\n")
    src = """
        import copy

        from torch import nn


        class Trainer:
            def __init__(self, embedder, out_dim):
                self._embedder = embedder
                self.embedder = copy.deepcopy(self._embedder)
                self.embedder.cuda()
                self.model = nn.Linear(out_dim, out_dim)
                self.model.cuda()
    """
    fixed = fix_all(src, str(tmp_path / "glue.py"))
    assert "self.embedder.cuda()" in fixed
    assert "self.model.to(" in fixed



def test_cuda_of_a_batch_item_keyed_like_a_project_class_with_its_own_cuda_is_kept(tmp_path):
    # SparseConvNet (set 77): `batch['input']` is an `InputLayerInput` (no nn.Module: `cuda()`, no
    # `to()`), so `.to(...)` raised AttributeError on CUDA at the first batch; the target is a tensor
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "io_layers.py").write_text(
        "class InputLayerInput(object):\n    def cuda(self):\n        self.x[1] = self.x[1].cuda()\n"
        "        return self\n")
    src = """
        def train(model, dataset, use_cuda):
            for batch in dataset:
                if use_cuda:
                    batch['input'] = batch['input'].cuda()
                    batch['target'] = batch['target'].cuda()
                model(batch['input'])
    """
    fixed = fix_all(src, str(tmp_path / "train.py"))
    assert "batch['input'] = batch['input'].cuda()" in fixed
    assert "batch['target'] = batch['target'].to(" in fixed

FAKED_GPU = """
    import pytest
    import torch as th


    def test_warn_ppo_on_device(model_factory):
        model = model_factory()
        # Pretend to be on the GPU
        model.device = th.device("cuda")
        with pytest.warns(UserWarning, match="You are trying to run PPO on the GPU"):
            model._maybe_recommend_cpu()
        return th.zeros(2, device="cuda")
"""


def test_a_device_a_test_sets_on_an_object_to_pretend_it_is_on_a_gpu_stays_cudas():
    # stable-baselines3's test_run.py (set 41): with the current device, a CPU-only host no longer
    # pretended, the warning was not raised and the test failed; the tensor it makes still moves
    # (the test renamed here: one named for the GPU keeps all its CUDA code, tnt's, set 72)
    fixed = fix_all(FAKED_GPU, "tests/test_run.py")
    assert 'model.device = th.device("cuda")' in fixed and 'device="cuda")' not in fixed, fixed
    assert any("pretends to be on a GPU" in n for n in notes(FAKED_GPU, "tests/test_run.py", select=("NRN2",)))
    # outside the tests, such an assignment is the program's device and moves
    assert 'model.device = th.device("cuda")' not in fix_all(FAKED_GPU, "train.py")


def test_a_move_to_another_tensors_get_device_goes_to_that_tensors_device():
    # vid2vid (set 55): `.cuda(image.get_device())` was left ("may be a device object"), and
    # `gpu_id = x.get_device()` ... `.cuda(gpu_id)` became `torch.device(DEVICE.type, gpu_id)`, which
    # raises on a CPU host (get_device() is -1 there); `.to(x.device)` is the same move on CUDA
    src = """
    import torch


    def resample(image, flow):
        grid = (flow * 2).permute(0, 2, 3, 1).cuda(image.get_device())
        return grid


    def blend(img_feat, img_prev):
        gpu_id = img_feat.get_device()
        assert gpu_id == img_feat.get_device()
        return img_prev.cuda(gpu_id) + img_feat


    def dead_name(img_feat, img_prev):
        gpu_id = img_feat.get_device()
        return img_prev.cuda(gpu_id)
    """
    import torch

    fixed = fix(src, select=("NRN201",))
    assert ".to(image.device)" in fixed and ".to(img_feat.device)" in fixed
    # a name used only by the moves keeps its use (rewritten to `.to(img_feat.device)` it would be
    # left unused: ruff's F841)
    assert fixed.count("torch.device(") == 2, fixed
    scope: dict = {}
    exec(compile(fixed, "fixed.py", "exec"), scope)
    image, flow = torch.zeros(1, 2, 3, 3), torch.ones(1, 2, 3, 3)
    assert scope["resample"](image, flow).device == image.device
    assert torch.equal(scope["blend"](image, image), image + image)


PIPELINE_SCRIPT = """
import torch


def load_pipeline(pipeline):
    if torch.cuda.is_available():
        pipeline.to("cuda:0")
    return pipeline


if __name__ == "__main__":
    load_pipeline(None)
"""


def test_a_script_named_test_that_defines_no_tests_gets_its_check_rewritten():
    # Wonder3D's `test_mvdiffusion_seq.py` (read set 63) is an inference script: its CUDA check decides
    # where the pipeline runs, not which tests run, and it stayed while the autocast beside it moved
    fixed = fix_all(PIPELINE_SCRIPT, "test_mvdiffusion_seq.py")
    assert "torch.accelerator.is_available()" in fixed and '"cuda:0"' not in fixed
    # the same code in a module that imports pytest, under a tests folder or not run as a script is test code
    for path, src in (("test_pipeline.py", "import pytest\n" + PIPELINE_SCRIPT),
                      ("tests/test_pipeline.py", PIPELINE_SCRIPT), ("unit_tests/test_pipeline.py", PIPELINE_SCRIPT),
                      ("test_pipeline.py", PIPELINE_SCRIPT.split("\n\nif __name__")[0] + "\n")):
        assert "torch.cuda.is_available()" in fix_all(src, path)


def test_a_test_run_on_cuda_alone_keeps_its_cuda_device():
    # torchani's tests/test_cuaev.py (read set 87): `@expand(device="cuda")` makes a class for CUDA only,
    # skipped without it; as the current device's type, a CPU-only host ran the cuAEV tests on the CPU
    src = """
        import pytest
        import torch

        from mypkg.testing import expand


        @expand(device="cuda")
        class TestKernel:
            def test_it(self):
                assert torch.ones(2, device=self.device).sum() == 2


        @pytest.mark.parametrize("device", ["cuda"])
        def test_one(device):
            assert torch.ones(2, device=device).sum() == 2


        @pytest.mark.parametrize("device", ["cpu", "cuda"])
        def test_two(device):
            assert torch.ones(2, device=device).sum() == 2
    """
    fixed = fix_all(src, "tests/test_kernel.py", unsafe_fixes=True)
    assert '@expand(device="cuda")' in fixed
    assert '@pytest.mark.parametrize("device", ["cuda"])' in fixed
    assert '@pytest.mark.parametrize("device", ["cpu", _current_device().type])' in fixed
    left = notes(src, "tests/test_kernel.py", select=("NRN2",))
    assert sum("the test runs on CUDA alone" in n for n in left) == 2, left


def test_a_kept_check_that_decides_a_ddp_wrap_keeps_its_classes_process_group_setup():
    # se3_diffusion's Experiment (read set 88): `__init__` set up NCCL for its rank, `start_training`
    # keeps `torch.cuda.is_available()` (its DataParallel branch names CUDA devices) and wraps the model
    # in DDP under it; with only the process group moved, Trainium's ranks each trained a copy unwrapped
    src = """
        import os

        import torch
        import torch.distributed as dist
        from torch.nn import DataParallel as DP
        from torch.nn.parallel import DistributedDataParallel as DDP


        class Experiment:
            def __init__(self, model, use_ddp, gpus):
                self.model = model
                self.gpus = gpus
                if use_ddp:
                    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
                    dist.init_process_group(backend="nccl")

            def start_training(self, rank, use_ddp):
                if torch.cuda.is_available():
                    if use_ddp:
                        model = self.model.to(torch.device("cuda", rank))
                        self.model = DDP(model, device_ids=[rank])
                    else:
                        self.model = DP(self.model, device_ids=[f"cuda:{i}" for i in self.gpus])
                else:
                    self.model = self.model.to("cpu")
    """
    fixed = fix_all(src, "experiment.py", unsafe_fixes=True)
    assert 'torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))' in fixed
    assert 'dist.init_process_group(backend="nccl")' in fixed
    left = notes(src, "experiment.py", select=("NRN2",), unsafe_fixes=True)
    assert sum("wrapped in DistributedDataParallel" in n for n in left) == 2, left
