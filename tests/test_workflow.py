"""Issue 15, part 1: a ruff user's habits with `check` and `fix`, asserted on what the user sees.

Machine formats keep standard output for their document (also with --fix and --statistics), a
folder you name is checked even inside a gitignored one, nothing checked is said, a file that
cannot be parsed is an item of the JSON output, each file takes its nearest configuration (with
`extend`), `--show-settings`/`--show-files`/`--output-file`, and `fix` lists what is left as
`check` does. In-process (typer's CliRunner), so the quick loop runs them.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from xml.etree import ElementTree as ET

import jsonschema
import pytest
from typer.testing import CliRunner

from neuron_lint.cli import app

DATA = Path(__file__).parent / "data"
CUDA = "import torch\nx = torch.ones(2).cuda()\n"
THREE = "import torch\nx = torch.ones(2).cuda()\ny = x.double()\nif torch.cuda.is_available():\n    pass\n"  # NRN201, NRN301, NRN203


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def run(tmp_path, monkeypatch):
    """``run("check", ...)`` in ``tmp_path`` (a git repository), as the user types it."""
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, list(args), catch_exceptions=False)

    return invoke


def codes(stdout: str) -> list[str]:
    return sorted(line.split()[1] for line in stdout.splitlines() if ".py:" in line)


# ---------------------------------------------------------------- machine formats stay machine-readable
@pytest.mark.parametrize("fmt", ["json", "sarif", "github", "junit"])
def test_check_fix_with_a_machine_format_writes_only_the_document_on_stdout(run, tmp_path, fmt):
    write(tmp_path / "train.py", CUDA + "import flash_attn\n")
    r = run("check", "--fix", "--no-cache", "--output-format", fmt, "train.py")
    assert r.exit_code == 1, r.stdout + r.stderr  # flash_attn is left
    assert "Fixed" not in r.stdout and "Fixed 1 finding in train.py (NRN201)" in r.stderr
    if fmt in ("json", "sarif"):
        json.loads(r.stdout)
    elif fmt == "junit":
        ET.fromstring(r.stdout)
    else:
        assert all(line.startswith("::") for line in r.stdout.splitlines())


def test_statistics_as_sarif_github_or_junit_is_a_usage_error_not_a_text_table(run, tmp_path):
    write(tmp_path / "train.py", CUDA)
    for fmt in ("sarif", "github", "junit"):
        r = run("check", "--statistics", "--output-format", fmt, "train.py")
        assert r.exit_code == 2 and r.stdout == ""
        assert "--statistics is written as text or JSON" in r.stderr


def test_statistics_mark_only_what_fix_would_apply_and_end_with_a_total(run, tmp_path):
    write(tmp_path / "train.py", CUDA + "torch.backends.cudnn.allow_tf32 = True\nimport flash_attn\n")
    r = run("check", "--statistics", "--no-cache", "train.py")
    assert r.stdout.splitlines() == [
        "1\tNRN201\t[*] cuda-call",
        "1\tNRN209\t[ ] cuda-backend-flags",  # its only fix is unsafe
        "1\tNRN603\t[ ] flash-attn",
        "Found 3 findings in 1 file (1 file checked).",
        "1 fixable with `neuron-lint fix` (1 more with `--unsafe-fixes`).",
    ]
    r = run("check", "--statistics", "--unsafe-fixes", "train.py")
    assert "1\tNRN209\t[*] cuda-backend-flags" in r.stdout
    rows = json.loads(run("check", "--statistics", "--output-format", "json", "train.py").stdout)
    assert {r["code"]: (r["fixable"], r["fixable_count"]) for r in rows} == {
        "NRN201": (True, 1), "NRN209": (False, 0), "NRN603": (False, 0)}


def test_only_unsafe_fixes_left_is_not_called_0_fixable(run, tmp_path):
    write(tmp_path / "train.py", "import torch\ntorch.backends.cudnn.allow_tf32 = True\n")
    r = run("check", "--output-format", "concise", "train.py")
    assert "0 fixable" not in r.stdout
    assert "None fixable with `neuron-lint fix` alone; 1 more with `--unsafe-fixes`" in r.stdout


def test_a_file_that_cannot_be_parsed_is_an_item_of_the_json_output(run, tmp_path):
    write(tmp_path / "bad.py", "def f(:\n")
    write(tmp_path / "ok.py", CUDA)
    r = run("check", "--no-cache", "--output-format", "json", ".")
    assert r.exit_code == 2
    data = json.loads(r.stdout)
    jsonschema.validate(data, json.loads((DATA / "neuron-lint-json.schema.json").read_text()))
    error = next(d for d in data if d["filename"] == "bad.py")
    assert error["code"] is None and error["category"] == "error" and error["name"] == "file-error"
    assert error["message"].startswith("syntax error:") and error["location"] == {"row": 1, "column": 7}
    assert [d["code"] for d in data if d["filename"] == "ok.py"] == ["NRN201"]
    missing = json.loads(run("check", "--output-format", "json", "nothere.py").stdout)
    assert missing[0]["filename"] == "nothere.py" and missing[0]["location"] == {"row": 1, "column": 1}


def test_check_fix_names_a_file_it_cannot_parse_once(run, tmp_path):
    write(tmp_path / "bad.py", "def f(:\n")
    r = run("check", "--fix", "--no-cache", "bad.py")
    assert r.exit_code == 2 and r.stderr.count("bad.py:1:7") == 1


# ---------------------------------------------------------------- which files
def test_a_named_folder_inside_a_gitignored_one_is_checked_as_ruff_does(run, tmp_path, monkeypatch):
    write(tmp_path / ".gitignore", "vendored/\n")
    write(tmp_path / "vendored" / "v.py", CUDA)
    write(tmp_path / "vendored" / "sub" / "w.py", CUDA)
    write(tmp_path / "vendored" / ".gitignore", "sub/w.py\n")  # nested ignores still apply inside it
    r = run("check", "--no-cache", "--output-format", "concise", "vendored")
    assert r.exit_code == 1 and "vendored/v.py:2:" in r.stdout and "w.py" not in r.stdout
    monkeypatch.chdir(tmp_path / "vendored")
    r = run("check", "--no-cache", "--output-format", "concise", ".")
    assert "v.py:2:" in r.stdout and "w.py" not in r.stdout
    monkeypatch.chdir(tmp_path)
    r = run("check", "--no-cache", ".")  # a walk from above still skips it
    assert r.exit_code == 0 and "v.py" not in r.stdout


def test_an_empty_folder_says_no_python_files_found(run, tmp_path):
    (tmp_path / "empty").mkdir()
    r = run("check", "empty")
    assert r.exit_code == 0  # as ruff: a warning, not a failure (pre-commit may exclude every file)
    assert "warning: No Python files found under the given paths" in r.stderr
    assert "warning" not in run("check", "-q", "empty").stderr
    r = run("check", "--output-format", "json", "empty")
    assert json.loads(r.stdout) == [] and "No Python files found" in r.stderr


# ---------------------------------------------------------------- configuration, per file
@pytest.fixture
def monorepo(tmp_path):
    write(tmp_path / "pkg_a" / "src" / "train.py", THREE)
    write(tmp_path / "pkg_b" / "src" / "train.py", THREE)
    write(tmp_path / "pkg_a" / "pyproject.toml", """
        [project]
        name = "pkg-a"

        [tool.neuron-lint]
        extend = "../shared/base.toml"
        ignore = ["NRN203"]
    """)
    write(tmp_path / "shared" / "base.toml", 'ignore = ["NRN301"]\n')
    return tmp_path


def test_each_file_takes_its_nearest_configuration_whatever_is_checked_with_it(run, monorepo):
    alone = run("check", "--no-cache", "--output-format", "concise", "pkg_a/src/train.py")
    assert codes(alone.stdout) == ["NRN201"]  # NRN203 ignored here, NRN301 by the base it extends
    together = run("check", "--no-cache", "--output-format", "concise", "pkg_a/src/train.py", "pkg_b/src/train.py")
    a = [line for line in together.stdout.splitlines() if line.startswith("pkg_a/")]
    b = [line for line in together.stdout.splitlines() if line.startswith("pkg_b/")]
    assert codes("\n".join(a)) == ["NRN201"] and codes("\n".join(b)) == ["NRN201", "NRN203", "NRN301"]
    walk = run("check", "--output-format", "concise", ".")  # and from a walk, with the cache
    assert [line for line in walk.stdout.splitlines() if line.startswith("pkg_a/")] == a


def test_a_nested_configuration_excludes_inside_its_own_folder(run, tmp_path):
    write(tmp_path / "pkg" / "neuron-lint.toml", 'extend-exclude = ["generated"]\n')
    write(tmp_path / "pkg" / "generated" / "g.py", CUDA)
    write(tmp_path / "other" / "generated" / "g.py", CUDA)
    r = run("check", "--no-cache", "--output-format", "concise", ".")
    assert "other/generated/g.py" in r.stdout and "pkg/generated" not in r.stdout


def test_extend_errors_name_the_file_and_key(run, tmp_path):
    write(tmp_path / "a.toml", 'extend = "b.toml"\n')
    write(tmp_path / "b.toml", 'extend = "a.toml"\n')
    write(tmp_path / "x.py", CUDA)
    r = run("check", "--config", "a.toml", "x.py")
    assert r.exit_code == 2 and "key 'extend'" in r.stderr and "loop" in r.stderr
    write(tmp_path / "a.toml", 'extend = "missing.toml"\n')
    r = run("check", "--config", "a.toml", "x.py")
    assert r.exit_code == 2 and "'missing.toml': no such file" in r.stderr


def test_a_bad_nested_configuration_stops_the_run_with_its_name(run, tmp_path):
    write(tmp_path / "pkg" / "neuron-lint.toml", 'selec = ["NRN2"]\n')
    write(tmp_path / "pkg" / "m.py", CUDA)
    r = run("check", ".")
    assert r.exit_code == 2 and "neuron-lint.toml: key 'selec': unknown key" in r.stderr and r.stdout == ""


def test_show_settings_and_show_files(run, monorepo):
    r = run("check", "--show-settings", "pkg_a/src/train.py")
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert lines[0] == "Resolved settings for: pkg_a/src/train.py"
    assert lines[1] == "Settings path: pkg_a/pyproject.toml -> shared/base.toml"
    assert 'ignore = ["NRN301", "NRN203"]' in lines and "select = []" in lines
    assert any(line.startswith("rules = [") and '"NRN203"' not in line for line in lines)
    r = run("check", "--show-files", ".")
    assert r.stdout.splitlines() == ["pkg_a/pyproject.toml", "pkg_a/src/train.py", "pkg_b/src/train.py"]
    assert not (monorepo / ".neuron_lint_cache").exists()  # nothing was checked


# ---------------------------------------------------------------- fix, like check --fix
def test_fix_lists_what_is_left_as_check_does(run, tmp_path):
    write(tmp_path / "train.py", CUDA + "import flash_attn\n")
    r = run("fix", "--output-format", "concise", "train.py")
    assert r.exit_code == 1
    assert r.stdout.splitlines()[0] == "Fixed 1 finding in train.py (NRN201)"
    assert any(line.startswith("train.py:") and "NRN603" in line for line in r.stdout.splitlines())
    assert r.stdout.splitlines()[-1] == "Fixed 1 finding in 1 file. 1 finding remains."
    assert "neuron-lint check` lists them" not in r.stdout


def test_output_file_for_check_and_fix(run, tmp_path):
    write(tmp_path / "train.py", CUDA + "import flash_attn\n")
    r = run("check", "--output-format", "json", "--output-file", "out.json", "train.py")
    assert r.exit_code == 1 and r.stdout == ""
    assert {d["code"] for d in json.loads((tmp_path / "out.json").read_text())} == {"NRN201", "NRN603"}
    r = run("fix", "-o", "fixed.txt", "--output-format", "concise", "train.py")
    assert r.exit_code == 1 and r.stdout == ""
    text = (tmp_path / "fixed.txt").read_text()
    assert text.startswith("Fixed 1 finding in train.py (NRN201)\n") and "NRN603" in text
    r = run("check", "-o", str(tmp_path / "no" / "such" / "dir" / "x"), "train.py")
    assert r.exit_code == 2 and "--output-file: cannot write" in r.stderr


# ---------------------------------------------------------------- --add-noqa in manifests
def test_add_noqa_silences_manifest_findings_where_a_comment_is_a_comment(run, tmp_path):
    req = write(tmp_path / "requirements.txt", "--extra-index-url https://download.pytorch.org/whl/cu121\ntorch==2.4.1+cu121  # pinned\nflash-attn  # noqa: NRN685\n")
    env = write(tmp_path / "environment.yml", "dependencies:\n  - pytorch-cuda=12.1\n")
    toml = write(tmp_path / "pyproject.toml", '[project]\nname = "p"\ndependencies = [\n  "torch==2.1.2+cu121",\n]\n')
    cfg = write(tmp_path / "setup.cfg", "[options]\ninstall_requires =\n    flash-attn\n")
    before = toml.read_text()
    r = run("check", "--add-noqa", "--no-cache", ".")
    assert r.exit_code == 0, r.stderr
    assert req.read_text() == ("--extra-index-url https://download.pytorch.org/whl/cu121  # noqa: NRN686\n"
                               "torch==2.4.1+cu121  # pinned  # noqa: NRN685\nflash-attn  # noqa: NRN685, NRN680\n")
    assert env.read_text().endswith("- pytorch-cuda=12.1  # noqa: NRN685\n")
    assert toml.read_text() == before.replace('"torch==2.1.2+cu121",', '"torch==2.1.2+cu121",  # noqa: NRN685')
    assert "# noqa" not in cfg.read_text()  # setuptools would read it as part of the value
    r = run("check", "--no-cache", "--output-format", "concise", ".")
    left = [line.split()[0:2] for line in r.stdout.splitlines() if ": NRN" in line]
    assert left == [["setup.cfg:3:5:", "NRN680"]]  # only setup.cfg's finding is left
    assert run("check", "--add-noqa", ".").stderr.startswith("Added 0 noqa directives")  # idempotent


def test_add_noqa_leaves_a_continued_requirement_alone(run, tmp_path):
    text = "torch==2.1.2+cu121 \\\n    --hash=sha256:abc\n"
    req = write(tmp_path / "requirements.txt", text)
    r = run("check", "--add-noqa", "--no-cache", "requirements.txt")
    assert r.exit_code == 2 and "continues on the next one" in r.stderr
    assert req.read_text() == text
