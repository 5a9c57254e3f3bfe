"""`fix` runs through the same runner as `check`: worker processes, the selection and excludes."""

from __future__ import annotations

import textwrap

import pytest

from neuron_lint.cli.fix import fix_paths
from neuron_lint.config.settings import Settings
from neuron_lint.engine import runner

SCRIPT = textwrap.dedent('''\
    import torch


    def step(model, x):
        torch.cuda.synchronize()
        return model.cuda()(x.cuda())


    if __name__ == "__main__":
        step(None, None)
    ''')
# Some padding, so the fixed files are not all the script alone. The runner keeps small runs in
# one process: `force_pool` sends even these through the worker processes (a 9,000-line padding
# did that by size, at 10-20 s of LibCST work per file).
PADDING = "".join(f"V{i} = {i}\n" for i in range(200))


@pytest.fixture
def force_pool(monkeypatch):
    """Make even these small trees go through the worker processes, and record that they did."""
    calls = []
    real = runner._run_pool

    def spy(pending, workers, *args, **kwargs):
        calls.append((len(pending), workers))
        return real(pending, workers, *args, **kwargs)

    monkeypatch.setattr(runner, "SERIAL_BYTES", 0)
    monkeypatch.setattr(runner, "SERIAL_FILES", 0)
    monkeypatch.setattr(runner, "_run_pool", spy)
    return calls


def _tree(root, n=10):
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (root / f"m{i}.py").write_text(SCRIPT + PADDING)
    (root / "skipped").mkdir()
    (root / "skipped" / "x.py").write_text(SCRIPT)
    (root / "broken.py").write_text("def (:\n")
    return root


def _summary(done):
    return [(d.path.rsplit("/", 1)[-1], d.changed, len(d.applied), len(d.remaining), d.diff.count("\n")) for d in done]


@pytest.mark.slow
def test_parallel_fix_gives_the_serial_result(tmp_path, force_pool):
    a, b = _tree(tmp_path / "a"), _tree(tmp_path / "b")
    serial, serial_errors = fix_paths([str(a)], Settings(), write=False, jobs=1)
    assert not force_pool  # one job: no workers
    parallel, parallel_errors = fix_paths([str(b)], Settings(), write=False, jobs=2)
    assert force_pool and force_pool[-1][1] == 2  # really ran in two worker processes
    assert _summary(serial) == _summary(parallel)
    assert [e.reason for e in serial_errors] == [e.reason for e in parallel_errors]
    assert any("syntax error" in e.reason for e in parallel_errors)  # the broken file is named, the rest fixed
    assert sum(d.changed for d in parallel) == 11


def test_fix_honours_exclude_and_selection(tmp_path, force_pool):
    root = _tree(tmp_path, n=2)
    done, _ = fix_paths([str(root)], Settings(exclude=("skipped",), select=("NRN203",)), write=True, jobs=2)
    assert force_pool and force_pool[-1][1] == 2  # in the worker processes
    assert not any("skipped" in d.path for d in done)
    text = (root / "m0.py").read_text()
    assert "torch.accelerator.synchronize()" in text and ".cuda()" in text  # NRN201 was not selected
    assert "torch.cuda" in (root / "skipped" / "x.py").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["json", "concise"])
def test_check_fix_reports_what_a_fresh_check_reports(tmp_path, cli, fmt):
    """`check --fix` reports each file from the fix's own last analysis (it does not check it
    again): the same findings a `check` run afterwards gives, for fixed, unfixed, broken, skipped
    and manifest files alike."""
    import shutil
    from pathlib import Path

    root = tmp_path / "p"
    shutil.copytree(Path(__file__).resolve().parent.parent / "examples" / "cuda_project", root)
    _tree(root / "more", n=2)
    (root / "setup.py").write_text("import torch\nfrom setuptools import setup\nsetup(install_requires=['flash-attn'])\n")
    (root / "long.py").write_text("import torch\nx = torch.zeros(3).cuda()  # " + "c" * 70 + "\n"
                                  "y = {'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa': torch.zeros(3).cuda(), 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb': 1}\n")
    args = ["--isolated", "--no-cache", "--output-format", fmt, "--unsafe-fixes", "."]
    fixed = cli("check", "--fix", *args, cwd=root)
    after = cli("check", *args, cwd=root)
    assert fixed.returncode == after.returncode == 2, fixed.stderr + after.stderr  # broken.py
    assert "syntax error" in fixed.stderr and "Fixed 15 findings in train.py" in fixed.stdout + fixed.stderr
    if fmt == "json":
        import json

        left = json.loads(after.stdout)
        assert json.loads(fixed.stdout) == left
        assert {"NRN605", "NRN680"} & {f["code"] for f in left}  # the manifest too
    else:
        import re

        def findings(out):
            return [line for line in out.splitlines() if re.match(r"\S+:\d+:\d+: NRN\d+ ", line)]

        assert findings(fixed.stdout) == findings(after.stdout) != []
