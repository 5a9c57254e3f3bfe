"""`--min-torch` defaults to the oldest torch the project declares (at least 2.6; 2.13 when it declares none).

Resolved once per run, at the configuration stage: from the configuration file's folder, else
from the checked paths, up to the nearest folder with a dependency manifest (never above the
repository root). An explicit `--min-torch` or `min-torch` in the configuration wins.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from neuron_lint.config.files import project_min_torch, resolve
from neuron_lint.fixes.apply import fix_text
from neuron_lint.manifests import declared_torch

MEMORY = "import torch\n\ntorch.cuda.empty_cache()\n"  # torch.accelerator.empty_cache: PyTorch 2.9


def project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "src").mkdir(exist_ok=True)
    script = root / "src" / "train.py"
    script.write_text(MEMORY)
    return script


PYPROJECT_29 = '[project]\nname = "p"\ndependencies = ["numpy", "torch>=2.9,<3"]\n'


def test_a_project_requiring_torch_2_9_gets_the_memory_rewrite(tmp_path, cli):
    script = project(tmp_path, {"pyproject.toml": PYPROJECT_29})
    settings = resolve([str(script)]).settings
    assert settings.min_torch == "2.9"
    assert "torch.accelerator.empty_cache()" in fix_text(MEMORY, str(script), settings).text
    r = cli("fix", str(tmp_path), cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "torch.accelerator.empty_cache()" in script.read_text()
    assert "warning" not in r.stderr


def test_a_project_declaring_no_bound_gets_the_torch_torchneuron_needs(tmp_path, cli):
    script = project(tmp_path, {"pyproject.toml": '[project]\nname = "p"\ndependencies = ["torch"]\n'})
    assert resolve([str(script)]).settings.min_torch == "2.13"
    r = cli("fix", str(tmp_path), cwd=tmp_path)
    assert "torch.accelerator.empty_cache()" in script.read_text()
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / ".git").mkdir()  # the repository root: the walk stops here
    (bare / "m.py").write_text(MEMORY)
    assert resolve([str(bare / "m.py")]).settings.min_torch == "2.13"
    r = cli("fix", "--min-torch", "2.6", str(bare), cwd=bare)  # older CUDA installs: say so
    assert r.returncode == 1 and (bare / "m.py").read_text() == MEMORY


def test_an_explicit_min_torch_wins(tmp_path, cli):
    script = project(tmp_path, {"pyproject.toml": PYPROJECT_29})
    assert resolve([str(script)], min_torch="2.6").settings.min_torch == "2.6"
    r = cli("fix", "--min-torch", "2.6", str(tmp_path), cwd=tmp_path)
    assert r.returncode == 1 and script.read_text() == MEMORY
    # and so does the configuration's
    (tmp_path / "pyproject.toml").write_text(PYPROJECT_29 + '\n[tool.neuron-lint]\nmin-torch = "2.8"\n')
    assert resolve([str(script)]).settings.min_torch == "2.8"
    assert resolve([str(script)], min_torch="2.10").settings.min_torch == "2.10"


def test_isolated_ignores_the_project(tmp_path):
    script = project(tmp_path, {"pyproject.toml": PYPROJECT_29})
    assert resolve([str(script)], isolated=True).settings.min_torch == "2.6"


def test_the_oldest_declaration_counts_and_below_2_6_stays_2_6_with_a_warning(tmp_path, cli):
    script = project(tmp_path, {"pyproject.toml": PYPROJECT_29, "requirements/dev.txt": "torch==2.4.1+cu121\n"})
    resolved = resolve([str(script)])
    assert resolved.settings.min_torch == "2.6"
    assert resolved.torch_below_floor == "2.4.1" and resolved.min_torch_from == "requirements/dev.txt: torch==2.4.1+cu121"
    script.write_text("import torch\n\nx = torch.ones(2).cuda()\n")
    r = cli("fix", str(tmp_path), cwd=tmp_path)
    assert "warning: the project declares torch 2.4.1" in r.stderr and "needs PyTorch 2.6" in r.stderr
    assert "DEVICE" in script.read_text()  # the 2.6 rewrites still happen, as before
    assert "warning" not in cli("fix", "-q", str(tmp_path), cwd=tmp_path).stderr


@pytest.mark.parametrize("name,text,expected", [
    ("requirements.txt", "--extra-index-url https://download.pytorch.org/whl/cu121\ntorch==2.10.0+cu121\n", (2, 10, 0)),
    ("requirements-gpu.txt", "torch>=2.7 ; sys_platform == 'linux'  # GPU\n", (2, 7)),
    ("setup.py", "from setuptools import setup\nsetup(name='p', install_requires=['torch~=2.8'])\n", (2, 8)),
    ("setup.cfg", "[options]\ninstall_requires =\n    numpy\n    torch>2.9\n", (2, 9)),
    ("environment.yml", "name: e\ndependencies:\n  - python=3.11\n  - pytorch=2.11.0=py3.11_cuda12.1_0\n", (2, 11, 0)),
    ("environment.yml", "name: e\ndependencies:\n  - pip:\n    - torch>=2.12\n", (2, 12)),
    # BLIP: Replicate's Cog image is the only place it names its torch
    ("cog.yaml", 'build:\n  gpu: true\n  python_packages:\n    - "ipython==7.30.1"\n    - "torch==1.10.0"\n', (1, 10, 0)),
    ("cog.yaml", "build:\n  python_packages: ['torch>=2.7', numpy]\n  system_packages:\n  - torch-is-not-here\n", (2, 7)),
    ("pyproject.toml", '[project]\nname = "p"\ndependencies = ["torch<3"]\n', None),
    ("requirements.txt", "torchvision>=0.20\n", None),
])
def test_every_manifest_kind_is_read(tmp_path, name, text, expected):
    (tmp_path / name).write_text(text)
    found = declared_torch(tmp_path)
    assert (found[0] if found else None) == expected


def test_the_project_root_is_the_nearest_folder_with_a_manifest(tmp_path):
    (tmp_path / "pyproject.toml").write_text(PYPROJECT_29)
    inner = tmp_path / "services" / "trainer"
    inner.mkdir(parents=True)
    assert project_min_torch(inner)[0] == "2.9"  # walks up to the project
    (inner / "requirements.txt").write_text("torch>=2.10\n")
    assert project_min_torch(inner)[0] == "2.10"  # the nearer project decides
    (tmp_path / "pyproject.toml").write_text("not = [valid toml")
    assert project_min_torch(tmp_path) == ("2.13", "", "")  # a broken manifest declares nothing (check reports it)


def test_a_manifest_that_does_not_bound_torch_leaves_the_bound_to_the_folders_above(tmp_path):
    # diffusers: examples/dreambooth/requirements.txt lists no torch; the library's setup.py says torch>=2.6
    (tmp_path / ".git").mkdir()
    (tmp_path / "setup.py").write_text('from setuptools import setup\nsetup(name="d", install_requires=["torch>=2.6"])\n')
    example = tmp_path / "examples" / "dreambooth"
    example.mkdir(parents=True)
    (example / "requirements.txt").write_text("accelerate>=0.16.0\ntorchvision\n")
    version, where, _ = project_min_torch(example)
    assert version == "2.6" and "setup.py" in where
    # ... but never past the repository root, nor past a package's own project folder
    for marker in (".git", "pyproject.toml"):
        inner = tmp_path / f"vendored_{marker.strip('.').replace('.', '_')}"
        inner.mkdir()
        (inner / marker).mkdir() if marker == ".git" else (inner / marker).write_text('[project]\nname = "v"\n')
        (inner / "requirements.txt").write_text("numpy\n")
        assert project_min_torch(inner) == ("2.13", "", ""), marker


def test_the_configuration_files_folder_is_the_project(tmp_path):
    (tmp_path / "pyproject.toml").write_text(PYPROJECT_29 + '\n[tool.neuron-lint]\nselect = ["NRN2"]\n')
    elsewhere = tmp_path / "scripts"
    elsewhere.mkdir()
    (elsewhere / "requirements.txt").write_text("torch>=2.11\n")
    (elsewhere / "x.py").write_text(MEMORY)
    assert resolve([str(elsewhere / "x.py")]).settings.min_torch == "2.9"
