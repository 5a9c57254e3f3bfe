"""Dependency manifests: CUDA-only packages and CUDA-pinned PyTorch builds are findings with a line.

Manifest rules' catalog examples start with a comment naming the file they stand for
(`# requirements.txt`, `# pyproject.toml`, ...); each bad one must produce its rule, no good one may.
"""

import re
import textwrap

import pytest

from neuron_lint.api import check_paths
from neuron_lint.catalog.loading import load_catalog
from neuron_lint.config.settings import Settings
from neuron_lint.manifests import check_manifest_text, manifest_kind

CATALOG = load_catalog()
ALL = Settings(extend_select=("NRN",))
MANIFEST_RULES = [r for r in CATALOG.rules if r.manifest_only]


def _file_of(snippet: str) -> str:
    first = snippet.strip().splitlines()[0]
    assert first.startswith("# "), f"a manifest example must start with '# <file name>': {first!r}"
    return first[2:].strip()


def _check(snippet: str, name: str | None = None):
    name = name or _file_of(snippet)
    kind = manifest_kind(name)
    assert kind, f"{name} is not a manifest file name"
    return check_manifest_text(snippet.lstrip("\n"), kind, name, ALL)


def _cases(kind):
    for rule in MANIFEST_RULES:
        for i, snippet in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, snippet, id=f"{rule.code}-{kind}-{i}")


def test_manifest_rules_exist():
    assert len(MANIFEST_RULES) >= 5
    assert all(r.category in ("cuda-only-package", "legacy-xla") for r in MANIFEST_RULES)


@pytest.mark.parametrize("rule,snippet", list(_cases("bad")))
def test_bad_manifest_example_is_flagged(rule, snippet):
    codes = [f.code for f in _check(snippet)]
    assert rule.code in codes, f"{rule.file}: bad example not flagged:\n{snippet}"


@pytest.mark.parametrize("rule,snippet", list(_cases("good")))
def test_good_manifest_example_is_not_flagged(rule, snippet):
    found = [f for f in _check(snippet) if f.code == rule.code]
    assert not found, f"{rule.file}: good example flagged: {found[0].message}\n{snippet}"


def _at(findings):
    return [(f.code, f.line, f.col, f.end_col) for f in findings]


def test_requirements_positions_options_and_continuations():
    text = textwrap.dedent("""\
        # GPU stack
        --extra-index-url https://download.pytorch.org/whl/cu121
        torch==2.1.2+cu121 \\
            --hash=sha256:abc
        flash-attn>=2.5  # attention kernels
        -r base.txt
        numpy
        https://download.pytorch.org/whl/cu118/torch-2.0.1%2Bcu118-cp310-cp310-linux_x86_64.whl
        bitsandbytes; sys_platform == "linux"  # noqa: NRN682
        """)
    found = _check(text, "requirements-gpu.txt")
    assert _at(found) == [
        ("NRN686", 2, 19, 57),
        ("NRN685", 3, 1, 19),
        ("NRN680", 5, 1, 16),
        ("NRN685", 8, 1, 88),  # one finding: the CUDA index in the wheel's URL is not a second one
    ]
    assert "flash-attn>=2.5" in found[2].message


def test_pyproject_dependencies_extras_and_indexes():
    text = textwrap.dedent("""\
        [project]
        name = "demo"
        dependencies = [
            "torch>=2.1",
            'deepspeed>=0.14',  # training
        ]
        [project.optional-dependencies]
        fast = ["xformers", "triton==2.3.1"]
        [[tool.uv.index]]
        url = "https://download.pytorch.org/whl/cu124"
        [tool.poetry.dependencies]
        python = "^3.10"
        apex = { git = "https://github.com/NVIDIA/apex.git" }
        """)
    assert _at(_check(text, "pyproject.toml")) == [
        ("NRN683", 5, 6, 21),
        ("NRN680", 8, 10, 18),
        ("NRN681", 8, 22, 35),
        ("NRN686", 10, 8, 46),
        ("NRN682", 13, 1, 5),
    ]


def test_setup_py_is_read_not_run(tmp_path):
    text = textwrap.dedent("""\
        import sys
        from setuptools import setup
        sys.exit("setup.py was executed")
        BASE = ["torch", "nvidia-nccl-cu12"]
        extras = {}
        extras["fast"] = ["xformers"]
        extras["all"] = extras["fast"] + ["sphinx"]
        BASE.append("triton")
        setup(
            name="demo",
            install_requires=BASE + ["cupy-cuda12x"],
            extras_require={"zero": ["deepspeed"], "docs": ["sphinx"], **extras},
        )
        """)
    assert _at(_check(text, "setup.py")) == [
        ("NRN684", 4, 19, 35),
        ("NRN680", 6, 20, 28),
        ("NRN681", 8, 14, 20),
        ("NRN682", 11, 31, 43),
        ("NRN683", 12, 31, 40),
    ]


def test_setup_cfg_one_per_line_and_extras():
    text = textwrap.dedent("""\
        [metadata]
        name = triton-docs
        [options]
        install_requires =
            torch>=2.1
            xformers  # kernels
        [options.extras_require]
        quant = bitsandbytes>=0.43; pynvml
        """)
    assert _at(_check(text, "setup.cfg")) == [
        ("NRN680", 6, 5, 13),
        ("NRN682", 8, 9, 27),
        ("NRN684", 8, 29, 35),
    ]


def test_cog_python_packages_are_checked_and_other_keys_passed_over():
    # Replicate Cog (BLIP's cog.yaml): only build.python_packages holds pip requirements
    text = textwrap.dedent("""\
        build:
          gpu: true
          cuda: "11.1"
          system_packages:
            - "flash-attn"
          python_packages:
            - "torch==1.10.0"
            - 'flash-attn==2.5.8'  # comment
            - --extra-index-url https://download.pytorch.org/whl/cu121
          run:
            - pip install flash-attn
        predict: "predict.py:Predictor"
        """)
    assert _at(_check(text, "cog.yaml")) == [("NRN680", 8, 8, 25), ("NRN686", 9, 25, 63)]


def test_add_noqa_silences_a_finding_in_cog_yaml(tmp_path, cli):
    path = tmp_path / "cog.yaml"
    path.write_text('build:\n  python_packages:\n    - "flash-attn==2.5.0"\n')
    assert cli("check", "--no-cache", "--add-noqa", str(tmp_path), cwd=tmp_path).returncode == 0
    assert path.read_text() == 'build:\n  python_packages:\n    - "flash-attn==2.5.0"  # noqa: NRN680\n'
    assert cli("check", "--no-cache", str(tmp_path), cwd=tmp_path).returncode == 0


def test_conda_environment_with_pip_section_and_quotes():
    text = textwrap.dedent("""\
        name: train
        channels:
          - pytorch
          - nvidia
        dependencies:
          - python=3.10
          - "pytorch-cuda=12.1"   # comment
          - nvidia::cuda-toolkit
          - pip
          - pip:
              - --extra-index-url https://download.pytorch.org/whl/cu121
              - 'flash-attn==2.5.8'
          - numpy
          - nvidia/label/cuda-12.1.0::cuda-runtime
          - pytorch 2.1.0 py3.10_cuda12.1_cudnn8_0
          - pytorch 2.13.0 py3.12_cpu_0
        variables:
          - triton
        """)
    assert _at(_check(text, "environment.yml")) == [
        ("NRN685", 7, 6, 23),
        ("NRN685", 8, 5, 25),
        ("NRN686", 11, 27, 65),
        ("NRN680", 12, 10, 27),
        ("NRN685", 14, 5, 43),
        ("NRN685", 15, 5, 43),
    ]


def test_broken_manifest_is_reported_and_scan_continues(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project\nname = 1\n")
    (tmp_path / "requirements.txt").write_text("triton\n")
    result = check_paths([str(tmp_path)], ALL)
    assert [e.path.endswith("pyproject.toml") for e in result.errors] == [True]
    assert "not valid TOML" in result.errors[0].reason
    assert [f.code for f in result.findings] == ["NRN681"]


def test_check_walks_manifests_and_setup_py_is_also_python(tmp_path, cli):
    (tmp_path / "requirements.txt").write_text("torch==2.1.0+cu121\n")
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "gpu.txt").write_text("triton\n")
    (tmp_path / "setup.py").write_text("from setuptools import setup\nimport torch\nx = torch.ones(1).cuda()\nsetup(install_requires=['xformers'])\n")
    (tmp_path / "notes.txt").write_text("triton\n")
    (tmp_path / ".gitignore").write_text("ignored/\n")
    (tmp_path / "ignored").mkdir()
    (tmp_path / "ignored" / "requirements.txt").write_text("triton\n")
    proc = cli("check", "--output-format", "concise", str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    lines = sorted(l for l in proc.stdout.splitlines() if "NRN" in l)
    assert len(lines) == 4, proc.stdout
    assert any("requirements.txt:1:1: NRN685" in l for l in lines)
    assert any("gpu.txt:1:1: NRN681" in l for l in lines)
    assert any("setup.py:3:" in l and "NRN201" in l for l in lines)
    assert any("setup.py:4:" in l and "NRN680" in l for l in lines)
    assert "(3 files checked)" in proc.stdout  # notes.txt is not a manifest; ignored/ is gitignored


def test_ignore_and_select_apply_to_manifests(tmp_path):
    (tmp_path / "requirements.txt").write_text("triton\nxformers\n")
    assert [f.code for f in check_paths([str(tmp_path)], Settings(ignore=("NRN681",))).findings] == ["NRN680"]
    assert check_paths([str(tmp_path)], Settings(select=("NRN2",))).findings == []


@pytest.mark.parametrize(
    "match,problem",
    [
        ('manifest = ["triton"]\n[[match]]\nimports = ["triton"]', "either Python code or manifests"),
        ('manifest = ["url:"]', "'url:'"),
        ('manifest = ["torch==2.1"]', "not a package name glob"),
        ('manifest = ["triton"]\narg = { keyword = "x" }', "not valid with 'manifest'"),
    ],
)
def test_manifest_match_is_validated(tmp_path, match, problem):
    from neuron_lint.catalog.loading import CatalogError, load_catalog_from, rules_dir

    text = (rules_dir() / "NRN681-triton-package.toml").read_text()
    text = re.sub(r"(?m)^manifest = \[.*\]$", lambda _: match, text, count=1)
    (tmp_path / "NRN681-triton-package.toml").write_text(text)
    with pytest.raises(CatalogError) as exc:
        load_catalog_from(tmp_path)
    assert "NRN681-triton-package.toml" in str(exc.value) and problem in str(exc.value)


from hypothesis import given  # noqa: E402
from hypothesis import settings as hsettings
from hypothesis import strategies as st

_MANIFEST_ALPHABET = st.sampled_from(list("abc-_.=<>!~[];:#@+*/\\'\" \t\n-  ") + ["torch", "cu121", "pip:", "- ", "[options]",
                                                                                    "install_requires =", "dependencies:", "https://", "--index-url"])


@hsettings(max_examples=150, deadline=None)
@given(st.lists(_MANIFEST_ALPHABET, max_size=60).map("".join))
def test_line_based_scanners_never_raise(text):
    """Any text gives findings or nothing, never an exception (one bad file must not stop a scan)."""
    from neuron_lint.manifests import scan_text

    for kind in ("requirements", "setup.cfg", "conda", "cog"):
        for entry in scan_text(text, kind):
            assert entry.line >= 1 and entry.end_col >= entry.col >= 1
