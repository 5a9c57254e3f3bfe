"""`check -` and `fix -`: source from standard input, named by --stdin-filename (editors, pipelines)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from neuron_lint.cli.stdin import check_stdin, fix_stdin
from neuron_lint.config.settings import Settings

CUDA = "import torch\nx = torch.ones(1).cuda()\n"


def test_check_reads_standard_input(cli, tmp_path: Path):
    run = cli("check", "--output-format", "concise", "-", input=CUDA, cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    assert run.stdout.startswith("-:2:19: NRN201")
    full = cli("check", "-", input=CUDA, cwd=tmp_path)
    assert "2 | x = torch.ones(1).cuda()" in full.stdout  # the source line is the one read from stdin


def test_stdin_filename_names_the_text_and_picks_its_configuration(cli, tmp_path: Path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "pyproject.toml").write_text('[tool.neuron-lint]\nignore = ["NRN201"]\n')
    (tmp_path / "pyproject.toml").write_text("[tool.neuron-lint]\n")
    text = CUDA + "torch.cuda.synchronize()\n"
    # pkg/a.py does not exist: only its name is used
    run = cli("check", "--output-format", "json", "--stdin-filename", "pkg/a.py", "-", input=text, cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    items = json.loads(run.stdout)
    assert [(i["filename"], i["code"]) for i in items] == [("pkg/a.py", "NRN203")]  # NRN201 ignored by pkg's config
    outside = cli("check", "--output-format", "json", "--stdin-filename", "b.py", input=text, cwd=tmp_path)
    assert sorted(i["code"] for i in json.loads(outside.stdout)) == ["NRN201", "NRN203"]


def test_per_file_ignores_and_force_exclude_match_the_stdin_filename(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ignored = Settings(per_file_ignores=(("tests/*", ("NRN201",)),))
    assert check_stdin(CUDA.encode(), "tests/t.py", ignored).findings == []
    assert [f.code for f in check_stdin(CUDA.encode(), "src/t.py", ignored).findings] == ["NRN201"]
    excluded = Settings(exclude=("vendored",), force_exclude=True)
    assert check_stdin(CUDA.encode(), "vendored/t.py", excluded).findings == []
    out, err = io.BytesIO(), io.StringIO()
    assert fix_stdin(CUDA.encode(), "vendored/t.py", excluded, diff=False, quiet=False, out=out, err=err) == 0
    assert out.getvalue() == CUDA.encode()  # an excluded file passes through unchanged


def test_fix_prints_the_fixed_source_and_nothing_else(cli, tmp_path: Path):
    run = cli("fix", "-", input=CUDA, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout == (
        "import torch\n\nDEVICE = (\n    torch.accelerator.current_accelerator()\n"
        "    if torch.accelerator.is_available()\n    else torch.device(\"cpu\")\n)\n\n"
        "x = torch.ones(1).to(DEVICE)\n"
    )
    assert "Fixed 1 finding" in run.stderr
    quiet = cli("fix", "--quiet", "-", input=CUDA, cwd=tmp_path)
    assert quiet.stdout == run.stdout and quiet.stderr == ""
    diff = cli("fix", "--diff", "-", input=CUDA, cwd=tmp_path)
    assert diff.returncode == 1 and "-x = torch.ones(1).cuda()" in diff.stdout
    via_check = cli("check", "--fix", "-", input=CUDA, cwd=tmp_path)
    assert via_check.stdout == run.stdout


def test_fix_of_broken_code_gives_the_text_back_unchanged(tmp_path: Path):
    broken = b"import torch\nx = (\n"
    out, err = io.BytesIO(), io.StringIO()
    assert fix_stdin(broken, "-", Settings(), diff=False, quiet=False, out=out, err=err) == 2
    assert out.getvalue() == broken
    assert err.getvalue().startswith("error: -:2:5: syntax error")


def test_fix_keeps_line_endings_and_reports_what_is_left(tmp_path: Path):
    text = (CUDA + "y = torch.ones(1, dtype=torch.float64)\n").replace("\n", "\r\n").encode()
    out, err = io.BytesIO(), io.StringIO()
    code = fix_stdin(text, "t.py", Settings(), diff=False, quiet=False, out=out, err=err)
    fixed = out.getvalue()
    assert b".to(DEVICE)\r\n" in fixed and b"\n" not in fixed.replace(b"\r\n", b"")
    assert code == 1 and "left" in err.getvalue()  # float64 has only an unsafe fix


def test_a_notebook_on_standard_input(cli, tmp_path: Path):
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# Demo"]},
                    {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                     "source": ["import torch\n", "torch.cuda.synchronize()"]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    text = json.dumps(nb, indent=1) + "\n"
    run = cli("check", "--output-format", "concise", "--stdin-filename", "demo.ipynb", "-", input=text, cwd=tmp_path)
    assert run.stdout.startswith("demo.ipynb:cell 2:2:1: NRN203"), run.stdout + run.stderr
    fixed = cli("fix", "--stdin-filename", "demo.ipynb", "-", input=text, cwd=tmp_path)
    assert json.loads(fixed.stdout)["cells"][1]["source"] == ["import torch\n", "torch.accelerator.synchronize()"]


def test_a_manifest_on_standard_input(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = check_stdin(b"apex==0.1\ntorch\n", "requirements.txt", Settings())
    assert [f.path for f in result.findings] == ["requirements.txt"] and result.findings[0].line == 1


def test_dash_with_other_paths_is_a_usage_error(cli, tmp_path: Path):
    (tmp_path / "a.py").write_text("x = 1\n")
    run = cli("check", "-", "a.py", input=CUDA, cwd=tmp_path)
    assert run.returncode == 2 and "cannot be combined with other paths" in run.stderr
    add = cli("check", "--add-noqa", "-", input=CUDA, cwd=tmp_path)
    assert add.returncode == 2 and "--add-noqa" in add.stderr
