"""The bundled CUDA example project, rewritten by `neuron-lint fix`, runs on CPU-only torch and
computes what the original computes when CUDA is mapped to the CPU (the CPU reference).

The reference runs the ORIGINAL, unfixed sources under a small shim that sends CUDA devices to the
CPU; it shares no code with the fixers, so a rewrite that changed numerics would show up here.
"""

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "cuda_project"

CPU_SHIM = r'''
import runpy, sys, torch
import torch.distributed as dist

def _cpu(a):
    if isinstance(a, str) and a.startswith("cuda"):
        return "cpu"
    if isinstance(a, torch.device) and a.type == "cuda":
        return torch.device("cpu")
    return a

_to = torch.Tensor.to
torch.Tensor.to = lambda self, *a, **k: _to(self, *map(_cpu, a), **{n: _cpu(v) for n, v in k.items()})
torch.Tensor.cuda = lambda self, device=None, non_blocking=False, **k: self
torch.nn.Module.cuda = lambda self, device=None: self
torch.cuda.synchronize = lambda *a, **k: None

# torch.cuda.amp.autocast and GradScaler are left as they are: on a host without CUDA they
# switch themselves off, as the fixed program's AMP (enabled only off the CPU) does there
_init = dist.init_process_group
dist.init_process_group = lambda backend=None, *a, **k: _init("gloo" if backend == "nccl" else backend, *a, **k)

script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, ".")
runpy.run_path(script, run_name="__main__")
'''

RESULT = re.compile(r"steps=(\d+) loss=([\d.]+) acc=([\d.]+)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(args, cwd, env=None):
    full = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1", **(env or {})}
    for attempt in range(2):
        if "MASTER_PORT" in full:
            full["MASTER_PORT"] = str(free_port())  # another process may grab a port between the probe and the bind
        r = subprocess.run([sys.executable, *args], cwd=cwd, env=full, capture_output=True, text=True, timeout=300)
        if r.returncode == 0 or "MASTER_PORT" not in full:
            break
    assert r.returncode == 0, r.stdout + r.stderr
    m = RESULT.search(r.stdout)
    assert m, r.stdout
    return m.groups()


@pytest.fixture(scope="module")
def fixed_project(tmp_path_factory):
    from conftest import run_cli

    root = tmp_path_factory.mktemp("proj")
    original, fixed = root / "original", root / "fixed"
    shutil.copytree(EXAMPLE, original)
    shutil.copytree(EXAMPLE, fixed)
    r = run_cli("fix", str(fixed))
    assert r.returncode in (0, 1), r.stdout + r.stderr
    assert "Fixed" in r.stdout
    (root / "shim.py").write_text(CPU_SHIM)
    return root


def test_fixed_example_no_longer_needs_cuda(fixed_project):
    train = (fixed_project / "fixed" / "train.py").read_text()
    assert ".cuda(" not in train and '"cuda"' not in train and '"nccl"' not in train
    assert "torch.accelerator.current_accelerator()" in train


@pytest.fixture(scope="module")
def cpu_reference(fixed_project):
    """The original sources, CUDA mapped to the CPU by the shim (world size 1 gives the same numbers)."""
    return run([str(fixed_project / "shim.py"), "train.py", "--steps", "3"], fixed_project / "original")


@pytest.mark.parametrize("distributed", [False, True], ids=["single", "torchrun-env"])
def test_fixed_example_runs_on_cpu_like_the_reference(fixed_project, cpu_reference, distributed):
    env = {}
    if distributed:
        env = {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "0"}
    got = run(["train.py", "--steps", "3"], fixed_project / "fixed", env)
    assert got == cpu_reference
    assert got[0] == "3"
