"""The pre-commit hooks of this working tree, run by the real pre-commit (issue 15): the check hook
sees the dependency manifests, and the fix hook lists the findings that are left.

Unlike tests/test_precommit.py (which installs the committed HEAD), the hook repository here is a
snapshot of the working tree, committed in a temporary repository, so uncommitted changes to
`.pre-commit-hooks.yaml` are what is tested. pre-commit installs it with pip, as for any user.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from test_precommit import git, pre_commit  # the same git and pre-commit runners

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (ROOT / ".git").exists() or shutil.which("git") is None,
                       reason="needs git and a git checkout of neuron-lint"),
]


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory):
    """The working tree (tracked and untracked files git does not ignore), committed on its own."""
    pytest.importorskip("pre_commit")
    snap = tmp_path_factory.mktemp("hook-worktree")
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           check=True, capture_output=True).stdout.split(b"\0")
    for raw in filter(None, names):
        source = ROOT / os.fsdecode(raw)
        if source.is_file() and not source.is_symlink():
            target = snap / os.fsdecode(raw)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    git("init", "-q", cwd=snap)
    git("add", "-A", cwd=snap)
    git("commit", "-q", "-m", "working tree", cwd=snap)
    return snap


@pytest.fixture(scope="module")
def project(hook_repo, tmp_path_factory):
    proj = tmp_path_factory.mktemp("project")
    git("init", "-q", cwd=proj)
    (proj / "requirements.txt").write_text("torch\nflash-attn==2.5.8\n")
    (proj / "LICENSE").write_text("model.cuda() in prose\n")
    (proj / "to_fix.py").write_text("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\nimport flash_attn\n")
    rev = git("rev-parse", "HEAD", cwd=hook_repo).strip()
    (proj / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_repo}\n    rev: {rev}\n    hooks:\n      - id: neuron-lint\n      - id: neuron-lint-fix\n")
    git("add", "-A", cwd=proj)
    return proj


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("pre-commit-home")


def test_the_check_hook_reports_a_cuda_package_in_requirements(project, home):
    r = pre_commit("run", "neuron-lint", "--files", "requirements.txt", "LICENSE", cwd=project, home=home)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "requirements.txt:2:1: NRN680" in out
    assert "LICENSE" not in out  # never passed to neuron-lint


def test_the_fix_hook_lists_what_is_left(project, home):
    r = pre_commit("run", "neuron-lint-fix", "--files", "to_fix.py", cwd=project, home=home)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "Fixed 1 finding in to_fix.py (NRN201)" in out
    assert "to_fix.py:" in out and "NRN603" in out  # the finding itself, as `check` prints it
    assert "`neuron-lint check` lists them" not in out
    assert ".cuda()" not in (project / "to_fix.py").read_text()
