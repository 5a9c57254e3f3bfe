"""The fixes as a LibCST codemod (`python -m libcst.tool codemod -x neuron_lint.codemod.DeviceAgnostic`).

The codemod must rewrite exactly as `neuron-lint fix` does: it is the same implementation
(`neuron_lint.fixes.apply.fix_text`), with the settings `neuron-lint fix FILE` would use.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest

libcst = pytest.importorskip("libcst")
from libcst.codemod import CodemodContext, SkipFile  # noqa: E402

from neuron_lint.codemod import DeviceAgnostic  # noqa: E402
from neuron_lint.config.settings import Settings  # noqa: E402
from neuron_lint.fixes import apply as fixing  # noqa: E402

SCRIPT = "import torch\n\nmodel = Net().cuda()\ntorch.cuda.synchronize()\n"
COMMAND = [sys.executable, "-m", "libcst.tool", "codemod", "--no-format", "--hide-progress"]


def run_codemod(args, cwd):
    r = subprocess.run([*COMMAND, *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def transform(code: str, filename: str, **args) -> str:
    codemod = DeviceAgnostic(CodemodContext(filename=filename), **args)
    return codemod.transform_module(libcst.parse_module(code)).code


@pytest.mark.slow
def test_libcst_tool_rewrites_like_neuron_lint_fix(tmp_path, cli):
    (tmp_path / "by_codemod").mkdir()
    (tmp_path / "by_fix").mkdir()
    a, b = tmp_path / "by_codemod" / "train.py", tmp_path / "by_fix" / "train.py"
    a.write_text(SCRIPT)
    b.write_text(SCRIPT)
    run_codemod(["-x", "neuron_lint.codemod.DeviceAgnostic", str(a)], tmp_path)
    assert cli("fix", "-q", str(b), cwd=tmp_path).returncode in (0, 1)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_text() != SCRIPT and "Net().to(DEVICE)" in a.read_text()
    assert "torch.accelerator.synchronize()" in a.read_text()


@pytest.mark.slow
def test_libcst_tool_codemod_arguments(tmp_path):
    f = tmp_path / "train.py"
    f.write_text(SCRIPT)
    run_codemod(["-x", "neuron_lint.codemod.DeviceAgnostic", "--device", "neuron", str(f)], tmp_path)
    assert 'model = Net().to("neuron")' in f.read_text()
    assert "DEVICE" not in f.read_text()
    g = tmp_path / "mem.py"
    g.write_text("import torch\n\ntorch.cuda.empty_cache()\n")
    run_codemod(["-x", "neuron_lint.codemod.DeviceAgnostic", "--min-torch", "2.6", str(g)], tmp_path)
    assert "torch.cuda.empty_cache()" in g.read_text()  # a 2.9 API: not for code that must run on 2.6
    run_codemod(["-x", "neuron_lint.codemod.DeviceAgnostic", str(g)], tmp_path)
    assert "torch.accelerator.empty_cache()" in g.read_text()  # nothing declared: TorchNeuron's 2.13
    r = subprocess.run([*COMMAND, "-x", "neuron_lint.codemod.DeviceAgnostic", "--min-torch", "two", str(g)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "--min-torch" in r.stderr


@pytest.mark.slow
def test_libcst_tool_finds_it_through_a_codemod_config(tmp_path):
    """Without -x, libcst.tool looks commands up under the `modules` of .libcst.codemod.yaml."""
    (tmp_path / ".libcst.codemod.yaml").write_text("modules:\n  - neuron_lint\n")
    f = tmp_path / "train.py"
    f.write_text(SCRIPT)
    run_codemod(["codemod.DeviceAgnostic", str(f)], tmp_path)
    assert f.read_text() == fixing.fix_text(SCRIPT, str(f)).text


def test_transform_shares_fix_text(tmp_path, monkeypatch):
    calls = []
    real = fixing.fix_text

    def spy(text, path="<string>", settings=None, *args, **kwargs):
        calls.append((text, path, settings))
        return real(text, path, settings, *args, **kwargs)

    monkeypatch.setattr(fixing, "fix_text", spy)
    path = str(tmp_path / "train.py")
    out = transform(SCRIPT, path)
    assert out == real(SCRIPT, path).text
    ((text, shown, settings),) = calls
    assert text == SCRIPT and os.path.abspath(shown) == path
    # As `neuron-lint fix` would for this file: nothing around it declares torch, so TorchNeuron's 2.13.
    assert (settings.device, settings.min_torch, settings.unsafe_fixes) == ("accelerator", "2.13", False)


def test_transform_arguments_override_the_settings(tmp_path):
    path = str(tmp_path / "train.py")
    assert 'Net().to("neuron")' in transform(SCRIPT, path, device="neuron")
    src = "import torch\n\ntorch.cuda.empty_cache()\n"
    assert "torch.accelerator.empty_cache()" in transform(src, path, min_torch="2.9")
    flags = "import torch\n\ntorch.backends.cuda.matmul.allow_tf32 = True\nx = torch.ones(2).cuda()\n"
    safe, unsafe = transform(flags, path), transform(flags, path, unsafe_fixes=True)
    assert "allow_tf32" in safe and "allow_tf32" not in unsafe and "set_float32_matmul_precision" in unsafe
    assert unsafe == fixing.fix_text(flags, path, Settings(unsafe_fixes=True)).text


def test_nothing_to_fix_skips_the_file(tmp_path):
    with pytest.raises(SkipFile):
        transform("import torch\n\nx = torch.ones(2)\n", str(tmp_path / "ok.py"))


def test_project_configuration_is_read(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.neuron-lint]\ndevice = "neuron"\n')
    assert 'Net().to("neuron")' in transform(SCRIPT, str(tmp_path / "train.py"))
    assert "DEVICE" in transform(SCRIPT, str(tmp_path / "train.py"), device="accelerator")


def test_add_args_declares_the_options():
    parser = argparse.ArgumentParser()
    DeviceAgnostic.add_args(parser)
    args = vars(parser.parse_args(["--device", "neuron", "--unsafe-fixes", "--min-torch", "2.9"]))
    assert args == {"device": "neuron", "unsafe_fixes": True, "min_torch": "2.9"}
    assert vars(parser.parse_args([])) == {"device": None, "unsafe_fixes": None, "min_torch": None}
    with pytest.raises(SystemExit):
        parser.parse_args(["--device", "cuda"])


def test_force_excluded_files_are_skipped(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.neuron-lint]\nforce-exclude = true\nextend-exclude = ["gen_*.py"]\n')
    gen, kept = tmp_path / "gen_model.py", tmp_path / "train.py"
    gen.write_text(SCRIPT)
    kept.write_text(SCRIPT)
    with pytest.raises(SkipFile):
        transform(SCRIPT, str(gen))
    assert "DEVICE" in transform(SCRIPT, str(kept))
