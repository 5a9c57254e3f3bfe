"""neuron-lint reads code and never runs it: not the files it checks, not the modules beside them,
and nothing in its configuration.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from neuron_lint.api import check_paths
from neuron_lint.config.settings import Settings

# Each file, if imported or run, leaves evidence and then ends the process in a different way.
SIDE_EFFECTS = {
    "pkg/__init__.py": "import sys\n{mark}\nsys.exit(3)\n",
    "pkg/__main__.py": "{mark}\nraise SystemExit('ran __main__')\n",
    "conftest.py": "{mark}\nimport os\nos._exit(4)\n",
    "sitecustomize.py": "{mark}\n",
    "usercustomize.py": "{mark}\n",
    "setup.py": (
        "{mark}\nimport os\nos.system('touch ' + {marker_dir!r} + '/setup-system')\n"
        "from setuptools import setup\nsetup(name='x', install_requires=['flash-attn'])\n"
    ),
    "train.py": "import torch\n{mark}\nx = torch.ones(1).cuda()\nimport os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
    "forever.py": "{mark}\nwhile True:\n    pass\n",
    "stub.pyi": "{mark}\n",
    "eval_me.py": "__import__('os').system('touch ' + {marker_dir!r} + '/eval-system')\n",
}


def _plant(root: Path, marker_dir: Path, files: dict[str, str]) -> None:
    for name, template in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        mark = f"open({str(marker_dir / name.replace('/', '_'))!r}, 'w').write('ran')"
        path.write_text(template.format(mark=mark, marker_dir=str(marker_dir)))


def _evidence(marker_dir: Path) -> list[str]:
    return sorted(p.name for p in marker_dir.iterdir())


@pytest.fixture
def planted(tmp_path):
    project, markers = tmp_path / "project", tmp_path / "markers"
    project.mkdir()
    markers.mkdir()
    _plant(project, markers, SIDE_EFFECTS)
    return project, markers


def test_the_planted_files_do_run_when_python_runs_them(planted):
    """Control: the markers work, so their absence below means something."""
    project, markers = planted
    subprocess.run([sys.executable, str(project / "pkg" / "__init__.py")], cwd=project, timeout=60)
    assert _evidence(markers) == ["pkg___init__.py"]


def test_checking_files_with_side_effects_runs_none_of_them(planted):
    project, markers = planted
    result = check_paths([str(project)], Settings(), jobs=1)
    assert _evidence(markers) == []
    codes = {(Path(f.path).name, f.code) for f in result.findings}
    assert ("train.py", "NRN201") in codes  # read, and the finding reported
    assert ("setup.py", "NRN680") in codes  # setup.py is read as data (its install_requires)
    assert result.errors == []


@pytest.mark.slow
@pytest.mark.parametrize("entry", ["module", "script"])
def test_the_cli_in_a_hostile_checkout_imports_nothing_from_it(planted, entry):
    """Run inside the checkout, where `python -m` puts the working directory first on sys.path."""
    project, markers = planted
    shadows = {f"{name}.py": "{mark}\n" for name in ("json", "ast", "tokenize", "fnmatch", "tomllib", "typer", "pathspec", "difflib", "tempfile", "hashlib")}
    shadows["rich/__init__.py"] = "{mark}\n"
    shadows["click/__init__.py"] = "{mark}\n"
    _plant(project, markers, shadows)
    control = subprocess.run([sys.executable, "-c", "import json"], cwd=project, timeout=60)
    assert control.returncode == 0 and _evidence(markers) == ["json.py"]  # the shadow works
    (markers / "json.py").unlink()

    if entry == "module":
        cmd = [sys.executable, "-m", "neuron_lint"]
    else:
        script = shutil.which("neuron-lint", path=str(Path(sys.executable).parent))
        if script is None:
            pytest.skip("neuron-lint is not installed as a command next to this Python")
        cmd = [script]
    env = {**os.environ, "NO_COLOR": "1"}
    for fmt in ("concise", "json"):
        r = subprocess.run([*cmd, "check", "--no-cache", "--output-format", fmt, "."], cwd=project,
                           env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 1, r.stderr
        assert "train.py" in r.stdout
    assert _evidence(markers) == []


def test_configuration_is_data_only(tmp_path, cli):
    """No key in configuration can name code to run: unknown keys and code-like values are refused."""
    project, markers = tmp_path / "project", tmp_path / "markers"
    project.mkdir()
    markers.mkdir()
    (project / "plugin.py").write_text(f"open({str(markers / 'plugin')!r}, 'w').write('ran')\n")
    (project / "a.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    attempts = [
        'plugins = ["plugin"]',
        'output-format = "plugin:render"',
        'output-format = "neuron_lint.output.full:render"',
        'select = ["__import__(\'plugin\')"]',
        'per-file-ignores = { "a.py" = ["plugin:main"] }',
        'device = "__import__(\'plugin\')"',
        'min-torch = "__import__(\'plugin\')"',
    ]
    for line in attempts:
        (project / "pyproject.toml").write_text(f"[tool.neuron-lint]\n{line}\n")
        r = cli("check", "--no-cache", ".", cwd=project)
        assert r.returncode == 2, line
        assert r.stderr.startswith("neuron-lint: error: pyproject.toml:"), (line, r.stderr)
        assert "Traceback" not in r.stderr
    assert _evidence(markers) == []


def test_a_planted_cache_is_not_unpickled(tmp_path, cli):
    """Cache entries are JSON: a pickle bomb where an entry should be is ignored, not loaded."""
    import pickle

    project, markers = tmp_path / "project", tmp_path / "markers"
    project.mkdir()
    markers.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (project / "a.py").write_text("import torch\nx = torch.ones(1).cuda()\n")

    class Bomb:
        def __reduce__(self):
            return (os.system, (f"touch {markers / 'unpickled'}",))

    first = cli("check", ".", cwd=project)
    assert first.returncode == 1
    entries = [p for p in (project / ".neuron_lint_cache").rglob("*") if p.is_file() and p.name != ".gitignore"]
    assert entries, "the cache wrote no entry"
    for p in entries:
        p.write_bytes(pickle.dumps(Bomb()))
    second = cli("check", ".", cwd=project)
    assert second.returncode == 1 and "a.py" in second.stdout
    assert _evidence(markers) == []
