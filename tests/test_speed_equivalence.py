"""The speed machinery never changes an answer: findings are identical cold, warm, serial and parallel.

This checks behaviour, not timing (the benchmark in bench/ measures time).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from neuron_lint.api import check_paths
from neuron_lint.config.settings import Settings
from neuron_lint.engine import runner
from neuron_lint.engine.cache import Cache

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(scope="module")
def project(tmp_path_factory, catalog):
    """Every rule's examples as separate files, the example project, and files that cannot be parsed."""
    root = tmp_path_factory.mktemp("project")
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    shutil.copytree(EXAMPLES, root / "examples")
    for rule in catalog.rules:
        for kind in ("bad", "good"):
            for i, snippet in enumerate(getattr(rule, kind)):
                (root / "rules" / rule.code).mkdir(parents=True, exist_ok=True)
                (root / "rules" / rule.code / f"{kind}_{i}.py").write_text(snippet, encoding="utf-8")
    (root / "broken").mkdir()
    (root / "broken" / "syntax.py").write_text("import torch\nx = torch.ones(2).cuda(\n")
    (root / "broken" / "latin.py").write_bytes(b"x = '\xe9'\n")
    (root / "broken" / "ok_after.py").write_text("import torch\ny = torch.zeros(3, device='cuda')\n")
    return root


def snapshot(result):
    return (
        [f.to_dict() for f in result.findings],
        [(e.path, e.reason, e.line, e.col) for e in result.errors],
        result.files_checked,
        result.files_skipped,
    )


@pytest.fixture
def in_project(project, monkeypatch):
    monkeypatch.chdir(project)
    return project


@pytest.fixture
def force_pool(monkeypatch):
    """Make even this small project go through the worker processes, and record that it did."""
    calls = []
    real = runner._run_pool

    def spy(pending, workers, *args):
        calls.append((len(pending), workers))
        return real(pending, workers, *args)

    monkeypatch.setattr(runner, "SERIAL_BYTES", 0)
    monkeypatch.setattr(runner, "SERIAL_FILES", 0)
    monkeypatch.setattr(runner, "_run_pool", spy)
    return calls


def test_identical_cold_warm_serial_parallel(in_project, force_pool, tmp_path):
    settings = Settings()
    serial = snapshot(check_paths(["."], settings, jobs=1))
    assert not force_pool  # one job: no workers
    assert serial[0] and serial[1], "the project must produce findings and file errors"

    parallel = snapshot(check_paths(["."], settings, jobs=3))
    assert force_pool and force_pool[-1][1] == 3  # really ran in three worker processes
    assert parallel == serial

    cache_dir = tmp_path / "cache"
    cold = snapshot(check_paths(["."], settings, jobs=2, cache=Cache(cache_dir, settings)))
    assert cold == serial
    assert any(cache_dir.rglob("*.json"))

    pool_runs = len(force_pool)
    warm_cache = Cache(cache_dir, settings)
    warm = snapshot(check_paths(["."], settings, jobs=2, cache=warm_cache))
    assert warm == serial
    assert warm_cache.misses == 0 and warm_cache.hits > 0
    assert len(force_pool) == pool_runs  # nothing left to check: no workers started

    warm_serial = snapshot(check_paths(["."], settings, jobs=1, cache=Cache(cache_dir, settings)))
    assert warm_serial == serial


def test_warm_run_does_not_analyze_again(in_project, tmp_path, monkeypatch):
    settings = Settings()
    cache_dir = tmp_path / "cache"
    cold = snapshot(check_paths(["."], settings, jobs=1, cache=Cache(cache_dir, settings)))

    import neuron_lint.engine.pipeline as pipeline

    def boom(*args, **kwargs):
        raise AssertionError("a cached file was checked again")

    monkeypatch.setattr(pipeline, "check_file", boom)
    assert snapshot(check_paths(["."], settings, jobs=1, cache=Cache(cache_dir, settings))) == cold


def test_output_order_is_stable_across_jobs(in_project, force_pool):
    """Errors keep the order files were found in, whichever worker finished first."""
    results = [check_paths(["."], Settings(), jobs=j) for j in (1, 2, 4)]
    orders = [[e.path for e in r.errors] for r in results]
    assert orders[0] == sorted(orders[0]) and orders[0] == orders[1] == orders[2]


def test_cli_output_identical_cold_warm_and_jobs(cli, project):
    runs = [
        cli("check", "--output-format", "concise", "--no-cache", "-j", "1", ".", cwd=project),
        cli("check", "--output-format", "concise", ".", cwd=project),  # cold: fills the cache
        cli("check", "--output-format", "concise", ".", cwd=project),  # warm
        cli("check", "--output-format", "concise", "-j", "2", ".", cwd=project),
    ]
    assert {r.returncode for r in runs} == {2}  # findings and unparsable files
    assert len({r.stdout for r in runs}) == 1 and len({r.stderr for r in runs}) == 1
    assert "syntax.py" in runs[0].stderr and "NRN" in runs[0].stdout


def test_spawned_workers_give_the_same_answer(in_project, force_pool, monkeypatch, tmp_path):
    """macOS and Windows start workers with spawn (nothing inherited): settings, catalog and cache travel by pickle."""
    import multiprocessing as mp

    settings = Settings()
    serial = snapshot(check_paths(["."], settings, jobs=1))
    monkeypatch.setattr(runner, "_pool_context", lambda: mp.get_context("spawn"))
    cache_dir = tmp_path / "cache"
    spawned = snapshot(check_paths(["."], settings, jobs=2, cache=Cache(cache_dir, settings)))
    assert force_pool and spawned == serial
    warm = Cache(cache_dir, settings)
    assert snapshot(check_paths(["."], settings, jobs=2, cache=warm)) == serial and warm.misses == 0
