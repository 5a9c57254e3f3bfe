"""The bundled XLA-path example (examples/xla_project): fixed, it runs on CPU torch with the same losses.

The original runs with a stand-in for PyTorch/XLA on ``sys.path`` (tests/data/fake_torch_xla: the
XLA device is the CPU, ``mark_step`` does nothing, the ``xla`` process group is gloo). The fixed
script runs without it: the device is the current accelerator (the CPU here) and the process
group the backend registered for it (gloo). Both run under torchrun with two workers.
"""

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from neuron_lint.config.settings import Settings
from neuron_lint.fixes.apply import fix_text

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "xla_project"
FAKE_XLA = Path(__file__).resolve().parent / "data" / "fake_torch_xla"


def _legacy_left(text: str) -> set[str]:
    """Names and strings of the XLA path left in the code (the docstring may talk about them)."""
    tree = ast.parse(text)
    left = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            left.update(a.name for a in n.names if a.name.startswith("torch_xla"))
        elif isinstance(n, ast.ImportFrom) and (n.module or "").startswith("torch_xla"):
            left.add(n.module)
        elif isinstance(n, ast.Name) and n.id in ("xm", "pl", "xr", "xmp", "torch_xla"):
            left.add(n.id)
        elif isinstance(n, ast.Constant) and n.value in ("xla", "xla://", "XLA_USE_BF16", "PJRT_DEVICE"):
            left.add(n.value)
    return left


def _fixed(text: str) -> str:
    return fix_text(text, "train.py", Settings(unsafe_fixes=True)).text


def test_fix_leaves_no_torch_xla_and_is_stable():
    text = (EXAMPLE / "train.py").read_text()
    fixed = _fixed(text)
    ast.parse(fixed)
    assert _legacy_left(text) and not _legacy_left(fixed)
    assert "opt.step()" in fixed and "dist.barrier()" in fixed
    assert 'int(os.environ.get("LOCAL_RANK", 0)) == 0' in fixed  # xm.save / is_master_ordinal: local rank
    assert 'if int(os.environ.get("RANK", 0)) == 0:\n            print(' in fixed  # master_print: global rank
    assert "x, y = x.to(device), y.to(device)" in fixed
    assert "torch.accelerator.synchronize()" in fixed  # the timer keeps its wait
    assert _fixed(fixed) == fixed


def test_the_readme_command_fixes_the_example_in_the_repository():
    # examples/xla_project/README.md: `neuron-lint fix --unsafe-fixes examples/xla_project`, run in a
    # clone of neuron-lint. The project-wide scan for a native Neuron path must stop at the example's
    # own project, not reach neuron-lint's source (which names `is_neuron_available`).
    from neuron_lint.cli.typer_app import app
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["fix", "--unsafe-fixes", "--diff", "--no-cache", str(EXAMPLE)])
    assert "Would fix 16 findings in 1 file" in result.output, result.output


def test_safe_fixes_alone_keep_what_needs_a_person():
    fixed = fix_text((EXAMPLE / "train.py").read_text(), "train.py", Settings()).text
    ast.parse(fixed)
    assert "xmp.spawn" in fixed  # the launcher change is unsafe
    assert "xm.save" in fixed  # tensors keep their device: unsafe
    assert 'os.environ["XLA_USE_BF16"]' in fixed  # deleting it changes precision: unsafe


def _run(script: Path, workdir: Path, with_fake_xla: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PJRT_", "XLA_", "TORCHELASTIC_"))}
    env["PYTHONPATH"] = str(FAKE_XLA) if with_fake_xla else ""
    env["OMP_NUM_THREADS"] = "1"
    out = workdir / "losses.json"
    # --standalone: the rendezvous store binds a free port itself (a port picked here first could be
    # taken by another test's processes before torchrun binds it)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           str(script), "--out", str(out), "--checkpoint", str(workdir / "model.pt")]
    for _ in range(3):
        proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=300)
        # torch's gloo group now and then aborts a rank as the interpreter exits, after the work is
        # done ("terminate called without an active exception", exit -6): that run says nothing
        # about the program, so it is run again; any other failure fails the test
        if proc.returncode == 0 or "terminate called without an active exception" not in proc.stderr:
            break
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {"losses": json.loads(out.read_text())["losses"], "stdout": proc.stdout, "stderr": proc.stderr}


@pytest.mark.slow
def test_fixed_example_trains_like_the_original(tmp_path):
    pytest.importorskip("torch")
    original_dir, fixed_dir = tmp_path / "original", tmp_path / "fixed"
    shutil.copytree(EXAMPLE, original_dir)
    shutil.copytree(EXAMPLE, fixed_dir)
    cli = subprocess.run([sys.executable, "-m", "neuron_lint", "fix", "--isolated", "--unsafe-fixes", str(fixed_dir)],
                         capture_output=True, text=True, cwd=tmp_path)
    assert cli.returncode in (0, 1), cli.stdout + cli.stderr
    assert not _legacy_left((fixed_dir / "train.py").read_text())
    before = _run(original_dir / "train.py", original_dir, with_fake_xla=True)
    after = _run(fixed_dir / "train.py", fixed_dir, with_fake_xla=False)
    assert len(before["losses"]) == 3 * 4  # 3 epochs, 32 samples per rank in batches of 8
    assert after["losses"] == before["losses"]
    assert (fixed_dir / "model.pt").exists()
    assert before["stdout"].count("epoch ") == after["stdout"].count("epoch ") == 3  # printed once: global rank 0
