"""The wheel carries the rule catalog: install it into a fresh venv, outside the source tree, and run it."""

import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(ROOT)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (whl,) = out.glob("neuron_lint-*.whl")
    return whl


def test_wheel_contains_rules(wheel):
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("neuron_lint/rules/NRN101") for n in names)
    assert not any(n.startswith("tests/") for n in names)


def test_installed_wheel_runs_rules_outside_the_tree(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    # No pip of its own (ensurepip costs seconds): this pip installs into it (`--python`), the wheel
    # and the dependencies it declares. Byte-compiling the installed files would only cost time.
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    r = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-compile", str(wheel)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    where = subprocess.run([str(py), "-c", "import neuron_lint; print(neuron_lint.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path)
    assert str(env_dir) in where.stdout, where.stdout + where.stderr
    r = subprocess.run([str(env_dir / "bin" / "neuron-lint"), "rules"], capture_output=True, text=True,
                       cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1", "COLUMNS": "200"})
    assert r.returncode == 0, r.stderr
    assert "NRN101" in r.stdout and "torch-sparse" in r.stdout
