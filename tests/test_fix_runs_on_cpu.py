"""Programs fixed by neuron-lint still run on a CPU-only host and give the results the original gives.

The programs in tests/data/cpu_runs/ are our own, written in the CUDA style of two common patterns:
a sequence predictor (LSTM cells, `.double()` model and float64 data, LBFGS) and a loader that
prefetches batches to the GPU on a side stream. Each is fixed (safe, and with --unsafe-fixes); the
result must parse and a second fix must change nothing. The ORIGINAL runs with CUDA mapped to the
CPU by tests/data/cpu_runs/cuda_on_cpu.py (so its CUDA branches run), the FIXED one runs without
any stand-in, and their printed output must be identical: losses to the printed 12 decimals,
batches value for value.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from neuron_lint.config.settings import Settings
from neuron_lint.fixes.apply import fix_text

DATA = Path(__file__).resolve().parent / "data" / "cpu_runs"
SHIM = DATA / "cuda_on_cpu.py"
#: program -> (its arguments, the CUDA calls the original must make under the shim)
PROGRAMS = {
    "seq_predict.py": (["--steps", "2"], {"Module.cuda"}),
    "prefetch.py": ([], {"Stream", "stream", "current_stream", "wait_stream", "Tensor.cuda"}),
}
MODES = {"safe": False, "unsafe": True}


def settings(unsafe: bool) -> Settings:
    return Settings(unsafe_fixes=unsafe, min_torch="2.13")


def fixed_text(name: str, unsafe: bool) -> str:
    return fix_text((DATA / name).read_text(), name, settings(unsafe)).text


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", PROGRAMS)
def test_fix_parses_is_idempotent_and_leaves_no_cuda_call(name, mode):
    original = (DATA / name).read_text()
    result = fix_text(original, name, settings(MODES[mode]))
    assert result.text != original and result.applied
    ast.parse(result.text)
    again = fix_text(result.text, name, settings(MODES[mode]))
    assert again.text == result.text and not again.applied, f"a second fix changed:\n{result.text}"
    assert cuda_uses(original) and not cuda_uses(result.text), cuda_uses(result.text)


def cuda_uses(text: str) -> list[str]:
    """The code's `torch.cuda` references, `.cuda()` calls and "cuda" strings, docstrings aside.

    A comparison with "cuda" (`device.type == "cuda"`) is not counted: a fix may keep it (on a GPU
    it still picks the CUDA path, elsewhere the plain one runs); the runs below check what it does.
    """
    found, compared = [], set()
    for node in ast.walk(ast.parse(text)):  # breadth first: a comparison before its operands
        if isinstance(node, ast.Compare):
            compared.update(id(c) for c in [node.left, *node.comparators])
        elif isinstance(node, ast.Attribute) and node.attr == "cuda":
            found.append(ast.unparse(node))
        elif isinstance(node, ast.Constant) and node.value == "cuda" and id(node) not in compared:
            found.append(repr(node.value))
    return found


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    r = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def shim_calls(stderr: str) -> set[str]:
    m = re.search(r"cuda-on-cpu calls: \{(.*)\}", stderr)
    assert m, stderr
    return set(re.findall(r"'([\w.]+)': \d+", m.group(1)))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Each original's output with its CUDA branches taken, CUDA mapped to the CPU."""
    pytest.importorskip("torch")
    out = {}
    for name, (args, needed) in PROGRAMS.items():
        r = run([str(SHIM), str(DATA / name), *args], tmp_path_factory.mktemp("ref"))
        assert needed <= shim_calls(r.stderr), r.stderr  # the CUDA path really ran
        out[name] = r.stdout
    return out


@pytest.fixture(scope="module")
def fixed_runs(tmp_path_factory):
    """Each fixed program's output on CPU-only torch, with no stand-in."""
    pytest.importorskip("torch")
    out = {}
    for name, (args, _) in PROGRAMS.items():
        for mode, unsafe in MODES.items():
            folder = tmp_path_factory.mktemp(mode)
            (folder / name).write_text(fixed_text(name, unsafe))
            out[name, mode] = run([name, *args], folder).stdout
    return out


def losses(output: str) -> list[float]:
    return [float(v) for v in re.findall(r"loss (\d+\.\d+)", output)]


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, mode",
    [
        ("seq_predict.py", "safe"),
        ("prefetch.py", "safe"),
        ("prefetch.py", "unsafe"),
    ],
)
def test_fixed_program_prints_what_the_original_prints(reference, fixed_runs, name, mode):
    want, got = reference[name], fixed_runs[name, mode]
    assert want.strip(), want
    if name == "seq_predict.py":
        assert len(losses(want)) >= 8  # 2 LBFGS steps, each several closures and a test loss
    else:
        assert re.findall(r"^batch \d+ ", want, re.MULTILINE) and "batches 3" in want
    assert got == want


@pytest.mark.slow
def test_unsafe_float32_sequence_prediction_stays_close_to_the_float64_run(reference, fixed_runs):
    """What the unsafe run does instead of matching: it trains in float32, near the float64 losses."""
    want, got = reference["seq_predict.py"], fixed_runs["seq_predict.py", "unsafe"]
    assert "dtype torch.float64" in want and "dtype torch.float32" in got
    assert losses(got) == pytest.approx(losses(want), rel=1e-3)


# A module that never moves anything to a device: NRN301 keeps its host-made float64 tensors (its
# note: "it stays on the CPU, where float64 is exact") but still rewrites the model's `.double()`,
# so the fixed module multiplies a float32 model with float64 input. pytorch/examples'
# time_sequence_prediction/train.py has this shape (`seq.double()`, data from `torch.from_numpy`).
HOST_DOUBLE = """
import torch
m = torch.nn.Linear(2, 1)
m.double()
x = torch.zeros(1, 2, dtype=torch.double)
y = m(x)
"""


def test_unsafe_float64_fix_keeps_a_host_only_module_consistent():
    """A module that never moves tensors keeps all its float64 (rewriting `m.double()` alone mixed dtypes)."""
    torch = pytest.importorskip("torch")
    src = textwrap.dedent(HOST_DOUBLE).lstrip("\n")
    fixed = fix_text(src, "train.py", settings(True)).text
    ast.parse(fixed)
    torch.manual_seed(0)
    namespace: dict = {"__name__": "__main__"}
    exec(compile(fixed, "<fixed>", "exec"), namespace)  # noqa: S102 - this file's own snippet
    torch.manual_seed(0)
    want: dict = {"__name__": "__main__"}
    exec(compile(src, "<original>", "exec"), want)  # noqa: S102
    assert namespace["y"].dtype == namespace["x"].dtype
    assert torch.allclose(namespace["y"].double(), want["y"], rtol=1e-6)


# pytorch-yolo-v3's and FairMOT's loaders: an indexed CUDA device as the place to restore tensors.
# As `f"{DEVICE.type}:0"` it was "cpu:0" on a CPU-only host, which `torch.load` cannot restore to.
INDEXED_LOAD = """
import torch


def load(path, rank):
    a = torch.load(path, map_location="cuda:0")
    b = torch.load(path, map_location=f"cuda:{rank}")
    return a, b


if __name__ == "__main__":
    load("ck.pt", 0)
"""


def test_checkpoint_loaded_onto_an_indexed_cuda_device_loads_on_the_cpu(tmp_path):
    torch = pytest.importorskip("torch")
    fixed = fix_text(textwrap.dedent(INDEXED_LOAD).lstrip("\n"), "load.py", settings(False)).text
    assert "cuda" not in fixed, fixed
    path = tmp_path / "ck.pt"
    torch.save({"w": torch.arange(3.0)}, path)
    namespace: dict = {"__name__": "load"}
    exec(compile(fixed, "<fixed>", "exec"), namespace)  # noqa: S102 - this file's own snippet
    for loaded in namespace["load"](str(path), 0):
        assert loaded["w"].device.type == "cpu" and loaded["w"].tolist() == [0.0, 1.0, 2.0]
