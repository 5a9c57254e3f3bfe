import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The cache signs its entries with a key kept in the user's cache folder: the suite (and every
# neuron-lint it starts) gets a folder of its own instead of the user's.
# Each process of the suite (pytest-xdist workers included) removes its own folder when it ends.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="neuron-lint-tests-")
atexit.register(shutil.rmtree, os.environ["XDG_CACHE_HOME"], ignore_errors=True)


@pytest.fixture(scope="session")
def catalog():
    from neuron_lint.catalog.loading import load_catalog

    return load_catalog()


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None, input: str | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m neuron_lint`` as a user would, without colour unless asked."""
    full_env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    full_env.pop("FORCE_COLOR", None)
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "neuron_lint", *args],
        cwd=cwd, env=full_env, capture_output=True, text=True, input=input, timeout=300,
    )


@pytest.fixture
def cli():
    return run_cli


def write_project(root: Path, files: dict[str, str]) -> Path:
    """A project at ``root`` that declares torch 2.8, with ``files`` (relative path -> text) written
    into it; the project-wide indexes some fixes read are forgotten first. Returns ``root``."""
    from neuron_lint.fixes.project_scan import forget_project_reads

    forget_project_reads()
    (root / "pyproject.toml").write_text('[project]\nname = "p"\ndependencies = ["torch>=2.8"]\n')
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def as_other_user(work) -> bytes:
    """Run ``work()`` (returning bytes) in a forked child that has become user and group 65534
    (``nobody``), with this process's imports; its bytes. Only as root: the permission cases need a
    second user, and another user may not be able to exec the interpreter of a venv under /root."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.close(read_end)
            os.setgid(65534)
            os.setuid(65534)
            os.write(write_end, work())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        said = fh.read()
    os.waitpid(child, 0)
    return said


#: Test modules whose tests start subprocesses, tools or a browser throughout.
SLOW_MODULES = {"test_wheel", "test_precommit", "test_report_html", "test_startup", "test_fix_project", "test_xla_example"}


def pytest_collection_modifyitems(config, items):
    """Mark as `slow` every test that runs neuron-lint in a subprocess (the `cli` fixture) or lives in
    a module of such tests, and every `fuzz` test, so `python -m pytest -m "not slow"` is a quick loop;
    the default run keeps the slow ones (not the long fuzzing campaign: `-m fuzz` runs that)."""
    slow = pytest.mark.slow
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1] if item.module else ""
        if "cli" in getattr(item, "fixturenames", ()) or module in SLOW_MODULES or item.get_closest_marker("fuzz"):
            item.add_marker(slow)
