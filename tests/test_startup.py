"""Start-up stays light: what a run does not need, it does not import (time is measured in bench/)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PROBE = """
import json, sys
sys.argv = ["neuron-lint", *json.loads(sys.argv[1])]
from neuron_lint.cli.entry import main
try:
    main()
except SystemExit:
    pass
heavy = ("typer", "rich", "pydantic", "libcst", "neuron_lint.engine.pipeline", "neuron_lint.catalog.loading")
sys.stderr.write("LOADED " + json.dumps(sorted(m for m in heavy if m in sys.modules)) + "\\n")
"""


def loaded(args, cwd):
    r = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], cwd=cwd, capture_output=True, text=True, timeout=120)
    line = next(l for l in r.stderr.splitlines() if l.startswith("LOADED "))
    return r.stdout, set(json.loads(line[len("LOADED "):]))


def test_version_imports_no_framework_and_no_engine(tmp_path):
    out, mods = loaded(["--version"], tmp_path)
    assert out.startswith("neuron-lint ")
    assert mods == set()


def test_concise_check_of_one_file_needs_no_rich_and_no_libcst(tmp_path):
    f = tmp_path / "train.py"
    f.write_text("import torch\nx = torch.ones(2).cuda()\n")
    out, mods = loaded(["check", "--no-cache", "--output-format", "concise", str(f)], tmp_path)
    assert "NRN201" in out
    assert "neuron_lint.engine.pipeline" in mods  # it did check the file
    assert not mods & {"rich", "libcst"}


def test_planning_every_kind_of_fix_needs_no_libcst(tmp_path):
    # a check plans the fixes of its findings (for `[*]` and the notes) on the ast alone: the fixers'
    # modules load libcst only where a rewrite is written (a device_idiom import slipped once)
    f = tmp_path / "train.py"
    f.write_text(
        "import torch\n"
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "x = torch.ones(2, device='cuda')\n"
        "if x.is_cuda:\n    torch.cuda.synchronize()\n"
        "with torch.cuda.amp.autocast():\n    y = x * 2\n"
        "scaler = torch.cuda.amp.GradScaler()\n"
        "torch.distributed.init_process_group(backend='nccl')\n"
        "buf = torch.cuda.FloatTensor(2, 3)\n"
        "torch.backends.cudnn.benchmark = True\n"
    )
    out, mods = loaded(["check", "--no-cache", "--output-format", "concise", str(f)], tmp_path)
    assert {"NRN202", "NRN203", "NRN205", "NRN206", "NRN208"} <= set(out.split()) | {
        w.rstrip(":") for w in out.split()}
    assert "libcst" not in mods


VIA_PARSER = """
import sys
from neuron_lint.cli import app
sys.argv = ["neuron-lint", *sys.argv[1:]]
app()
"""


@pytest.mark.parametrize("args", [
    ["check", "bad.py"],
    ["check", "--no-cache", "-q", "--force-exclude", "."],
    ["check", "--no-show-source", "--exit-zero", "bad.py", "broken.py"],
    ["check", "--isolated", "--no-respect-gitignore", "ok.py"],
    ["check", "missing.py"],
])
def test_the_check_shortcut_answers_exactly_like_the_parser(tmp_path, cli, args):
    """`check` with only paths and flags skips typer's set-up; the answer must not change."""
    (tmp_path / "bad.py").write_text("import torch\nx = torch.ones(2).cuda()\ny = x.double()\n")
    (tmp_path / "ok.py").write_text("import torch\n")
    (tmp_path / "broken.py").write_text("def f(:\n")
    fast = cli(*args, cwd=tmp_path)
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    slow = subprocess.run([sys.executable, "-c", VIA_PARSER, *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert (fast.returncode, fast.stdout, fast.stderr) == (slow.returncode, slow.stdout, slow.stderr)


def test_the_check_shortcut_leaves_pydantic_alone(tmp_path):
    f = tmp_path / "train.py"
    f.write_text("import torch\nx = torch.ones(2).cuda()\n")
    out, mods = loaded(["check", "--no-cache", str(f)], tmp_path)
    assert "NRN201" in out and "pydantic" not in mods
