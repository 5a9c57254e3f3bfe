"""A hostile result cache: a repository (or anyone who can write the project) controls
``.neuron_lint_cache/``. Whatever is planted there, a run reports the file's real findings, never
hangs, never takes unbounded memory, and never writes outside the project."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import neuron_lint.engine.cache as cache_mod
from neuron_lint.api import check_paths
from neuron_lint.config.settings import Settings
from neuron_lint.engine.cache import CACHE_DIR_NAME, Cache
from neuron_lint.model import CheckResult

CUDA = "import torch\nx = torch.ones(2).cuda()\n"
posix_only = pytest.mark.skipif(os.name != "posix", reason="needs POSIX links, pipes and rlimits")


@pytest.fixture
def proj(tmp_path):
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (root / "src" / "a.py").write_text(CUDA)
    (root / "src" / "b.py").write_text("import torch\ny = torch.zeros(2, dtype=torch.float64)\n")
    return root


@pytest.fixture
def outside(tmp_path):
    d = tmp_path / "outside"
    d.mkdir()
    return d


@pytest.fixture
def user_env(tmp_path):
    """The user's own cache directory (where the key lives), outside the project."""
    return {"XDG_CACHE_HOME": str(tmp_path / "user-cache")}


def entries(proj: Path) -> list[Path]:
    return sorted(p for p in (proj / CACHE_DIR_NAME).rglob("*.json"))


def everything_under(d: Path) -> list[Path]:
    return sorted(d.rglob("*"))


def assert_real_findings(r) -> None:
    assert r.returncode == 1, r.stdout + r.stderr
    assert "NRN201" in r.stdout and "NRN301" in r.stdout, r.stdout + r.stderr
    assert "internal error" not in r.stdout + r.stderr and "Traceback" not in r.stderr


# A CLI run that reports its own peak memory, with an address-space cap so that a regression
# cannot take the machine down while the test watches it fail.
_MEASURED = textwrap.dedent(
    """
    import resource, runpy, sys
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    sys.argv = ["neuron-lint", *sys.argv[1:]]
    try:
        runpy.run_module("neuron_lint", run_name="__main__", alter_sys=True)
    finally:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        sys.stderr.write("\\nPEAK_RSS_BYTES %d\\n" % (peak if sys.platform == "darwin" else peak * 1024))
    """
)


def measured_check(proj: Path, env: dict, timeout: float = 60):
    full_env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", **env}
    r = subprocess.run(
        [sys.executable, "-c", _MEASURED, "check", "-j", "1", "src"],
        cwd=proj, env=full_env, capture_output=True, text=True, timeout=timeout, check=False,
    )
    peak = int(r.stderr.rsplit("PEAK_RSS_BYTES", 1)[1].split()[0])
    return r, peak


# ------------------------------------------------------------------ 1. entries that hang or are huge
@posix_only
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fifo", "link_to_dev_zero", "sparse_1gb"])
def test_hostile_entry_neither_hangs_nor_takes_memory(proj, user_env, kind):
    first = measured_check(proj, user_env)  # fills the cache: now every entry's name is known
    assert_real_findings(first[0])
    planted = entries(proj)
    assert planted
    for entry in planted:
        entry.unlink()
        if kind == "fifo":
            os.mkfifo(entry)
        elif kind == "link_to_dev_zero":
            entry.symlink_to("/dev/zero")
        else:
            with open(entry, "wb") as fh:
                fh.truncate(1 << 30)
    r, peak = measured_check(proj, user_env)  # TimeoutExpired: it hung on the entry
    assert_real_findings(r)
    assert peak < 512 << 20, f"the run took {peak >> 20} MiB"
    print(f"peak {peak >> 20} MiB (first run {first[1] >> 20} MiB)")


# ------------------------------------------------------------------ 2. well-formed, wrong types
def _finding_dict(f) -> dict:
    return {"@": "Finding", **{x.name: getattr(f, x.name) for x in dataclasses.fields(f)}}


POISONS = {
    "line is a string": lambda r: CheckResult([dataclasses.replace(f, line=str(f.line)) for f in r.findings], r.errors, 1),
    "fix is a string": lambda r: CheckResult([dataclasses.replace(f, fix="safe") for f in r.findings], r.errors, 1),
    "a list where a finding should be": lambda r: CheckResult([[f.path, f.line, f.code] for f in r.findings], r.errors, 1),
    "findings is an object": lambda r: {"@": "CheckResult", "findings": {"a": 1}, "files_checked": 1},
    "files_checked is a bool": lambda r: dataclasses.replace(r, files_checked=True),
    "unknown keyword field": lambda r: CheckResult([{**_finding_dict(f), "severity": 9} for f in r.findings], r.errors, 1),
    "finding missing fields": lambda r: CheckResult([{"@": "Finding", "path": f.path} for f in r.findings], r.errors, 1),
}


@pytest.mark.parametrize("poison", list(POISONS))
def test_entries_with_wrong_field_types_are_misses(proj, user_env, monkeypatch, poison):
    monkeypatch.chdir(proj)
    monkeypatch.setenv("XDG_CACHE_HOME", user_env["XDG_CACHE_HOME"])
    settings = Settings()
    expected = check_paths(["src"], settings, jobs=1)
    assert expected.findings

    class Poisoning(Cache):  # stores, through the cache's own writer, a result of the wrong shape
        def put(self, key, result, lookups=()):
            super().put(key, POISONS[poison](result), lookups)

    check_paths(["src"], settings, jobs=1, cache=Poisoning(Path(CACHE_DIR_NAME), settings))
    assert len(entries(proj)) == 2  # the poisoned entries are there
    cache = Cache(Path(CACHE_DIR_NAME), settings)
    result = check_paths(["src"], settings, jobs=1, cache=cache)  # raised: "internal error"
    assert [f.to_dict() for f in result.findings] == [f.to_dict() for f in expected.findings]
    assert result.files_checked == expected.files_checked and cache.hits == 0


# ------------------------------------------------------------------ 3. links in the cache folder
@posix_only
@pytest.mark.parametrize("where", ["cache folder", "every shard folder"])
def test_cache_folders_that_are_links_are_not_written_through(cli, proj, outside, user_env, where):
    cache_dir = proj / CACHE_DIR_NAME
    if where == "cache folder":
        cache_dir.symlink_to(outside, target_is_directory=True)
    else:
        cache_dir.mkdir()
        (cache_dir / ".gitignore").write_text("*\n")
        for i in range(256):
            (outside / f"{i:02x}").mkdir()
            (cache_dir / f"{i:02x}").symlink_to(outside / f"{i:02x}", target_is_directory=True)
    for _ in range(2):
        assert_real_findings(cli("check", "src", cwd=proj, env=user_env))
    assert [p for p in everything_under(outside) if not p.is_dir()] == []


# ------------------------------------------------------------------ 4. forged entries
@pytest.mark.parametrize("made_by", ["the attacker's own run", "this user's earlier run"])
def test_forged_entry_cannot_hide_findings(cli, proj, tmp_path, user_env, made_by):
    """A repository commits entries saying "no findings" for its files (CI on an untrusted branch)."""
    maker_env = {"XDG_CACHE_HOME": str(tmp_path / "attacker-cache")} if made_by.startswith("the attacker") else user_env
    assert_real_findings(cli("check", "src", cwd=proj, env=maker_env))
    assert entries(proj)
    # the attacker can authenticate with their own key, never with the victim's (outside the project)
    maker_key = Path(maker_env["XDG_CACHE_HOME"]) / "neuron-lint" / "key" if maker_env is not user_env else None
    for entry in entries(proj):  # keep everything, empty the findings
        raw = entry.read_bytes()
        start = raw.index(b"{")
        doc = json.loads(raw[start:])
        doc["result"]["findings"] = []
        payload = json.dumps(doc, separators=(",", ":")).encode()
        seal = raw[:start]
        if seal and maker_key is not None and maker_key.is_file():  # as the attacker's own neuron-lint would
            seal = cache_mod._mac(maker_key.read_bytes(), entry.parent.name + entry.stem, payload) + b"\n"
        entry.write_bytes(seal + payload)
    r = cli("check", "src", cwd=proj, env=user_env)
    assert_real_findings(r)
    assert "No findings" not in r.stdout + r.stderr


# ------------------------------------------------------------------ the key lives outside the project
@posix_only
def test_key_lives_outside_the_project_and_without_one_there_is_no_cache(cli, proj, tmp_path, user_env):
    assert_real_findings(cli("check", "src", cwd=proj, env=user_env))
    key = Path(user_env["XDG_CACHE_HOME"]) / "neuron-lint" / "key"
    assert key.is_file() and key.stat().st_mode & 0o777 == 0o600 and len(key.read_bytes()) == 32
    assert entries(proj)

    shutil.rmtree(proj / CACHE_DIR_NAME)
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("the user's cache directory cannot be made here\n")
    r = cli("check", "src", cwd=proj, env={"XDG_CACHE_HOME": str(blocked)})
    assert_real_findings(r)
    assert not (proj / CACHE_DIR_NAME).exists()  # no key: no cache, and the run goes on


# ------------------------------------------------------------------ 5. writes never follow a link
@posix_only
def test_gitignore_link_is_not_written_through(cli, proj, outside, user_env):
    cache_dir = proj / CACHE_DIR_NAME
    cache_dir.mkdir()
    (cache_dir / ".gitignore").symlink_to(outside / "planted")  # dangling: "it does not exist"
    assert_real_findings(cli("check", "src", cwd=proj, env=user_env))
    assert not (outside / "planted").exists() and everything_under(outside) == []
