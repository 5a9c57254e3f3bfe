"""The pre-commit hooks, run by the real pre-commit in a temporary git repository.

pre-commit installs neuron-lint from a git repository into its own virtual environment (pip
downloads the dependencies, as for any user). The repository it installs from is a snapshot of
this checkout's committed state (HEAD), so commit `.pre-commit-hooks.yaml` changes before running.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BAD = "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n"
CLEAN = "import torch\nmodel = torch.nn.Linear(2, 2)\n"

pytestmark = pytest.mark.skipif(
    not (ROOT / ".git").exists() or shutil.which("git") is None,
    reason="needs git and a git checkout of neuron-lint",
)


def git(*args, cwd):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def pre_commit(*args, cwd, home):
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "NO_COLOR": "1", "PRE_COMMIT_COLOR": "never"}
    for var in ("VIRTUAL_ENV", "PYTHONPATH"):
        env.pop(var, None)
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory):
    """A git repository holding this checkout's HEAD (what `pre-commit try-repo` would clone)."""
    pytest.importorskip("pre_commit")
    snap = tmp_path_factory.mktemp("hook-repo")
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(snap)], input=archive, check=True)
    assert (snap / ".pre-commit-hooks.yaml").is_file(), ".pre-commit-hooks.yaml is not committed"
    git("init", "-q", cwd=snap)
    git("add", "-A", cwd=snap)
    git("commit", "-q", "-m", "snapshot", cwd=snap)
    return snap


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    proj = tmp_path_factory.mktemp("project")
    git("init", "-q", cwd=proj)
    (proj / "bad.py").write_text(BAD)
    (proj / "clean.py").write_text(CLEAN)
    (proj / "notes.txt").write_text("model.cuda() in prose is not code\n")
    pkg = proj / "pkg"
    pkg.mkdir()
    for i in range(300):
        (pkg / f"m{i:03}.py").write_text(CLEAN)
    git("add", "-A", cwd=proj)
    return proj


def test_try_repo_fails_on_a_bad_file(hook_repo, project, tmp_path):
    r = pre_commit("try-repo", str(hook_repo), "neuron-lint", "--files", "bad.py", cwd=project, home=tmp_path / "home")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "neuron-lint" in out and "Failed" in out
    assert "bad.py:2:" in out and "NRN201" in out


@pytest.fixture(scope="module")
def home(hook_repo, project, tmp_path_factory):
    """A .pre-commit-config.yaml using both hooks, and one pre-commit store: installed once for the runs below."""
    rev = git("rev-parse", "HEAD", cwd=hook_repo).strip()
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_repo}\n    rev: {rev}\n    hooks:\n      - id: neuron-lint\n      - id: neuron-lint-fix\n"
    )
    return tmp_path_factory.mktemp("pre-commit-home")


def test_hook_passes_clean_files_skips_non_python_and_handles_hundreds(project, home):

    r = pre_commit("run", "neuron-lint", "--files", "clean.py", cwd=project, home=home)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Passed" in r.stdout

    # pre-commit passes no file at all: the hook is skipped, neuron-lint does not scan the repository
    r = pre_commit("run", "neuron-lint", "--files", "notes.txt", cwd=project, home=home)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no files to check" in r.stdout and "Skipped" in r.stdout

    many = sorted(str(p.relative_to(project)) for p in (project / "pkg").glob("*.py"))
    r = pre_commit("run", "neuron-lint", "--files", *many, "bad.py", cwd=project, home=home)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "bad.py:2:" in r.stdout and "pkg/m" not in r.stdout
    assert "301 files checked" in r.stdout


def test_fix_hook_rewrites_the_file_and_fails_the_commit_once(project, home):
    (project / "to_fix.py").write_text(BAD)
    git("add", "to_fix.py", cwd=project)  # pre-commit notices changes to files git knows
    r = pre_commit("run", "neuron-lint-fix", "--files", "to_fix.py", cwd=project, home=home)
    assert r.returncode == 1, r.stdout + r.stderr  # pre-commit fails a hook that changed files
    fixed = (project / "to_fix.py").read_text()
    assert fixed != BAD and ".cuda()" not in fixed
    r = pre_commit("run", "neuron-lint", "--files", "to_fix.py", cwd=project, home=home)
    assert r.returncode == 0, r.stdout + r.stderr
