"""Start-up stays light: what a run does not need, it does not import (time is measured in bench/)."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
sys.argv = ["neuron-lint", *json.loads(sys.argv[1])]
from neuron_lint.entry import main
try:
    main()
except SystemExit:
    pass
heavy = ("typer", "rich", "pydantic", "libcst", "neuron_lint.api", "neuron_lint.catalog")
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
    assert "neuron_lint.api" in mods  # it did check the file
    assert not mods & {"rich", "libcst"}
