"""The result cache: where it lives, what invalidates it, and that it can never break a run."""

from __future__ import annotations

from pathlib import Path

import pytest

import neuron_lint.engine.cache as cache_mod
from neuron_lint.api import check_paths
from neuron_lint.config.settings import Settings
from neuron_lint.engine.cache import Cache, project_root

CUDA = "import torch\nx = torch.ones(2).cuda()\n"


def codes(result):
    return [(Path(f.path).name, f.line, f.code) for f in result.findings]


@pytest.fixture
def proj(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text(CUDA)
    (tmp_path / "src" / "b.py").write_text("import torch\ny = torch.zeros(2, dtype=torch.float64)\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(settings=None, cache_dir=".neuron_lint_cache"):
    settings = settings or Settings()
    c = Cache(Path(cache_dir), settings)
    return check_paths(["src"], settings, jobs=1, cache=c), c


def test_content_change_is_seen(proj):
    first, _ = run()
    assert ("a.py", 2, "NRN201") in codes(first)
    (proj / "src" / "a.py").write_text("import torch\nx = torch.ones(2)\n\nz = torch.sparse.mm(a, b)\n")
    second, c = run()
    assert ("a.py", 2, "NRN201") not in codes(second)
    assert ("a.py", 4, "NRN101") in codes(second)
    assert c.hits == 1 and c.misses == 1  # b.py unchanged, a.py checked again


def test_settings_change_is_seen(proj):
    only_cuda, _ = run(Settings(select=("NRN2",)))
    assert {c for _, _, c in codes(only_cuda)} == {"NRN201"}
    everything, c = run(Settings())
    assert {"NRN201", "NRN301"} <= {c for _, _, c in codes(everything)}
    assert c.hits == 0
    again, c = run(Settings(select=("NRN2",)))
    assert codes(again) == codes(only_cuda) and c.misses == 0


LONG = "import torch\n\n\ndef load(path):\n    return torch.load(path, weights_only=True).cuda()\n"


def test_a_change_of_the_projects_line_length_is_seen(proj):
    # which fixes `check` offers depends on the line length the project's formatter keeps; a cached
    # result from before the configuration changed offered a fix that `fix` then drops
    (proj / "src" / "a.py").write_text(LONG)
    settings = Settings(select=("NRN201",), fix_edits=True)

    def offered(result):
        return [f.fix is not None for f in result.findings if Path(f.path).name == "a.py"]

    (proj / "pyproject.toml").write_text("[project]\nname = 'p'\n\n[tool.ruff]\nline-length = 80\n")
    assert offered(run(settings)[0]) == [True]
    (proj / "pyproject.toml").write_text("[project]\nname = 'p'\n\n[tool.ruff]\nline-length = 60\n")
    from neuron_lint.fixes.line_length import line_length_of

    line_length_of.cache_clear()  # a new run reads the configuration afresh (one process here)
    second, c = run(settings)
    assert offered(second) == [False]
    assert c.hits == 0  # every file of the project keeps within the new length


PARITY = "import torch\n\n\ndef test_parity():\n    torch.backends.cudnn.allow_tf32 = True\n    assert torch.ones(2).sum() == 2\n"
EXACT = "import torch\n\n\ndef test_exact():\n    torch.backends.cudnn.allow_tf32 = False\n"


def test_a_change_elsewhere_in_the_project_is_seen(proj):
    # the fix offered in one file can depend on another: a module of the project that turns TF32 off
    # keeps the other's `allow_tf32 = True`. A result cached before that module was written offered
    # the removal that `fix` then declines
    from neuron_lint.fixes.project_scan import forget_project_reads

    (proj / "src" / "test_parity.py").write_text(PARITY)
    settings = Settings(select=("NRN209",), unsafe_fixes=True, fix_edits=True)

    def offered(result):
        return [f.fix is not None for f in result.findings if Path(f.path).name == "test_parity.py"]

    forget_project_reads()
    assert offered(run(settings)[0]) == [True]
    (proj / "src" / "test_exact.py").write_text(EXACT)
    forget_project_reads()  # a new run reads the project afresh (one process here)
    assert offered(run(settings)[0]) == [False]
    forget_project_reads()
    third, c = run(settings)
    assert offered(third) == [False] and (c.hits, c.misses) == (4, 0)  # nothing changed: all four from the cache


def test_any_new_setting_is_part_of_the_key():
    """Settings added later (noqa, config, ...) change the key without anyone remembering to add them."""
    import dataclasses

    base = Settings()
    for f in dataclasses.fields(Settings):
        if f.name in cache_mod._NOT_IN_KEY or f.name == "extra":
            continue
        value = getattr(base, f.name)
        if isinstance(value, bool):
            changed = not value
        elif isinstance(value, int):
            changed = value + 1
        elif isinstance(value, str):
            changed = value + "x"
        elif isinstance(value, tuple):
            changed = value + (("X", ("Y",)) if f.name == "per_file_ignores" else ("NRN999",))
        else:
            continue
        other = dataclasses.replace(base, **{f.name: changed})
        assert cache_mod.settings_fingerprint(other) != cache_mod.settings_fingerprint(base), f.name
    assert cache_mod.settings_fingerprint(dataclasses.replace(base, output_format="concise")) == cache_mod.settings_fingerprint(base)


def test_version_change_invalidates(proj, monkeypatch):
    run()
    _, c = run()
    assert c.misses == 0
    monkeypatch.setattr(cache_mod, "__version__", "999.0")
    result, c = run()
    assert c.hits == 0 and ("a.py", 2, "NRN201") in codes(result)


def test_catalog_change_invalidates(proj, monkeypatch, tmp_path):
    import shutil

    from neuron_lint.catalog import loading as catalog_mod

    run()
    rules = tmp_path / "rules_copy"
    shutil.copytree(catalog_mod.rules_dir(), rules)
    monkeypatch.setattr(catalog_mod, "rules_dir", lambda: rules)
    _, c = run()
    assert c.misses == 0  # the same rule files: same key
    first = sorted(rules.glob("*.toml"))[0]
    first.write_text(first.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    _, c = run()
    assert c.hits == 0


def test_syntax_errors_are_cached_too(proj):
    (proj / "src" / "bad.py").write_text("def f(:\n")
    first, _ = run()
    second, c = run()
    assert [e.path for e in first.errors] == [e.path for e in second.errors] == [str(Path("src/bad.py"))]
    assert second.errors[0].line == first.errors[0].line and c.misses == 0


def test_corrupt_entries_are_ignored(proj):
    expected, _ = run()
    for entry in Path(".neuron_lint_cache").rglob("*.json"):
        entry.write_bytes(b'{"@": "CheckResult", "findings": [{"@": "os.system"}]')
    result, c = run()
    assert codes(result) == codes(expected) and c.hits == 0
    result, c = run()  # and the entries were rewritten
    assert codes(result) == codes(expected) and c.misses == 0


def test_unwritable_cache_never_fails_the_run(proj):
    Path("blocked").write_text("a file where the cache folder should be")
    result, c = run(cache_dir="blocked/cache")
    assert ("a.py", 2, "NRN201") in codes(result) and not c.writable


def test_project_root_is_found_from_a_subfolder(proj):
    assert project_root(proj / "src") == proj
    assert cache_mod.default_cache_dir() == proj / ".neuron_lint_cache"


def test_cli_uses_project_cache_with_gitignore_and_clean_removes_it(cli, proj):
    r = cli("check", ".", cwd=proj / "src")
    assert r.returncode == 1
    cache_dir = proj / ".neuron_lint_cache"
    assert (cache_dir / ".gitignore").read_text().splitlines()[-1] == "*"
    assert any(cache_dir.rglob("*.json"))
    r = cli("clean", cwd=proj)
    assert r.returncode == 0 and not cache_dir.exists()
    r = cli("clean", cwd=proj)
    assert r.returncode == 0 and "No cache" in r.stdout


def test_no_cache_writes_nothing(cli, proj):
    r = cli("check", "--no-cache", "src", cwd=proj)
    assert r.returncode == 1 and "NRN201" in r.stdout
    assert not (proj / ".neuron_lint_cache").exists()


def test_own_package_answer_is_not_served_stale(tmp_path, cli):
    """`import triton` is the project's own package only while a sibling `triton/` exists; the
    cache must not keep the old answer when that folder comes or goes."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'app'\n")
    (tmp_path / "app.py").write_text("import triton\n")
    (tmp_path / "other.py").write_text("import torch\nx = torch.ones(1).cuda()\n")

    def triton_findings():
        r = cli("check", "--output-format", "concise", "app.py", "other.py", cwd=tmp_path)
        assert (tmp_path / ".neuron_lint_cache").is_dir()  # the cache is in use
        return [line.split()[1] for line in r.stdout.splitlines() if line.startswith("app.py:")]

    assert triton_findings() == ["NRN601"]
    (tmp_path / "triton").mkdir()
    (tmp_path / "triton" / "__init__.py").write_text("")
    assert triton_findings() == []
    (tmp_path / "triton" / "__init__.py").unlink()
    (tmp_path / "triton").rmdir()
    assert triton_findings() == ["NRN601"]
